"""The in-process direct route's solve (``exact.in_process``, ``exact.solving``): oneDAL's
optimality check and dual objective come from the certificate's scan (no other pass over
decision values), a bad oneDAL point is still caught and solved by LIBSVM, and the model
and certificate are LIBSVM's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier, RandSVMRegressor
from randsvm_dist.exact import solving
from randsvm_dist.solvers import dual_objective as dual_objective_module
from randsvm_dist.solvers import onedal_backend
from randsvm_dist.solvers.onedal_backend import onedal_available
from randsvm_dist.solvers.solution import BinarySolution

pytestmark = pytest.mark.skipif(not onedal_available(),
                                reason="scikit-learn-intelex not installed")


def _data(n: int, d: int = 12, classes: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y, X[:, 0] + np.sin(X[:, 1])


def _count(monkeypatch, module, name: str) -> list:
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _same_fit(fit, ref, X, values_atol: float):
    assert fit.certified_ and ref.certified_
    assert fit.history_[-1]["solved_in"] == ref.history_[-1]["solved_in"] == "client"
    values = getattr(fit, "decision_function", fit.predict)
    ref_values = getattr(ref, "decision_function", ref.predict)
    np.testing.assert_allclose(values(X), ref_values(X), atol=values_atol)
    fit_dual = sum(r["dual_objective"] for r in fit.history_ if r["stop_reason"])
    ref_dual = sum(r["dual_objective"] for r in ref.history_ if r["stop_reason"])
    assert fit_dual == pytest.approx(ref_dual, rel=2e-4)


@pytest.mark.parametrize("case", ["binary", "three classes", "regression", "weighted"])
def test_direct_route_runs_no_decision_value_pass_besides_the_scan(monkeypatch, case):
    """oneDAL solves every problem in the client's process; neither its optimality check
    nor a dual objective over the support vectors runs: the scan's values give both (rows
    of zero weight take no part in the check). The model and certificate are LIBSVM's
    (same optimum within the solver's tolerance)."""
    X, y, target = _data(1500, classes=3 if case == "three classes" else 2)
    weight = None
    if case == "weighted":
        weight = np.random.default_rng(5).uniform(0.2, 2.0, len(y))
        weight[::10] = 0.0
    if case == "regression":
        make = lambda solver: RandSVMRegressor(C=3.0, epsilon=0.1, gamma=0.1,  # noqa: E731
                                               random_state=0, solver=solver)
        y = target
    else:
        make = lambda solver: RandSVMClassifier(C=2.0, gamma=0.1,  # noqa: E731
                                                random_state=0, solver=solver)
    ref = make("libsvm").fit(X, y, sample_weight=weight)
    fits = _count(monkeypatch, onedal_backend, "_fit")
    kkt = _count(monkeypatch, onedal_backend, "decision_values")
    objective = _count(monkeypatch, dual_objective_module, "decision_values")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no point refused
        fit = make("onedal").fit(X, y, sample_weight=weight)
    n_problems = 3 if case == "three classes" else 1
    # a tightened re-solve starts from the last alphas (the warm SMO, not oneDAL); the
    # pairs of three classes are one oneDAL fit of all classes (``solve_onedal_pairs``)
    n_cold = sum(1 for r in fit.history_ if not r["warm_start"])
    assert n_cold >= n_problems
    assert len(fits) == (1 if case == "three classes" else n_cold)
    assert not kkt and not objective
    _same_fit(fit, ref, X, 2e-2)


def test_a_bad_onedal_point_is_caught_and_solved_by_libsvm(monkeypatch):
    """A oneDAL point off the optimum (coefficients halved: margins at 1/2) fails the check
    the scan's values give; LIBSVM solves those rows again before the certificate."""
    X, y, _ = _data(1200)
    real = solving.solve_onedal
    bad = []

    def halved(*a, **k):
        sol = real(*a, **k)
        bad.append(1)
        return BinarySolution(sol.support, sol.dual_coef / 2, sol.intercept,
                                             sol.dual_objective)

    monkeypatch.setattr(solving, "solve_onedal", halved)
    libsvm_solves = _count(monkeypatch, solving, "solve_libsvm")
    common = dict(C=2.0, gamma=0.1, random_state=0)
    with pytest.warns(RuntimeWarning, match="misses the optimality conditions"):
        fit = RandSVMClassifier(solver="onedal", **common).fit(X, y)
    assert len(bad) == len(libsvm_solves) == len(fit.history_)
    _same_fit(fit, RandSVMClassifier(solver="libsvm", **common).fit(X, y), X, 1e-3)


def test_a_good_point_passes_the_scans_check():
    """``finish_scanned`` takes oneDAL's optimum (no warning) and gives the dual objective
    of the kernel pass it replaces."""
    from randsvm_dist.engine.fit_input import prepare_fit_input
    from randsvm_dist.exact.in_process import in_memory_rows
    from randsvm_dist.exact.kinds import CSVC
    from randsvm_dist.exact.state import ProblemState
    from randsvm_dist.numerics.kernels import Kernel, decision_values
    from randsvm_dist.solvers.dual_objective import dual_objective
    from randsvm_dist.solvers.params import SolverParams

    X, y, _ = _data(900)
    rows = in_memory_rows(prepare_fit_input(X, y, None, None, "classification"),
                          "classification")
    params = SolverParams(C=2.0, kernel=Kernel("rbf", 0.1), backend="onedal")
    p = ProblemState(CSVC(1), params, n_rows=900, size=900)
    result = solving.solve_partitions(p.kind, p.kind.solver_params(params, 900, 900), 2.0,
                                      False, 1, rows.part, scanned=True)
    p, = solving.directly_solved([p], [result], 900)
    assert p.model.dual_objective is None
    f = decision_values(rows.part.X, p.model.X, p.model.coef, p.model.intercept,
                        params.kernel).astype(np.float32)
    done, refusal = solving.finish_scanned(p, f, rows.part, False)
    assert refusal is None
    assert done.model.dual_objective == pytest.approx(
        dual_objective(p.model.X, p.model.coef, params.kernel), rel=1e-6)
    _, refusal = solving.finish_scanned(p, f / 2, rows.part, False)
    assert "misses the optimality conditions" in refusal


def test_several_problems_open_at_the_certificates_tol_and_reach_the_same_model(monkeypatch):
    """oneDAL's first solves of several problems (one-vs-one's pairs) stop at
    OPENING_TOL_SHARE x gap_tol, not the estimator's tol: every pair certifies from its
    first solve, the model is the one the estimator's tol reaches after its re-solves
    (within the solver's tolerance); one problem, or LIBSVM's solves, keep the tol."""
    from randsvm_dist.exact import certificate

    X, y, _ = _data(2400, classes=4, seed=3)
    common = dict(C=8.0, gamma=0.1, random_state=0, tol=1e-3, gap_tol=1e-3)
    fit = RandSVMClassifier(solver="onedal", **common).fit(X, y)
    opening = certificate.OPENING_TOL_SHARE * 1e-3
    first = [r for r in fit.history_ if r["iteration"] == 1]
    assert len(first) == 6 and all(r["tol"] == pytest.approx(opening) for r in first)
    assert fit.certified_ and fit.n_iter_ == 1
    assert all(r["relative_gap"] <= 1e-3 for r in first)
    monkeypatch.setattr(certificate, "OPENING_TOL_SHARE", 1.0)  # min(tol, gap_tol): tol
    ref = RandSVMClassifier(solver="onedal", **common).fit(X, y)
    assert all(r["tol"] == pytest.approx(1e-3) for r in ref.history_ if r["iteration"] == 1)
    assert ref.certified_
    np.testing.assert_allclose(fit.decision_function(X), ref.decision_function(X), atol=2e-2)
    assert np.mean(fit.predict(X) == ref.predict(X)) >= 0.995
    monkeypatch.undo()
    one = RandSVMClassifier(solver="onedal", **common).fit(X, y == 0)
    assert one.history_[0]["tol"] == pytest.approx(1e-3)
    by_libsvm = RandSVMClassifier(solver="libsvm", **common).fit(X, y)
    assert all(r["tol"] == pytest.approx(1e-3)
               for r in by_libsvm.history_ if r["iteration"] == 1)


def test_one_vs_one_pairs_by_one_onedal_fit_are_the_pairs_solved_alone(monkeypatch):
    """Four classes: oneDAL fits all six pairs in one call (``solve_onedal_pairs``), each
    pair read out as its own solution; the fit is certified and is the model of six
    separate pair solves (within the solver's tolerance). Class weights or sample weights
    keep the solves one by one."""
    from randsvm_dist.exact import in_process

    X, y, _ = _data(2400, d=16, classes=4, seed=5)
    common = dict(C=4.0, gamma=0.08, random_state=0, solver="onedal")
    at_once = _count(monkeypatch, onedal_backend, "solve_onedal_pairs")
    alone = _count(monkeypatch, solving, "solve_onedal")
    fit = RandSVMClassifier(**common).fit(X, y)
    assert at_once == [1] and alone == []
    monkeypatch.setattr(in_process, "_pairs_at_once", lambda *a: None)
    ref = RandSVMClassifier(**common).fit(X, y)
    assert at_once == [1] and len(alone) == 6
    _same_fit(fit, ref, X, values_atol=2e-3)
    np.testing.assert_array_equal(fit.predict(X), ref.predict(X))
    monkeypatch.undo()
    at_once = _count(monkeypatch, onedal_backend, "solve_onedal_pairs")
    RandSVMClassifier(class_weight={0: 2.0}, **common).fit(X, y)
    RandSVMClassifier(**common).fit(X, y, sample_weight=np.linspace(0.5, 2, len(y)))
    assert at_once == []


def test_solve_onedal_pairs_reads_each_pair_as_its_own_solve():
    """Every pair's solution from one fit of all classes: the same support vectors and
    decision values as oneDAL's fit of the pair's rows alone, class i (the first) +1."""
    from randsvm_dist.numerics.kernels import Kernel, decision_values
    from randsvm_dist.numerics.multiclass import ovo_pairs
    from randsvm_dist.solvers.params import SolverParams

    X, y, _ = _data(1800, d=12, classes=3, seed=7)
    params = SolverParams(kernel=Kernel("rbf", gamma=0.1), C=3.0, backend="onedal",
                          tol=1e-4)
    solutions = onedal_backend.solve_onedal_pairs(X, y, 3, params, 2)
    assert len(solutions) == 3
    for sol, (i, j) in zip(solutions, ovo_pairs(3)):
        rows = np.flatnonzero((y == i) | (y == j))
        t = np.where(y[rows] == i, 1.0, -1.0)
        ref = onedal_backend.solve_onedal(X[rows], t, params, n_threads=2, scanned=True)
        np.testing.assert_array_equal(sol.support, ref.support)
        assert np.all(np.diff(sol.support) > 0) and np.all(sol.dual_coef * t[sol.support] > 0)
        f = decision_values(X[rows], X[rows][sol.support], sol.dual_coef, sol.intercept,
                            params.kernel)
        f_ref = decision_values(X[rows], X[rows][ref.support], ref.dual_coef,
                                ref.intercept, params.kernel)
        np.testing.assert_allclose(f, f_ref, atol=1e-3)
    with pytest.raises(ValueError, match="three or more classes"):
        onedal_backend.solve_onedal_pairs(X, np.minimum(y, 1), 2, params, 1)
    with pytest.raises(Exception, match="class weights"):
        onedal_backend.solve_onedal_pairs(X, y, 3, SolverParams(
            kernel=params.kernel, C=3.0, weight_pos=2.0, backend="onedal"), 1)
