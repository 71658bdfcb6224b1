"""oneDAL (scikit-learn-intelex) as a solver backend: LIBSVM's optimum, same certificate.

Tests that solve with oneDAL are skipped with the reason when scikit-learn-intelex is not
installed (it is in the ``dev`` extra, so CI runs them); the ParameterError for
solver='onedal' without it runs everywhere (the import is monkeypatched away).
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.exact.solving import solve_rows
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import Kernel, decision_values_float64
from randsvm_dist.solvers import onedal_backend
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.onedal_auto import prefer_onedal
from randsvm_dist.solvers.onedal_backend import (
    check_backend,
    onedal_available,
    solve_onedal,
)
from randsvm_dist.solvers.params import SolverParams

needs_onedal = pytest.mark.skipif(not onedal_available(),
                                  reason="scikit-learn-intelex not installed")


def _checkerboard(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2)).astype(np.float32)
    y = np.where((np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2 == 0, 1.0, -1.0)
    return X, y


def _gaussian(n: int, d: int = 6, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.5 * rng.normal(size=n) > 0.4, 1.0, -1.0)
    return X, y


def _kkt_gap(X, y, sol, box: np.ndarray, kernel: Kernel) -> float:
    """LIBSVM's stopping measure for C-SVC, max_{I_up} -y G - min_{I_low} -y G (float64)."""
    alpha = np.zeros(len(y))
    alpha[sol.support] = np.abs(sol.dual_coef)
    f0 = decision_values_float64(X, X[sol.support], sol.dual_coef, 0.0, kernel)
    g = y - f0
    at_c, at_0 = alpha >= box * (1 - 1e-9), alpha <= 0
    up = ((y > 0) & ~at_c) | ((y < 0) & ~at_0)
    low = ((y > 0) & ~at_0) | ((y < 0) & ~at_c)
    return float(g[up].max() - g[low].min())


def _same_optimum(X, ref, sol, kernel: Kernel, dual_rtol: float = 1e-5, f_atol: float = 2e-2):
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=dual_rtol)
    assert np.all(np.diff(sol.support) > 0)
    f_ref = decision_values_float64(X, X[ref.support], ref.dual_coef, ref.intercept, kernel)
    f = decision_values_float64(X, X[sol.support], sol.dual_coef, sol.intercept, kernel)
    assert np.abs(f - f_ref).max() < f_atol
    assert np.mean(np.sign(f) == np.sign(f_ref)) > 0.995


@needs_onedal
@pytest.mark.parametrize("case", ["plain", "class_weights", "row_boxes"])
def test_csvc_reaches_libsvm_optimum(case):
    X, y = _gaussian(1200)
    kernel = Kernel("rbf", 0.2)
    params = SolverParams(C=2.0, kernel=kernel, tol=1e-3)
    box = None
    if case == "class_weights":
        params = replace(params, weight_pos=3.0, weight_neg=0.5)
    if case == "row_boxes":
        box = 2.0 * np.random.default_rng(3).uniform(0.0, 2.0, len(y))
        box[:20] = 0.0  # dropped rows, as LIBSVM's remove_zero_weight
    ref = solve_rows(X, y, box, params, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no refused/fallen-back solve
        sol = solve_rows(X, y, box, replace(params, backend="onedal"), 1)
    _same_optimum(X, ref, sol, kernel)
    rows_box = (box if box is not None else
                np.where(y > 0, params.C * params.weight_pos, params.C * params.weight_neg))
    kept = rows_box > 0
    if box is not None:
        assert not np.isin(np.flatnonzero(~kept), sol.support).any()
    # a float32 solve's coefficients at the box are on it, never beyond
    assert np.all(np.abs(sol.dual_coef) <= rows_box[sol.support])
    assert np.sum(np.abs(sol.dual_coef) == rows_box[sol.support]) > 10
    assert _kkt_gap(X[kept], y[kept], _on(sol, kept), rows_box[kept], kernel) <= params.tol


def _on(sol, kept: np.ndarray):
    """A solution re-indexed to the kept rows."""
    where = np.cumsum(kept) - 1
    return replace(sol, support=where[sol.support])


@needs_onedal
@pytest.mark.parametrize("tol", [1e-4, 1e-5])
def test_tightened_tol_meets_libsvm_kkt_condition(tol):
    """The driver tightens tol (below FLOAT32_MIN_TOL: float64); oneDAL's duals satisfy
    LIBSVM's -e condition at it."""
    X, y = _checkerboard(1500)
    kernel = Kernel("rbf", 1.0)
    params = SolverParams(C=100.0, kernel=kernel, tol=tol, backend="onedal")
    sol = solve_onedal(X, y, params, None, 1)
    assert _kkt_gap(X, y, sol, np.full(len(y), 100.0), kernel) <= tol
    ref = solve_libsvm(X, y, replace(params, backend="libsvm"), 1)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-5)


@needs_onedal
def test_sparse_rows_reach_libsvm_optimum():
    X = sp.random(700, 300, density=0.03, random_state=2, format="csr", dtype=np.float32)
    s = np.asarray(X[:, :30].sum(axis=1)).ravel()
    y = np.where(s > np.median(s), 1.0, -1.0)
    kernel = Kernel("rbf", 0.5)
    params = SolverParams(C=1.0, kernel=kernel)
    ref = solve_libsvm(X, y, params, 1)
    sol = solve_rows(X, y, None, replace(params, backend="onedal"), 1)
    _same_optimum(X, ref, sol, kernel)


@needs_onedal
@pytest.mark.parametrize("weighted", [False, True])
def test_svr_reaches_libsvm_optimum(weighted):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(900, 4)).astype(np.float32)
    t = 2 * X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=900)
    kernel = Kernel("rbf", 0.3)
    params = SolverParams(C=3.0, kernel=kernel, svm_type=3, epsilon=0.1)
    box = rng.uniform(0.5, 3.0, 900) if weighted else None
    ref = solve_rows(X, t, box, params, 1)
    sol = solve_rows(X, t, box, replace(params, backend="onedal"), 1)
    _same_optimum(X, ref, sol, kernel, f_atol=5e-3)


@needs_onedal
@pytest.mark.parametrize("params", [
    SolverParams(kernel=Kernel("rbf", 0.5), svm_type=2, nu=0.2),  # no oneDAL one-class
    SolverParams(C=1.0, kernel=Kernel("sigmoid", 0.1, 3, 0.0)),  # not PSD: LIBSVM's point
])
def test_what_onedal_does_not_solve_goes_to_libsvm(params):
    X, y = _gaussian(400)
    ref = solve_rows(X, y, None, params, 1)
    sol = solve_rows(X, y, None, replace(params, backend="onedal"), 1)
    np.testing.assert_array_equal(sol.support, ref.support)
    np.testing.assert_array_equal(sol.dual_coef, ref.dual_coef)
    with pytest.raises(ParameterError, match="oneDAL does not solve"):
        solve_onedal(X, y, params)


@needs_onedal
def test_a_fallback_to_scikit_learn_is_refused(monkeypatch):
    """A fit sklearnex does not accelerate is not taken: LIBSVM solves it, with a warning
    naming sklearnex's cause. sklearnex's own dispatch is told that oneDAL cannot take the
    fit, so scikit-learn's SVC really runs."""
    from sklearnex._utils import PatchingConditionsChain
    from sklearnex.svm import SVC

    def refused(self, method_name, *data):
        status = PatchingConditionsChain(f"sklearn.svm.SVC.{method_name}")
        status.and_conditions([(False, "refused by the test")])
        return status

    X, y = _gaussian(300)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.2))
    monkeypatch.setattr(SVC, "_onedal_cpu_supported", refused)
    with pytest.warns(RuntimeWarning, match="oneDAL did not solve.*refused by the test"):
        assert solve_onedal(X, y, replace(params, backend="onedal")) is None
    with pytest.warns(RuntimeWarning):
        sol = solve_rows(X, y, None, replace(params, backend="onedal"), 1)
    ref = solve_libsvm(X, y, params, 1)
    np.testing.assert_array_equal(sol.dual_coef, ref.dual_coef)


@needs_onedal
def test_an_accelerated_fit_is_taken_with_logging_disabled():
    """Whether sklearnex fell back is not read from its log: an application that disabled
    logging (as the command line does after a lost scheduler) still gets oneDAL's solve."""
    X, y = _gaussian(300)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.2), backend="onedal")
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            assert solve_onedal(X, y, params) is not None
    finally:
        logging.disable(logging.NOTSET)


@needs_onedal
def test_threads_are_bounded_and_put_back():
    import daal4py

    before = daal4py.num_threads()
    seen = []
    real = daal4py.daalinit

    def spy(n):
        seen.append(n)
        real(n)

    X, y = _gaussian(300)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.2), backend="onedal")
    try:
        daal4py.daalinit = spy
        solve_onedal(X, y, params, None, 1)
    finally:
        daal4py.daalinit = real
    assert daal4py.num_threads() == before
    assert before == 1 or seen[0] == 1


def test_auto_rule():
    X, y = _gaussian(2000)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.2), backend="auto")
    assert not prefer_onedal(X, params)  # dense, 6 features: LIBSVM was faster
    assert prefer_onedal(X, params, weighted=True) == onedal_available()  # vs 1-thread SVC
    wide, _ = _gaussian(600, d=60)
    assert prefer_onedal(wide, params) == onedal_available()
    Xs = sp.csr_matrix(X)
    assert prefer_onedal(Xs, params) == onedal_available()
    assert not prefer_onedal(Xs, replace(params, svm_type=2))  # one-class: LIBSVM only
    assert not prefer_onedal(Xs[:100], params)
    assert not prefer_onedal(sp.csr_matrix(X[:, :2]), params)  # 2 non-zeros per row


@needs_onedal
def test_auto_solves_wide_rows_with_onedal(monkeypatch):
    X, y = _gaussian(600, d=60)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 1 / 60), backend="auto")
    called = []
    real = onedal_backend.finish_solution
    monkeypatch.setattr(onedal_backend, "finish_solution",
                        lambda *a, **k: called.append(1) or real(*a, **k))
    sol = solve_rows(X, y, None, params, 1)
    assert called
    ref = solve_libsvm(X, y, params, 1)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-5)


def test_onedal_without_sklearnex_is_a_parameter_error(monkeypatch, dask_client):
    from randsvm_dist import RandSVMClassifier

    monkeypatch.setattr(onedal_backend, "onedal_available", lambda: False)
    with pytest.raises(ParameterError, match=r"pip install .scikit-learn-intelex>=2025.0.") as e:
        check_backend("onedal")
    assert "\n" not in str(e.value)
    check_backend("libsvm")
    check_backend("auto")
    with pytest.raises(ParameterError, match="solver must be one of"):
        check_backend("thunder")
    X, y = _gaussian(200)
    with pytest.raises(ParameterError, match=r"pip install .scikit-learn-intelex>=2025.0."):
        RandSVMClassifier(solver="onedal", client=dask_client).fit(X, y)
    with pytest.raises(ParameterError):
        RandSVMClassifier(solver="thunder", client=dask_client).fit(X, y)


@needs_onedal
def test_classifier_with_onedal_matches_libsvm(dask_client):
    from randsvm_dist import RandSVMClassifier

    X, y = _gaussian(1500)
    common = dict(C=2.0, gamma=0.2, sample_size=400, random_state=0, client=dask_client,
                  route="sample")  # oneDAL in the working-set solves
    ref = RandSVMClassifier(solver="libsvm", **common).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fit = RandSVMClassifier(solver="onedal", **common).fit(X, y)
    assert fit.certified_ and ref.certified_
    assert fit.get_params()["solver"] == "onedal"
    np.testing.assert_array_equal(fit.predict(X), ref.predict(X))
    np.testing.assert_allclose(fit.decision_function(X), ref.decision_function(X), atol=2e-2)


@needs_onedal
def test_auto_route_solves_small_data_once_with_onedal(dask_client):
    """With oneDAL solving all rows, small data takes one direct solve (the cost model's
    choice, naming the backend it assumed), and is LIBSVM's optimum."""
    from randsvm_dist import RandSVMClassifier

    X, y = _gaussian(1500, d=12)
    common = dict(C=2.0, gamma=0.1, sample_size=200, random_state=0, client=dask_client)
    fast = RandSVMClassifier(solver="auto", **common).fit(X, y)
    ref = RandSVMClassifier(solver="libsvm", **common).fit(X, y)
    assert fast.history_[0]["route"] == "direct"
    assert fast.history_[0]["route_reason"].endswith("onedal")
    assert ref.history_[0]["route_reason"].endswith("libsvm")
    assert fast.certified_ and ref.certified_
    np.testing.assert_allclose(fast.decision_function(X), ref.decision_function(X), atol=2e-2)


def test_cost_model_route_is_cheaper_with_onedal():
    """oneDAL's cheaper cold solve moves the cost model's line between one solve of all
    rows and sampling up: 17,000 rows of 20 features on 2 cores go direct with oneDAL,
    sample with LIBSVM."""
    from randsvm_dist.exact.route import Machine, plan_route
    from randsvm_dist.exact.state import RunConfig

    cfg = RunConfig(k=None, sample_size=5000)
    onedal, why = plan_route(cfg, [], 17_000, 5000, 20, Machine(2, 2), "onedal")
    libsvm, _ = plan_route(cfg, [], 17_000, 5000, 20, Machine(2, 2), "libsvm")
    assert (onedal, libsvm) == ("direct", "sample")
    assert why.endswith("onedal") and "cost model" in why


@needs_onedal
def test_cli_train_with_onedal(dask_client, tmp_path, capsys):
    from randsvm_dist.cli import main
    from randsvm_dist.data import make

    make("checkerboard", tmp_path / "train", rows=1500, partitions=2, seed=1)
    report = tmp_path / "report.json"
    assert main(["train", str(tmp_path / "train"), "--C", "10", "--gamma", "1",
                 "--sample-size", "500", "--solver", "onedal",
                 "--model", str(tmp_path / "cb.model"), "--report", str(report),
                 "--scheduler", dask_client.scheduler.address]) == 0
    assert json.loads(report.read_text())["history"]


def test_cli_help_names_the_solver_option(capsys):
    from randsvm_dist.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "--solver {auto,libsvm,onedal}" in out


def test_kkt_violation_tells_an_optimum_from_a_wrong_point(monkeypatch):
    """The check a oneDAL solution must pass (else LIBSVM solves): LIBSVM's optimum passes,
    a point with its coefficients halved does not; a failing check falls back."""
    from randsvm_dist.solvers.onedal_backend import KKT_SLACK, kkt_violation

    X, y = _gaussian(800)
    params = SolverParams(C=2.0, kernel=Kernel("rbf", 0.2))
    ref = solve_libsvm(X, y, params)
    assert kkt_violation(X, y, ref.support, ref.dual_coef, ref.intercept, params,
                         None) < KKT_SLACK
    assert kkt_violation(X, y, ref.support, ref.dual_coef / 2, ref.intercept, params,
                         None) > KKT_SLACK
    if onedal_available():
        monkeypatch.setattr(onedal_backend, "kkt_violation", lambda *a: 1.0)
        with pytest.warns(RuntimeWarning, match="optimality conditions"):
            assert solve_onedal(X, y, replace(params, backend="onedal"), None, 1) is None


def _fits_seen(monkeypatch, capped=()):
    """Spy on oneDAL's fits: the dtypes of the rows each got; fits in a dtype of ``capped``
    report oneDAL's iteration cap."""
    seen = []
    real = onedal_backend._fit

    def spy(rows, t, weights, params, C, n_threads, dtype=np.float64):
        seen.append(np.dtype(dtype))
        est, messages = real(rows, t, weights, params, C, n_threads, dtype)
        if np.dtype(dtype) in capped:
            est.n_iter_ = np.array([onedal_backend.MAX_ITER])
        return est, messages

    monkeypatch.setattr(onedal_backend, "_fit", spy)
    return seen


@needs_onedal
@pytest.mark.parametrize("case", ["checkerboard", "svr"])
def test_float32_solve_reaches_the_float64_optimum(monkeypatch, case):
    """At the default tol and a box up to FLOAT32_MAX_C oneDAL gets the float32 rows as
    they are, and its optimum is the float64 solve's (at a tightened tol) within the
    solver's tolerance."""
    if case == "checkerboard":
        X, t = _checkerboard(1500)
        params = SolverParams(C=30.0, kernel=Kernel("rbf", 1.0), backend="onedal")
    else:
        rng = np.random.default_rng(4)
        X = rng.normal(size=(900, 4)).astype(np.float32)
        t = 2 * X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=900)
        params = SolverParams(C=3.0, kernel=Kernel("rbf", 0.3), svm_type=3, epsilon=0.1,
                              backend="onedal")
    seen = _fits_seen(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fast = solve_onedal(X, t, replace(params, tol=1e-3), None, 1)
        ref = solve_onedal(X, t, replace(params, tol=1e-5), None, 1)
    assert seen == [np.dtype(np.float32), np.dtype(np.float64)]
    _same_optimum(X, ref, fast, params.kernel, dual_rtol=1e-5)


def test_float32_only_at_a_loose_tol_and_a_small_box():
    from randsvm_dist.solvers.onedal_backend import (
        FLOAT32_MAX_C,
        FLOAT32_MAX_C_SVR,
        FLOAT32_MIN_TOL,
        fit_dtypes,
    )

    both, only64 = (np.float32, np.float64), (np.float64,)
    params = SolverParams(C=FLOAT32_MAX_C, tol=1e-3)
    assert fit_dtypes(params) == both
    assert fit_dtypes(replace(params, tol=FLOAT32_MIN_TOL)) == both
    assert fit_dtypes(replace(params, tol=FLOAT32_MIN_TOL / 2)) == only64
    assert fit_dtypes(replace(params, C=2 * FLOAT32_MAX_C)) == only64
    assert fit_dtypes(replace(params, weight_pos=2.0)) == only64  # C x class weight
    svr = replace(params, svm_type=3, C=FLOAT32_MAX_C_SVR)  # epsilon-SVR: a larger box
    assert FLOAT32_MAX_C_SVR > FLOAT32_MAX_C and fit_dtypes(svr) == both
    assert fit_dtypes(replace(svr, C=2 * FLOAT32_MAX_C_SVR)) == only64


@needs_onedal
def test_float32_at_the_iteration_cap_is_solved_again_in_float64(monkeypatch):
    X, y = _gaussian(600)
    params = SolverParams(C=2.0, kernel=Kernel("rbf", 0.2), backend="onedal")
    seen = _fits_seen(monkeypatch, capped=(np.dtype(np.float32),))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sol = solve_onedal(X, y, params, None, 1)
    assert seen == [np.dtype(np.float32), np.dtype(np.float64)]
    _same_optimum(X, solve_libsvm(X, y, params, 1), sol, params.kernel)
    seen = _fits_seen(monkeypatch, capped=(np.dtype(np.float32), np.dtype(np.float64)))
    with pytest.warns(RuntimeWarning, match="iteration cap"):
        assert solve_onedal(X, y, params, None, 1) is None
    assert seen == [np.dtype(np.float32), np.dtype(np.float64)]


@needs_onedal
def test_a_scanned_solve_leaves_its_check_and_objective_to_the_scan(monkeypatch):
    """``scanned``: no optimality check and no dual objective in the solve (the in-process
    route's scan gives both); the working-set solve still checks its point."""
    X, y = _gaussian(800)
    params = SolverParams(C=2.0, kernel=Kernel("rbf", 0.2), backend="onedal")
    checked = []
    real = onedal_backend.kkt_violation
    monkeypatch.setattr(onedal_backend, "kkt_violation",
                        lambda *a: checked.append(1) or real(*a))
    sol = solve_rows(X, y, None, params, 1, scanned=True)
    assert sol.dual_objective is None and not checked
    full = solve_rows(X, y, None, params, 1)
    assert checked == [1]
    np.testing.assert_array_equal(sol.support, full.support)
    np.testing.assert_array_equal(sol.dual_coef, full.dual_coef)
