"""The warm SMO on epsilon-SVR and one-class: from LIBSVM's initial point, from a previous
optimum plus fresh rows, from a poor (infeasible) start and from the optimum itself, it
reaches the cold LIBSVM solve's optimum. Optimality is checked in float64 numpy, from
scratch: LIBSVM's own stopping rule (the maximal violating pair) on the returned point."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_friedman1, make_moons
from sklearn.metrics.pairwise import rbf_kernel

from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo.duals import fill_to_total, one_class_start, svr_dual
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted
from randsvm_dist.solvers.weighted import solve_weighted, solve_weighted_warm

TOL = 1e-4
SVR = SolverParams(svm_type=3, C=10.0, epsilon=0.5, kernel=Kernel("rbf", 0.5), tol=TOL)
ONE_CLASS = SolverParams(svm_type=2, nu=0.2, kernel=Kernel("rbf", 1.0), tol=TOL)


def friedman(n=600, seed=0):
    X, z = make_friedman1(n, noise=0.5, random_state=seed)
    return X.astype(np.float32), z


def moons(n=600, seed=0):
    return make_moons(n, noise=0.3, random_state=seed)[0].astype(np.float32)


def gram(X, Z, params):
    return rbf_kernel(np.asarray(X, np.float64), np.asarray(Z, np.float64),
                      gamma=params.kernel.gamma)


def coefs(sol, n):
    c = np.zeros(n)
    c[sol.support] = sol.dual_coef
    return c


def violating_pair_gap(y, G, alpha, Cb) -> float:
    """LIBSVM's stopping quantity m(a) - M(a): max of -y G over I_up minus its min over
    I_low (<= tol at a solution)."""
    eps = 1e-12 * max(1.0, float(Cb.max()))
    up = ((y > 0) & (alpha < Cb - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < Cb - eps))
    return float(np.max(-y[up] * G[up]) - np.min(-y[low] * G[low]))


def svr_kkt_gap(X, z, sol, params, Cb) -> float:
    """The gap over the 2n variables (a, a*), y = (+1, -1), p = (eps - z, eps + z)."""
    beta = coefs(sol, len(z))
    f = gram(X, X, params) @ beta
    G = np.concatenate([f + params.epsilon - z, -f + params.epsilon + z])
    alpha = np.concatenate([np.maximum(beta, 0), np.maximum(-beta, 0)])
    y = np.concatenate([np.ones(len(z)), -np.ones(len(z))])
    return violating_pair_gap(y, G, alpha, np.concatenate([Cb, Cb]))


def one_class_kkt_gap(X, sol, params, Cb) -> float:
    a = coefs(sol, X.shape[0])
    return violating_pair_gap(np.ones(len(a)), gram(X, X, params) @ a, a, Cb)


def assert_same_optimum(X, sol, ref, params, kkt_gap, scale=1.0):
    """Dual objective within tol relative, LIBSVM's stopping rule within tol on every
    variable, decision values close on new points (to 10 tol x scale: the boxes' size for
    SVR, |rho| for one-class, whose values grow with sum alpha = nu sum C_i)."""
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=TOL)
    assert kkt_gap < 1.5 * params.tol
    Xt = X[::3] + np.float32(0.05)
    f = gram(Xt, X[sol.support], params) @ sol.dual_coef + sol.intercept
    f_ref = gram(Xt, X[ref.support], params) @ ref.dual_coef + ref.intercept
    np.testing.assert_allclose(f, f_ref, atol=10 * params.tol * scale)


def previous_plus_fresh(X, t, params, fresh=0.2, seed=0, same_total=False):
    """The start RandSVM passes: the optimum of 80% of the rows, zeros on the rest.
    same_total (one-class): the old rows solved with nu x n / n_old, as the driver's
    working sets are (``exact.kinds.OneClass.solver_params``), so sum alpha is already
    the new problem's."""
    n = X.shape[0]
    old = np.sort(np.random.default_rng(seed).permutation(n)[: int((1 - fresh) * n)])
    if same_total:
        params = replace(params, nu=params.nu * n / len(old))
    part = solve_libsvm(X[old], None if t is None else t[old], params)
    start = np.zeros(n)
    start[old[part.support]] = part.dual_coef
    return start


def svr_start(kind, X, z, params):
    if kind == "libsvm_initial":
        return None
    if kind == "previous_plus_fresh":
        return previous_plus_fresh(X, z, params)
    return np.random.default_rng(1).uniform(-2 * params.C, 3 * params.C, len(z))


def one_class_start_point(kind, X, params):
    n = X.shape[0]
    if kind == "libsvm_initial":
        return None
    if kind == "previous_plus_fresh":
        return previous_plus_fresh(X, None, params)
    if kind == "previous_same_total":
        return previous_plus_fresh(X, None, params, same_total=True)
    if kind == "pilot":  # a quarter of the rows solved as their own problem
        return previous_plus_fresh(X, None, params, fresh=0.75)
    if kind == "poor_above_total":
        return np.random.default_rng(1).uniform(-0.5, 3.0, n)
    return np.random.default_rng(2).uniform(0.0, 0.2 * params.nu, n)  # far below the total


SVR_STARTS = ["libsvm_initial", "previous_plus_fresh", "poor"]
ONE_CLASS_STARTS = ["libsvm_initial", "previous_plus_fresh", "previous_same_total",
                    "pilot", "poor_above_total", "poor_below_total"]


@pytest.mark.parametrize("start", SVR_STARTS)
def test_svr_reaches_libsvms_optimum(start):
    X, z = friedman()
    ref = solve_libsvm(X, z, SVR)
    sol, it = solve_warm_counted(X, z, SVR, svr_start(start, X, z, SVR))
    assert it > 0
    Cb = np.full(len(z), SVR.C)
    assert np.all(np.abs(sol.dual_coef) <= SVR.C) and abs(sol.dual_coef.sum()) < 1e-8
    assert_same_optimum(X, sol, ref, SVR, svr_kkt_gap(X, z, sol, SVR, Cb), scale=SVR.C)


@pytest.mark.parametrize("start", ONE_CLASS_STARTS)
def test_one_class_reaches_libsvms_optimum(start):
    X = moons()
    n = X.shape[0]
    ref = solve_libsvm(X, None, ONE_CLASS)
    sol, _ = solve_warm_counted(X, None, ONE_CLASS, one_class_start_point(start, X,
                                                                          ONE_CLASS))
    assert sol.dual_coef.sum() == pytest.approx(ONE_CLASS.nu * n, rel=1e-12)
    assert np.all((sol.dual_coef > 0) & (sol.dual_coef <= 1.0))
    assert_same_optimum(X, sol, ref, ONE_CLASS,
                        one_class_kkt_gap(X, sol, ONE_CLASS, np.ones(n)),
                        scale=abs(ref.intercept))


def test_a_previous_optimum_saves_work():
    """From the optimum of 80% of the rows (one-class: also a pilot's, 25% of the rows
    solved as their own problem, 75% fresh) the solve computes fewer kernel values than
    from LIBSVM's initial point (the work; with shrinking the iteration counts wander, as
    for C-SVC)."""
    X, z = friedman()
    warm_stats, cold_stats = {}, {}
    solve_warm_counted(X, z, SVR, previous_plus_fresh(X, z, SVR), stats=warm_stats)
    solve_warm_counted(X, z, SVR, stats=cold_stats)
    assert warm_stats["kernel_evals"] < 0.7 * cold_stats["kernel_evals"]
    Xo = moons()
    cold_stats = {}
    solve_warm_counted(Xo, None, ONE_CLASS, stats=cold_stats)
    for start in ("previous_plus_fresh", "previous_same_total", "pilot"):
        warm_stats = {}
        solve_warm_counted(Xo, None, ONE_CLASS, one_class_start_point(start, Xo, ONE_CLASS),
                           stats=warm_stats)
        assert warm_stats["kernel_evals"] < 0.5 * cold_stats["kernel_evals"], start


def test_from_the_optimum_it_stops_at_once():
    X, z = friedman()
    ref = solve_libsvm(X, z, SVR)
    _, it_cold = solve_warm_counted(X, z, SVR)
    sol, it = solve_warm_counted(X, z, SVR, coefs(ref, len(z)))
    assert it <= 0.05 * it_cold
    _, it_again = solve_warm_counted(X, z, SVR, coefs(sol, len(z)))
    assert it_again <= 0.05 * it_cold
    Xo = moons()
    ref = solve_libsvm(Xo, None, ONE_CLASS)
    _, it_cold = solve_warm_counted(Xo, None, ONE_CLASS)
    sol, it = solve_warm_counted(Xo, None, ONE_CLASS, coefs(ref, Xo.shape[0]))
    assert it <= 0.05 * it_cold
    assert sol.intercept == pytest.approx(ref.intercept, abs=TOL)


@pytest.mark.parametrize("start", ["libsvm_initial", "previous_plus_fresh", "poor"])
def test_svr_with_per_row_boxes_is_the_weighted_libsvm_optimum(start):
    """Per-row boxes C_i (sample weights): scikit-learn's weighted LIBSVM optimum, through
    the warm SMO directly and through ``solve_weighted_warm`` (rows with C_i <= 0
    dropped)."""
    X, z = friedman(500)
    row_C = np.random.default_rng(4).uniform(0.5, 20.0, len(z))
    params = SolverParams(svm_type=3, C=123.0, epsilon=0.5, kernel=Kernel("rbf", 0.5),
                          tol=TOL)  # C not applied
    ref = solve_weighted(X, z, params, row_C)
    start = svr_start(start, X, z, params)
    sol, _ = solve_warm_counted(X, z, params, start, row_C=row_C)
    assert np.all(np.abs(coefs(sol, len(z))) <= row_C)
    assert_same_optimum(X, sol, ref, params, svr_kkt_gap(X, z, sol, params, row_C),
                        scale=row_C.max())
    dropped = row_C.copy()
    dropped[::7] = 0.0
    ref = solve_weighted(X, z, params, dropped)
    sol = solve_weighted_warm(X, z, params, dropped, start)
    assert not np.isin(sol.support, np.arange(0, len(z), 7)).any()
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=TOL)


def test_one_class_with_per_row_boxes_is_the_weighted_libsvm_optimum():
    X = moons(500)
    row_C = np.random.default_rng(5).uniform(0.5, 2.0, X.shape[0])
    ref = solve_weighted(X, None, ONE_CLASS, row_C)
    for start in (None, previous_plus_fresh(X, None, ONE_CLASS)):
        sol, _ = solve_warm_counted(X, None, ONE_CLASS, start, row_C=row_C)
        assert sol.dual_coef.sum() == pytest.approx(ONE_CLASS.nu * row_C.sum(), rel=1e-12)
        assert_same_optimum(X, sol, ref, ONE_CLASS,
                            one_class_kkt_gap(X, sol, ONE_CLASS, row_C),
                            scale=abs(ref.intercept))


def test_csr_svr_is_the_dense_solution():
    X, z = friedman(300)
    start = previous_plus_fresh(X, z, SVR)
    dense, it_dense = solve_warm_counted(X, z, SVR, start)
    sparse, it_sparse = solve_warm_counted(sp.csr_matrix(X), z, SVR, start)
    assert it_dense == it_sparse
    np.testing.assert_array_equal(dense.support, sparse.support)
    np.testing.assert_array_equal(dense.dual_coef, sparse.dual_coef)


def test_starts_are_repaired_to_feasible_points():
    rng = np.random.default_rng(0)
    Cb = rng.uniform(0.5, 2.0, 200)
    for raw in (rng.uniform(-1, 3, 200), rng.uniform(0, 0.01, 200), None):
        a, deficit = one_class_start(raw, Cb, 0.3)
        assert np.all((a >= 0) & (a <= Cb)) and deficit >= 0
        G = rng.normal(size=200)
        changed = fill_to_total(a, G, Cb, deficit)
        assert np.all((a >= 0) & (a <= Cb))
        assert a.sum() == pytest.approx(0.3 * Cb.sum(), rel=1e-12)
        # filled smallest gradient first, each to its bound exactly but the last
        assert np.all(a[changed][:-1] == Cb[changed][:-1])
        if raw is None:
            np.testing.assert_array_equal(changed,
                                          np.argsort(G, kind="stable")[:len(changed)])
    dual = svr_dual(rng.normal(size=100), Cb[:100], 0.1, rng.uniform(-3, 1, 100))
    a, ast = dual.alpha[:100], dual.alpha[100:]
    assert np.all((dual.alpha >= 0) & (dual.alpha <= dual.Cb))
    assert a.sum() == pytest.approx(ast.sum(), rel=1e-12)
    assert not np.any((a > 0) & (ast > 0))


def test_a_twinned_row_of_q_is_the_per_variable_row():
    """a_i and a*_i share row i: a Q row over both costs row i's kernel values once
    (LIBSVM's SVR_Q), exactly the values computed per variable, in any variable order."""
    from randsvm_dist.solvers.warm_smo.kernels import kernel_params, qfill, qrow

    X, z = friedman(300)
    dual = svr_dual(z, np.full(len(z), SVR.C), SVR.epsilon, None)
    perm = np.random.default_rng(3).permutation(len(dual.y)).astype(np.int64)
    XR = np.ascontiguousarray(X.T, dtype=np.float64)
    XT = np.ascontiguousarray(XR[:, dual.rows[perm]])
    y, sq = dual.y[perm].copy(), np.einsum("ij,ij->j", XT, XT)
    tw = (perm, XR, np.ones(XR.shape[1]), np.einsum("ij,ij->j", XR, XR))
    kp = kernel_params(SVR.kernel)
    m = len(y)
    for p in (0, 7, m - 1):
        twinned, plain = np.empty(m, np.float32), np.empty(m, np.float32)
        assert qrow(p, 0, m, XT, y, sq, kp, twinned, 0, False, tw) == m // 2
        qfill(p, 0, m, XT, y, sq, kp, plain, 0, False)
        np.testing.assert_array_equal(twinned, plain)
        short = np.empty(m // 2, np.float32)  # a shrunk active set: per variable
        assert qrow(p, 0, m // 2, XT, y, sq, kp, short, 0, False, tw) == m // 2
        np.testing.assert_array_equal(short, plain[: m // 2])


def test_svr_on_two_threads_takes_the_same_path():
    """Long kernel rows (twinned too) split over threads: the same values, so the same
    iterates."""
    X, z = friedman(3000)
    params = replace(SVR, tol=1e-3)
    start = previous_plus_fresh(X, z, params)
    runs = []
    for threads in (1, 2):
        stats: dict = {}
        sol, it = solve_warm_counted(X, z, params, start, n_threads=threads, stats=stats)
        runs.append((sol, it, stats))
    (one, it1, s1), (two, it2, s2) = runs
    assert it1 == it2 and s1["kernel_evals"] == s2["kernel_evals"]
    np.testing.assert_array_equal(one.support, two.support)
    np.testing.assert_allclose(one.dual_coef, two.dual_coef, rtol=0, atol=1e-12)


# the solver's gradient is updated by float32 rows of Q (LIBSVM's Qfloat): its kernel sums
# are float64 numpy's to about float32's precision times the steps' sizes
SUMS_ATOL = 1e-4


def exact_sums(X, sol, params, Cb):
    """Each support vector's kernel sums in float64 numpy: over every support vector and
    over those at their bound."""
    K = gram(X[sol.support], X[sol.support], params)
    at_bound = np.abs(sol.dual_coef) >= Cb[sol.support]
    return np.stack([K @ sol.dual_coef, K[:, at_bound] @ sol.dual_coef[at_bound]], axis=1)


def carried(X, t, params, fresh=0.2, seed=0, same_total=False):
    """A previous warm solve on 80% of the rows and what it hands the next one: the start
    (zeros on the fresh rows) and its kernel sums (NaN on the fresh rows)."""
    n = X.shape[0]
    old = np.sort(np.random.default_rng(seed).permutation(n)[: int((1 - fresh) * n)])
    p_old = replace(params, nu=params.nu * n / len(old)) if same_total else params
    prev, _ = solve_warm_counted(X[old], None if t is None else t[old], p_old)
    start, sums = np.zeros(n), np.full((n, 2), np.nan)
    start[old[prev.support]] = prev.dual_coef
    sums[old[prev.support]] = prev.kernel_sums
    return prev, start, sums


C_SVC = SolverParams(C=10.0, kernel=Kernel("rbf", 1.0), tol=TOL)
CARRIED = [("svr", SVR), ("one_class", ONE_CLASS), ("c_svc", C_SVC)]


def c_svc_kkt_gap(X, y, sol, params, Cb) -> float:
    b = coefs(sol, len(y))
    return violating_pair_gap(y, y * (gram(X, X, params) @ b) - 1.0, np.abs(b), Cb)


@pytest.mark.parametrize("name, params", CARRIED, ids=[c[0] for c in CARRIED])
def test_a_carried_gradient_starts_from_the_fresh_rows_only(name, params):
    """The previous solve's kernel sums (its gradient on its support vectors) are those
    of float64 numpy; a re-solve given them computes kernel values for the fresh rows
    only (rows x the previous support vectors, once per row for SVR's twins) and reaches
    the same optimum as one that computes its whole starting gradient."""
    if name == "svr":
        X, z = friedman()
    else:
        X, labels = make_moons(600, noise=0.3, random_state=0)
        X, z = X.astype(np.float32), (np.where(labels == 1, 1.0, -1.0) if name == "c_svc"
                                      else None)
    n = X.shape[0]
    Cb = np.full(n, 1.0 if name == "one_class" else params.C)
    prev, start, sums = carried(X, z, params, same_total=name == "one_class")
    if name == "c_svc":
        start = np.abs(start)  # the warm start takes C-SVC's alphas
    old_sv = np.flatnonzero(~np.isnan(sums[:, 0]))
    np.testing.assert_allclose(prev.kernel_sums, exact_sums(X[np.sort(
        np.random.default_rng(0).permutation(n)[: int(0.8 * n)])], prev, params, Cb),
        rtol=0, atol=SUMS_ATOL)
    plain, with_sums = {}, {}
    ref, _ = solve_warm_counted(X, z, params, start, stats=plain)
    sol, _ = solve_warm_counted(X, z, params, start, stats=with_sums, start_sums=sums)
    fresh_rows = n - len(old_sv)
    assert plain["start_evals"] == n * len(old_sv)
    assert with_sums["start_evals"] == fresh_rows * len(old_sv)
    gap = {"svr": lambda: svr_kkt_gap(X, z, sol, params, Cb),
           "one_class": lambda: one_class_kkt_gap(X, sol, params, Cb),
           "c_svc": lambda: c_svc_kkt_gap(X, z, sol, params, Cb)}[name]()
    assert_same_optimum(X, sol, ref, params, gap,
                        scale=abs(ref.intercept) if name == "one_class" else params.C)
    np.testing.assert_allclose(sol.kernel_sums, exact_sums(X, sol, params, Cb), rtol=0,
                               atol=SUMS_ATOL)


def test_the_dual_objective_comes_from_the_solvers_gradient():
    """The dual objective of a warm solve is computed from its kernel sums, with no kernel
    product over the support vectors: float64 numpy's value to 1e-7 relative (LIBSVM's
    solutions get it from float32 kernel values: 2e-7 off here)."""
    X, z = friedman()
    sol, _ = solve_warm_counted(X, z, SVR, previous_plus_fresh(X, z, SVR))
    K = gram(X[sol.support], X[sol.support], SVR)
    b = sol.dual_coef
    exact = -0.5 * b @ K @ b - SVR.epsilon * np.abs(b).sum() + z[sol.support] @ b
    assert sol.dual_objective == pytest.approx(exact, rel=1e-7)


def test_sums_of_a_repaired_start_are_not_used():
    """A start that had to be repaired (clipped, rebalanced) is not the point the sums
    were computed at: they are ignored and the gradient computed."""
    X, z = friedman(300)
    poor = svr_start("poor", X, z, SVR)
    wrong = np.zeros((len(z), 2))  # would be far off if used
    stats: dict = {}
    sol, _ = solve_warm_counted(X, z, SVR, poor, stats=stats, start_sums=wrong)
    ref = solve_libsvm(X, z, SVR)
    assert stats["start_evals"] == len(z) * np.count_nonzero(poor)
    assert_same_optimum(X, sol, ref, SVR, svr_kkt_gap(X, z, sol, SVR, np.full(len(z), SVR.C)),
                        scale=SVR.C)


def test_the_working_set_task_carries_the_sums_to_the_next_warm_solve():
    """``solve_plan``: a warm plan's solve hands its kernel sums to the model, and the next
    working set's start sums are them on the model's rows, NaN on the fresh rows; an SVR
    working set with half its rows fresh is re-solved warm, a C-SVC one cold."""
    from randsvm_dist.exact import solve_plan
    from randsvm_dist.exact.kinds import CSVC, EpsilonSVR
    from randsvm_dist.exact.state import ProblemState, SupportModel, WorkingSet

    X, z = friedman()
    n = len(z)
    prev, start, sums = carried(X, z, SVR)
    model_rows = np.flatnonzero(~np.isnan(sums[:, 0]))
    model = SupportModel(model_rows, X[model_rows], z[model_rows], np.ones(len(model_rows)),
                         start[model_rows], prev.intercept, prev.dual_objective,
                         prev.kernel_sums)
    ws = WorkingSet(np.arange(n), X, z, np.ones(n), start, n - len(model_rows))
    p = ProblemState(EpsilonSVR(SVR.epsilon), SVR, n_rows=10 * n, size=10.0 * n, ws=ws,
                     model=model)
    got = solve_plan.start_sums(p)
    np.testing.assert_array_equal(got, sums)
    plan = solve_plan.choose_solve_plan(p, 2, 1)
    assert plan.name == "warm"
    s = solve_plan.solve_working_set_task(p.kind, X, z, None, ws.rows, SVR, 1, plan, 0,
                                          start, got)
    assert s.warm and s.solution.kernel_sums is not None
    assert len(s.solution.kernel_sums) == len(s.support)
    half = replace(p, ws=replace(ws, n_fresh=n // 2))
    assert solve_plan.choose_solve_plan(half, 2, 1).name == "warm"
    classifier = replace(half, kind=CSVC(1), solver=SolverParams(C=1.0))
    assert solve_plan.choose_solve_plan(classifier, 2, 1).name != "warm"
    lost = replace(p, model=replace(model, rows=model_rows + 1))  # rows not in the set
    assert solve_plan.start_sums(replace(lost, ws=replace(ws, rows=np.arange(n) * 2))) is None
