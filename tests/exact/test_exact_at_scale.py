"""Exact at scale: certified defaults, the certificate checked independently, every route
(sampled, direct, cascade, seeded, re-read from Parquet) reaching full LIBSVM's optimum."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier

C, GAMMA = 1.0, 0.05


def libsvm_full(X, y, C, gamma):
    """Stock LIBSVM on all rows, tight tol: (support vectors, y*alpha, intercept) oriented +1."""
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    model = svm_train(svm_problem(y.astype(float), sp.csr_matrix(X, dtype=np.float64)),
                      svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -e 1e-5 -q"))
    idx = np.asarray(model.get_sv_indices()) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()])
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    return X[idx], sign * coef, -sign * model.rho[0]


def objectives(sv, coef, b, X, y, C, gamma):
    """(primal over all rows, dual) of a binary RBF model, in float64 numpy, independent of
    the package's kernels: P = 1/2 |w|^2 + C sum hinge, D = sum alpha - 1/2 |w|^2."""
    sv64, X64 = np.asarray(sv, np.float64), np.asarray(X, np.float64)
    wKw = coef @ rbf_kernel(sv64, sv64, gamma=gamma) @ coef
    f = rbf_kernel(X64, sv64, gamma=gamma) @ coef + b
    yy = np.where(y == 1, 1.0, -1.0)
    return 0.5 * wKw + C * np.maximum(0.0, 1 - yy * f).sum(), np.abs(coef).sum() - 0.5 * wKw


def f64(est, X):
    """The fitted binary model's decision values in float64 numpy."""
    sv = np.asarray(est.support_vectors_.toarray() if sp.issparse(est.support_vectors_)
                    else est.support_vectors_, np.float64)
    return rbf_kernel(np.asarray(X, np.float64), sv, gamma=est.gamma_) @ est.dual_coef_[0] \
        + est.intercept_[0]


@pytest.fixture(scope="module")
def ringnorm():
    X, y = make_arrays("ringnorm", 4000, seed=5)
    sv, coef, b = libsvm_full(X, y, C, GAMMA)
    p_opt, _ = objectives(sv, coef, b, X, y, C, GAMMA)
    f_opt = rbf_kernel(X.astype(np.float64), sv.astype(np.float64), gamma=GAMMA) @ coef + b
    return X, y, p_opt, f_opt


def fit(client, X, y=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a certified fit never warns
        return RandSVMClassifier(C=C, gamma=GAMMA, random_state=0, client=client,
                                 **kw).fit(X, y)


def assert_certified_optimum(est, X, y, p_opt, f_opt, gap_tol=1e-3):
    """The fit's own certificate, re-derived in numpy, and its distance to LIBSVM's optimum."""
    assert est.certified_ and est.relative_gap_ <= gap_tol
    sv = est.support_vectors_
    P, D = objectives(sv.toarray() if sp.issparse(sv) else sv, est.dual_coef_[0],
                      est.intercept_[0], X, y, C, est.gamma_)
    assert D <= p_opt * (1 + 1e-6) <= P * (1 + 1e-6)  # weak duality around the optimum
    assert (P - D) / P <= gap_tol * 1.05 + 1e-5       # the certificate holds in float64
    assert (P - p_opt) / p_opt <= gap_tol * 1.05 + 1e-5
    # close to the optimum in objective means close in decision values and predictions
    f = f64(est, X)
    assert np.mean(np.sign(f) == np.sign(f_opt)) > 0.995
    assert np.median(np.abs(f - f_opt)) < 0.05


def test_default_fit_is_certified_and_at_libsvms_optimum(dask_client, ringnorm):
    X, y, p_opt, f_opt = ringnorm
    est = fit(dask_client, X, y, route="sample", sample_size=600)
    assert est.k_ is None and est.gap_tol == 1e-3           # the defaults
    assert est.n_iter_ >= 2                                 # sampled, not one solve
    assert {h["route"] for h in est.history_} == {"sample"}
    assert_certified_optimum(est, X, y, p_opt, f_opt)
    last = est.history_[-1]
    assert last["relative_gap"] == est.relative_gap_
    for key in ("solve_seconds", "scan_seconds", "kernel_evals", "kernel_evals_per_second",
                "kernel_evals_per_core_second", "tol"):
        assert key in last
    assert last["kernel_evals"] == last["rows_evaluated"] * last["n_support"]


def test_small_data_is_solved_directly_and_equals_libsvm(dask_client, ringnorm):
    X, y, p_opt, f_opt = ringnorm
    est = fit(dask_client, X, y)
    assert est.history_[0]["route"] == "direct" and est.n_iter_ == 1
    assert_certified_optimum(est, X, y, p_opt, f_opt)
    np.testing.assert_allclose(f64(est, X), f_opt, atol=2e-3)  # LIBSVM tol 1e-3 vs 1e-5


def test_a_stop_without_certificate_warns_with_the_gap(dask_client, ringnorm):
    X, y, _, _ = ringnorm
    with pytest.warns(ConvergenceWarning, match=r"relative primal-dual gap of [0-9.e-]+"):
        est = RandSVMClassifier(C=C, gamma=GAMMA, route="sample", sample_size=300,
                                max_iter=1, random_state=0, client=dask_client).fit(X, y)
    assert not est.certified_ and est.relative_gap_ > 1e-3
    assert est.stop_reasons_ == ["max_iter"]
    with pytest.warns(ConvergenceWarning, match="k_reached"):
        RandSVMClassifier(C=C, gamma=GAMMA, route="sample", sample_size=300, k=50,
                          random_state=0, client=dask_client).fit(X, y)


def test_cascade_solves_reach_the_same_optimum(dask_client, ringnorm, monkeypatch):
    from randsvm_dist.exact import solve_plan, solving

    X, y, p_opt, f_opt = ringnorm
    plans = []

    def two_parts(n_rows, n_fresh, n_parts):
        plans.append(n_rows)
        return 2

    monkeypatch.setattr(solving, "plan_cascade", two_parts)
    # the cost model would solve these small working sets whole: every cold one cascades
    monkeypatch.setattr(solve_plan, "CUT_PLAN_MAX_SHARE", float("inf"))
    monkeypatch.setattr(solve_plan, "DIVIDE_MIN_PART_ROWS", float("inf"))
    est = fit(dask_client, X, y, route="sample", sample_size=1500)
    assert plans and all(h["cascade_parts"] == 2 for h in est.history_)
    assert_certified_optimum(est, X, y, p_opt, f_opt)


@pytest.mark.parametrize("seed", ["bsgd", "fitted"])
def test_a_seed_changes_the_path_not_the_optimum(dask_client, ringnorm, seed, tmp_path):
    X, y, p_opt, f_opt = ringnorm
    data = tmp_path / "ringnorm"
    write_arrays(X, y.astype(np.int64), data, partitions=4)
    if seed == "fitted":  # retrain with another C, starting from the first model's SVs
        seed = RandSVMClassifier(C=4 * C, gamma=GAMMA, random_state=0,
                                 client=dask_client).fit(str(data))
    est = fit(dask_client, str(data), route="sample", sample_size=600, seed=seed)
    first = est.history_[0]
    assert first["seed_rows"] > 0 and first["seed"] == est.seed_info_["seed"]
    assert first["sample_size"] > 600  # seed rows joined the uniform sample
    assert_certified_optimum(est, X, y, p_opt, f_opt)


def test_label_sorted_rows_give_the_shuffled_optimum(dask_client, ringnorm):
    X, y, p_opt, f_opt = ringnorm
    order = np.argsort(y, kind="stable")
    est = fit(dask_client, X[order], y[order], route="sample", sample_size=600,
              n_partitions=4)
    # every partition holds one class only; the optimum is the same set of rows
    sv, coef, b = est.support_vectors_, est.dual_coef_[0], est.intercept_[0]
    P, _ = objectives(sv, coef, b, X, y, C, est.gamma_)
    assert (P - p_opt) / p_opt <= 1.05e-3
    assert np.mean(np.sign(f64(est, X)) == np.sign(f_opt)) > 0.995


def test_re_reading_partitions_gives_the_cached_model(dask_client, ringnorm, tmp_path):
    X, y, _, _ = ringnorm
    data = tmp_path / "ringnorm"
    write_arrays(X, y.astype(np.int64), data, partitions=5)
    kw = dict(route="sample", sample_size=600)
    cached = fit(dask_client, str(data), cache=True, **kw)
    reread = fit(dask_client, str(data), cache=False, **kw)
    np.testing.assert_array_equal(cached.support_, reread.support_)
    np.testing.assert_array_equal(cached.dual_coef_, reread.dual_coef_)
    assert cached.n_iter_ == reread.n_iter_


def test_a_stalled_gap_goes_on_to_the_certificate(dask_client, ringnorm):
    """With a loose violator slack no row violates, yet rows just inside the margin keep
    the gap open: the driver goes on (LIBSVM's tol tightened to what the gap needs; the
    slack narrowed when that is not enough) instead of stopping uncertified."""
    X, y, p_opt, f_opt = ringnorm
    est = fit(dask_client, X, y, route="sample", sample_size=600, tol=0.3, gap_tol=1e-3)
    slack = [h["margin_tol"] for h in est.history_]
    last = est.history_[-1]["iteration"]
    stalled = [h["iteration"] for h in est.history_
               if h["n_violators"] == 0 and h["iteration"] < last]
    assert stalled and slack[0] == 0.3               # a zero-violator scan went on
    assert all(b <= a for a, b in zip(slack, slack[1:]))  # the slack never widens
    assert est.history_[-1]["tol"] < 0.3             # and LIBSVM's tol was tightened
    assert_certified_optimum(est, X, y, p_opt, f_opt)


def test_warm_started_re_solves_reach_the_same_optimum(dask_client, ringnorm, monkeypatch):
    from randsvm_dist.exact import solving

    X, y, p_opt, f_opt = ringnorm
    monkeypatch.setattr(solving, "WARM_MAX_FRESH_SHARE", 1.0)  # every re-solve warm
    est = fit(dask_client, X, y, route="sample", sample_size=600)
    warm = [h["warm_start"] for h in est.history_]
    assert warm[0] is False and all(warm[1:]) and len(warm) >= 2
    speedups = [h["warm_speedup_estimate"] for h in est.history_]
    assert speedups[0] is None and all(s > 0 for s in speedups[1:])
    assert_certified_optimum(est, X, y, p_opt, f_opt)


def test_memory_limited_workers_re_read_and_match_the_unlimited_fit(dask_client, ringnorm,
                                                                    tmp_path, caplog):
    """Workers whose memory limit is below the data's size: cache='auto' re-reads the
    partitions from Parquet every pass, and the model is the unlimited, cached fit's.

    The limit is declared to the scheduler but not enforced (an in-process cluster whose
    pause/terminate thresholds are off, or the test process itself would be paused); the
    enforced limit runs in benchmarks/bench_randsvm.py (--memory-limit, 1e7 rows).
    """
    import logging

    import dask
    from distributed import Client, LocalCluster

    X, y, _, _ = ringnorm
    data = tmp_path / "ringnorm"
    write_arrays(X, y.astype(np.int64), data, partitions=5)
    kw = dict(route="sample", sample_size=600)
    unlimited = fit(dask_client, str(data), cache=True, **kw)
    data_bytes = 4 * (X.shape[1] + 1) * len(y)
    off = {f"distributed.worker.memory.{k}": False
           for k in ("target", "spill", "pause", "terminate")}
    with dask.config.set(off), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                         memory_limit=data_bytes // 2, dashboard_address=None) as lc, \
            Client(lc, set_as_default=False) as client, \
            caplog.at_level(logging.INFO, logger="randsvm_dist"):
        limited = fit(client, str(data), **kw)
    assert "re-read each pass" in caplog.text
    np.testing.assert_array_equal(limited.support_, unlimited.support_)
    # the same path to the last bit but for rounding: the warm start's float64 products are
    # OpenBLAS's, whose bytes depend on its thread count, and that count is process-wide in
    # this in-process cluster (the driver's thread shares it), not in the process workers
    np.testing.assert_allclose(limited.dual_coef_, unlimited.dual_coef_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(limited.intercept_, unlimited.intercept_)
    assert limited.certified_ and limited.n_iter_ == unlimited.n_iter_
