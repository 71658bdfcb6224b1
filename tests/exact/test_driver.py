"""RandSVM driver: optimality against full LIBSVM, uniform draws, layout independence."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from randsvm_dist.data import make_arrays
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.bounds import support_bound
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan.dispatch import merged_scan
from randsvm_dist.exact.scan.partition import ProblemRequest, ScanModel, scan_partition
from randsvm_dist.numerics.kernels import Kernel, decision_values


def full_libsvm_decision(X, y, C, gamma, X_eval):
    """Decision values of stock LIBSVM trained on all rows (oriented to +1)."""
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    Xc = sp.csr_matrix(X, dtype=np.float64)
    model = svm_train(svm_problem(y.astype(float), Xc),
                      svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -e 0.0001 -q"))
    idx = np.asarray(model.get_sv_indices()) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()])
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    f = decision_values(X_eval if not sp.issparse(X_eval) else X_eval, X[idx], coef,
                        -model.rho[0], Kernel("rbf", gamma))
    return sign * f, len(idx)


@pytest.fixture(scope="module")
def checkerboard():
    X, y = make_arrays("checkerboard", 3000, seed=3)
    return X, y


def test_runs_to_zero_violators_and_matches_full_libsvm(dask_client, checkerboard):
    X, y = checkerboard
    est = RandSVMClassifier(C=10, gamma=1.0, k=5000, sample_size=800, tol=1e-4,
                            random_state=1, client=dask_client).fit(X, y)
    assert est.optimal_ and est.stop_reasons_ == ["optimal"]
    assert est.history_[-1]["n_violators"] == 0
    f_full, n_sv_full = full_libsvm_decision(X, y, 10, 1.0, X)
    f = est.decision_function(X)
    assert np.max(np.abs(f - f_full)) < 5e-3
    assert abs(len(est.support_) - n_sv_full) <= 0.02 * n_sv_full
    # The dual objective never decreases, and the primal (on all rows) bounds it above.
    duals = [h["dual_objective"] for h in est.history_]
    assert all(b >= a - 1e-6 * abs(a) for a, b in zip(duals, duals[1:]))
    last = est.history_[-1]
    assert last["primal_objective"] >= last["dual_objective"] - 1e-6 * abs(last["dual_objective"])
    assert (last["primal_objective"] - last["dual_objective"]) < 1e-3 * last["primal_objective"]


def test_sparse_input_matches_full_libsvm(dask_client, test_data):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(test_data / "a9a_train_3000.svm.gz"),
                              n_features=123)
    X = sp.csr_matrix(X[:2000], dtype=np.float32)
    y = y[:2000]
    est = RandSVMClassifier(C=1.0, gamma=0.05, k=None, sample_size=1500, tol=1e-4,
                            random_state=0, client=dask_client).fit(X, y)
    assert est.optimal_
    assert sp.issparse(est.support_vectors_)
    f_full, _ = full_libsvm_decision(X, y, 1.0, 0.05, X)
    assert np.max(np.abs(est.decision_function(X) - f_full)) < 5e-3


def test_same_random_state_same_model_whatever_the_layout(checkerboard):
    from distributed import Client, LocalCluster

    X, y = checkerboard
    kw = dict(C=10, gamma=1.0, k=400, sample_size=500, max_iter=4, random_state=7)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as c1, \
            Client(c1) as client:
        a = RandSVMClassifier(**kw, client=client, n_partitions=1).fit(X, y)
        b = RandSVMClassifier(**kw, client=client, n_partitions=9).fit(X, y)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as c2, \
            Client(c2) as client:
        c = RandSVMClassifier(**kw, client=client, n_partitions=4).fit(X, y)
    for other in (b, c):
        np.testing.assert_array_equal(a.support_, other.support_)
        np.testing.assert_array_equal(a.dual_coef_, other.dual_coef_)
        assert [h["n_violators"] for h in a.history_] == \
            [h["n_violators"] for h in other.history_]
    d = RandSVMClassifier(**{**kw, "random_state": 8}, client=None)
    assert d.random_state != a.random_state


def test_violator_draw_is_uniform_across_unequal_partitions():
    sizes = [7, 300, 5000, 40]
    parts, offset = [], 0
    for s in sizes:
        parts.append(Partition(np.zeros((s, 1), np.float32), np.zeros(s, np.int32), offset))
        offset += s
    n, m, trials = offset, 50, 400
    hits = np.zeros(n)
    model = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))
    for t in range(trials):
        req = [ProblemRequest(CSVC(1), np.empty(0, np.int64), m, stream_id(123, t))]
        per_part = [scan_partition(p, model, req).problems for p in parts]
        draw = merged_scan(per_part, 0, m)["draw"]
        assert len(draw) == m == len(np.unique(draw))
        hits[draw] += 1
    # per partition: observed draws vs m * size / n (chi-square)
    bounds = np.cumsum([0, *sizes])
    observed = np.array([hits[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])])
    expected = trials * m * np.asarray(sizes) / n
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # per row: inclusion counts are Binomial(trials, m/n): dispersion test
    e = trials * m / n
    assert abs(hits.mean() - e) < 1e-9
    dispersion = ((hits - e) ** 2 / (e * (1 - m / n))).sum()
    p = stats.chi2(n - 1).sf(dispersion)
    assert 1e-3 < p < 1 - 1e-3


def test_violators_exclude_the_working_set():
    X = np.zeros((10, 1), np.float32)
    part = Partition(X, np.array([1] * 5 + [0] * 5, np.int32), 100)
    model = ScanModel(Kernel("linear"), np.zeros((1, 1), np.float32),
                      np.zeros((1, 1), np.float32), np.zeros(1))
    req = [ProblemRequest(CSVC(1), np.array([101, 107]), 100, 1)]
    out = scan_partition(part, model, req).problems[0]
    assert out.n_violators == 8  # f = 0 everywhere: every row violates, minus 2 excluded
    assert set(out.rows) == set(range(100, 110)) - {101, 107}


def test_paper_support_bound():
    # k = 32 log(4n/delta)/eps^2 (non-separable), 16 (separable); eps=0.2, delta=0.9
    assert support_bound(10**6) == int(np.ceil(32 * np.log(4e6 / 0.9) / 0.04))
    assert support_bound(10**6, separable=True) == int(np.ceil(16 * np.log(4e6 / 0.9) / 0.04))
    assert support_bound(10**5) < support_bound(10**6)


def test_multiclass_one_vs_rest_shares_scans(dask_client):
    X, y = make_arrays("waveform", 1500, seed=2)
    Xt, yt = make_arrays("waveform", 1500, seed=5)
    est = RandSVMClassifier(C=1.0, gamma="scale", k=3000, sample_size=500, max_iter=8,
                            random_state=0, client=dask_client, multi_class="ovr").fit(X, y)
    assert est.dual_coef_.shape == (3, len(est.support_))
    assert est.decision_function(Xt).shape == (1500, 3)
    assert set(est.predict(Xt)) <= set(est.classes_)
    assert est.score(Xt, yt) > 0.80
    assert sorted({h["problem"] for h in est.history_}) == [0, 1, 2]


@pytest.mark.parametrize("kernel, extra", [("linear", ""), ("poly", "-d 2 -r 1"),
                                           ("sigmoid", "-r 0")])
def test_other_kernels_reach_libsvm_optimum(dask_client, kernel, extra):
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    from randsvm_dist.numerics.kernels import LIBSVM_KERNEL_TYPE

    X, y = make_arrays("twonorm", 1500, seed=4)
    X = X / 4.0
    degree, coef0 = (2, 1.0) if kernel == "poly" else (3, 0.0)
    est = RandSVMClassifier(kernel=kernel, C=0.5, gamma=0.1, degree=degree, coef0=coef0,
                            k=5000, sample_size=600, tol=1e-4, random_state=0,
                            client=dask_client).fit(X, y)
    assert est.optimal_
    model = svm_train(svm_problem(y.astype(float), sp.csr_matrix(X, dtype=np.float64)),
                      svm_parameter(f"-s 0 -t {LIBSVM_KERNEL_TYPE[kernel]} -c 0.5 -g 0.1 "
                                    f"{extra} -e 0.0001 -q"))
    idx = np.asarray(model.get_sv_indices()) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()])
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    f_full = sign * decision_values(X, X[idx], coef, -model.rho[0], est.kernel_)
    assert np.max(np.abs(est.decision_function(X) - f_full)) < 1e-2


def test_class_weight_shifts_the_boundary(dask_client):
    X, y = make_arrays("gauss", 1500, seed=6)
    kw = dict(C=1.0, gamma=0.5, k=5000, sample_size=800, max_iter=10, random_state=0,
              client=dask_client)
    plain = RandSVMClassifier(**kw).fit(X, y)
    heavy = RandSVMClassifier(**kw, class_weight={1: 5.0}).fit(X, y)
    assert (heavy.predict(X) == 1).sum() > (plain.predict(X) == 1).sum()
    assert np.abs(heavy.dual_coef_[heavy.dual_coef_ > 0]).max() <= 5.0 + 1e-9
    balanced = RandSVMClassifier(**kw, class_weight="balanced").fit(X, y)
    assert balanced.n_iter_ >= 1


def test_auto_sample_size_is_an_eighth_of_the_rows_between_the_floor_and_twice_k():
    from randsvm_dist.exact.route import AUTO_FLOOR, auto_sample_size

    k = support_bound(50_000)
    assert auto_sample_size(50_000, k) == 50_000 // 8          # ijcnn1-sized: samples
    assert auto_sample_size(10_000, support_bound(10_000)) == AUTO_FLOOR
    assert auto_sample_size(10**6, support_bound(10**6)) == 2 * support_bound(10**6)


def test_every_kind_fulfils_the_problem_kind_contract():
    from randsvm_dist.exact.kinds import KINDS, EpsilonSVR, OneClass, ProblemKind

    kinds = [CSVC(1), CSVC(0, 1), EpsilonSVR(0.2), OneClass(0.3)]
    assert {type(k) for k in kinds} == set(KINDS.values())
    assert all(isinstance(k, ProblemKind) for k in kinds)
    # every kind's re-solves start warm (solvers.warm_smo.solve); one-class is never cut in parts
    assert [k.warm_startable for k in kinds] == [True, True, True, True]
    np.testing.assert_array_equal(CSVC(1).warm_alphas(np.array([-0.5, 2.0])), [0.5, 2.0])
    np.testing.assert_array_equal(EpsilonSVR(0.2).warm_alphas(np.array([-0.5, 2.0])),
                                  [-0.5, 2.0])
    assert [k.cascadable for k in kinds] == [True, True, True, False]
    # one-class alone draws its first working set by a pilot and keeps its working sets' rows
    assert [k.pilot for k in kinds] == [k.keeps_rows for k in kinds] == [False] * 3 + [True]


def test_history_records_are_the_iteration_record_schema(dask_client, checkerboard):
    from dataclasses import fields

    from randsvm_dist.exact.history import IterationRecord

    X, y = checkerboard
    est = RandSVMClassifier(C=1.0, gamma=1.0, sample_size=500, route="sample", max_iter=2,
                            gap_tol=0, random_state=0, client=dask_client).fit(X, y)
    names = [f.name for f in fields(IterationRecord)]
    assert [list(h) for h in est.history_] == [names] * len(est.history_)
    assert [h["iteration"] for h in est.history_] == [1, 2]


def test_a_cancel_check_stops_the_fit_between_steps(dask_client, checkerboard):
    from randsvm_dist.exact.cancellation import cancel_check, cancel_when
    from randsvm_dist.exceptions import FitCancelled

    X, y = checkerboard
    steps = []

    def cancelled() -> bool:  # False at the first draw, the first solves and scan
        steps.append(1)
        return len(steps) > 3

    est = RandSVMClassifier(C=1.0, gamma=1.0, sample_size=500, route="sample", max_iter=5,
                            gap_tol=0, random_state=0, client=dask_client)
    with cancel_when(cancelled), pytest.raises(FitCancelled, match="draw of iteration 1"):
        est.fit(X, y)
    assert len(steps) == 4
    assert cancel_check() is None  # the check ends with its block
    with cancel_when(lambda: True), pytest.raises(FitCancelled, match="the first draw"):
        est.fit(X, y)
    assert est.fit(X, y).n_iter_ == 5  # no check: the fit runs to its stop
