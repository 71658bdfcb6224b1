"""The warm-startable SMO: LIBSVM's optimum from a cold start, from a warm start, and from
an infeasible one; KKT conditions checked in float64 numpy, independently of the solver."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification, make_moons
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo.solve import feasible_start, solve_warm_counted


def moons(n=600, seed=0):
    X, y = make_moons(n, noise=0.3, random_state=seed)
    return X.astype(np.float32), np.where(y == 1, 1.0, -1.0)


def gram(X, Z, kernel: Kernel):
    X, Z = np.asarray(X, np.float64), np.asarray(Z, np.float64)
    if kernel.name == "rbf":
        return rbf_kernel(X, Z, gamma=kernel.gamma)
    if kernel.name == "poly":
        return polynomial_kernel(X, Z, degree=kernel.degree, gamma=kernel.gamma,
                                 coef0=kernel.coef0)
    return linear_kernel(X, Z)


def alphas(sol, n):
    a = np.zeros(n)
    a[sol.support] = np.abs(sol.dual_coef)
    return a


def kkt_violation(X, y, a, b, params: SolverParams) -> float:
    """Largest violation of the C-SVM's KKT conditions, from scratch in float64."""
    Cb = np.where(y > 0, params.C * params.weight_pos, params.C * params.weight_neg)
    m = y * (gram(X, X, params.kernel) @ (a * y) + b)
    low, up = a <= 1e-12, a >= Cb - 1e-12
    free = ~low & ~up
    return max(np.max(1 - m[low], initial=0), np.max(m[up] - 1, initial=0),
               np.max(np.abs(m[free] - 1), initial=0))


CASES = [
    ("rbf", SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-6)),
    ("linear", SolverParams(C=1.0, kernel=Kernel("linear"), tol=1e-6)),
    ("poly", SolverParams(C=1.0, kernel=Kernel("poly", 0.5, 2, 1.0), tol=1e-6)),
    ("weighted", SolverParams(C=4.0, kernel=Kernel("rbf", 1.0), weight_pos=3.0,
                              weight_neg=0.5, tol=1e-6)),
]


@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_cold_start_is_libsvm(name, params):
    X, y = moons()
    ref = solve_libsvm(X, y, params)
    sol, it = solve_warm_counted(X, y, params)
    assert it > 0
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    assert sol.intercept == pytest.approx(ref.intercept, abs=1e-3)
    Xt, _ = moons(300, seed=1)
    f = gram(Xt, X[sol.support], params.kernel) @ sol.dual_coef + sol.intercept
    f_ref = gram(Xt, X[ref.support], params.kernel) @ ref.dual_coef + ref.intercept
    np.testing.assert_allclose(f, f_ref, atol=1e-3)
    assert kkt_violation(X, y, alphas(sol, len(y)), sol.intercept, params) < 1e-5


def test_sparse_input_is_the_dense_solution():
    X, y = make_classification(500, 30, random_state=0)
    X = np.where(np.abs(X) > 1, X, 0).astype(np.float32)
    y = np.where(y == 1, 1.0, -1.0)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.05), tol=1e-6)
    dense, _ = solve_warm_counted(X, y, params)
    sparse, _ = solve_warm_counted(sp.csr_matrix(X), y, params)
    np.testing.assert_array_equal(dense.support, sparse.support)
    np.testing.assert_allclose(dense.dual_coef, sparse.dual_coef, atol=1e-9)


def test_warm_start_from_a_subset_reaches_the_full_optimum_in_fewer_steps():
    X, y = moons(1500)
    params = SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-5)
    full = solve_libsvm(X, y, params)
    sub = np.arange(1350)  # the optimum of 90% of the rows as the starting point
    part = solve_libsvm(X[sub], y[sub], params)
    start = np.zeros(len(y))
    start[sub[part.support]] = np.abs(part.dual_coef)
    warm_stats, cold_stats = {}, {}
    warm, it_warm = solve_warm_counted(X, y, params, start, stats=warm_stats)
    cold, it_cold = solve_warm_counted(X, y, params, stats=cold_stats)
    assert warm.dual_objective == pytest.approx(full.dual_objective, rel=1e-6)
    # with shrinking the iteration counts wander (warm ones above cold ones happen at this
    # tol); the work does not: the warm solve computes a fraction of the kernel values
    assert warm_stats["kernel_evals"] < 0.5 * cold_stats["kernel_evals"]
    no_shrink = replace(params, shrinking=False)
    assert (solve_warm_counted(X, y, no_shrink, start)[1]
            < solve_warm_counted(X, y, no_shrink)[1])
    assert kkt_violation(X, y, alphas(warm, len(y)), warm.intercept, params) < 1e-4
    # from the optimum itself: (almost) nothing left to do
    _, it_opt = solve_warm_counted(X, y, params, alphas(full, len(y)))
    assert it_opt < it_warm


def test_an_infeasible_start_is_repaired():
    X, y = moons()
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 2.0), tol=1e-6)
    Cb = np.full(len(y), 1.0)
    bad = np.random.default_rng(0).uniform(-1, 3, len(y))
    a = feasible_start(bad, y, Cb)
    assert np.all((a >= 0) & (a <= Cb)) and abs(a @ y) < 1e-9
    sol, _ = solve_warm_counted(X, y, params, bad)
    ref = solve_libsvm(X, y, params)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)


def test_one_class_falls_back_to_libsvms_answer():
    X, _ = moons(50)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 1.0))
    sol, it = solve_warm_counted(X, np.ones(50), params, np.ones(50))
    assert it == 0 and len(sol.support) == 0 and sol.intercept == 1.0


def test_per_row_bounds_are_the_weighted_libsvm_optimum():
    """row_C (C x class weight x sample weight per row) gives scikit-learn's weighted
    LIBSVM optimum, cold and warm, and the per-row KKT conditions hold."""
    from randsvm_dist.solvers.weighted import solve_weighted

    X, y = moons()
    rng = np.random.default_rng(4)
    row_C = rng.uniform(0.2, 5.0, len(y))
    params = SolverParams(C=123.0, kernel=Kernel("rbf", 2.0), tol=1e-6)  # C not applied
    ref = solve_weighted(X, y, params, row_C)
    cold, _ = solve_warm_counted(X, y, params, row_C=row_C)
    assert cold.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    half = alphas(ref, len(y)) * 0.5
    warm, _ = solve_warm_counted(X, y, params, half, row_C=row_C)
    assert warm.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    a = alphas(warm, len(y))
    assert np.all(a <= row_C + 1e-12)
    m = y * (gram(X, X, params.kernel) @ (a * y) + warm.intercept)
    low, up = a <= 1e-12, a >= row_C - 1e-12
    free = ~low & ~up
    assert max(np.max(1 - m[low], initial=0), np.max(m[up] - 1, initial=0),
               np.max(np.abs(m[free] - 1), initial=0)) < 1e-4
    with pytest.raises(ValueError, match="row_C"):
        solve_warm_counted(X, y, params, row_C=np.zeros(len(y)))


# -- issue 21 item 5: shrinking, the kernel-row cache, threads -----------------------------
def previous_optimum_plus_fresh(X, y, params, fresh=0.2, seed=0):
    """alpha0 as RandSVM passes it: the optimum of the rows minus a fresh share, zeros on
    the fresh rows."""
    n = len(y)
    old = np.sort(np.random.default_rng(seed).permutation(n)[: int((1 - fresh) * n)])
    part = solve_libsvm(X[old], y[old], params)
    a0 = np.zeros(n)
    a0[old[part.support]] = np.abs(part.dual_coef)
    return a0


def assert_libsvm_optimum(X, y, params, sol, ref, kkt_tol=1e-4):
    """Same dual objective, decision values to 1e-3, KKT conditions on every row."""
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    Xt, _ = moons(300, seed=7)
    f = gram(Xt, X[sol.support], params.kernel) @ sol.dual_coef + sol.intercept
    f_ref = gram(Xt, X[ref.support], params.kernel) @ ref.dual_coef + ref.intercept
    np.testing.assert_allclose(f, f_ref, atol=1e-3)
    assert kkt_violation(X, y, alphas(sol, len(y)), sol.intercept, params) < kkt_tol


START_CASES = ["zeros", "previous_plus_fresh", "infeasible"]


def start_point(kind, X, y, params):
    if kind == "zeros":
        return None
    if kind == "previous_plus_fresh":
        return previous_optimum_plus_fresh(X, y, params)
    return np.random.default_rng(1).uniform(-1, 3 * params.C, len(y))


@pytest.mark.parametrize("start", START_CASES)
@pytest.mark.parametrize("name, params", CASES, ids=[c[0] for c in CASES])
def test_every_start_reaches_libsvms_optimum(name, params, start):
    """From zeros, from a previous optimum plus fresh rows, and from an infeasible point
    (repaired), with class weights too: LIBSVM's optimum, KKT on every row."""
    X, y = moons()
    ref = solve_libsvm(X, y, params)
    sol, _ = solve_warm_counted(X, y, params, start_point(start, X, y, params))
    assert_libsvm_optimum(X, y, params, sol, ref)


@pytest.mark.parametrize("start", START_CASES)
def test_csr_input_gives_the_dense_optimum(start):
    X, y = moons()
    params = SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-6)
    a0 = start_point(start, X, y, params)
    dense, it_dense = solve_warm_counted(X, y, params, a0)
    sparse, it_sparse = solve_warm_counted(sp.csr_matrix(X), y, params, a0)
    assert it_dense == it_sparse
    np.testing.assert_array_equal(dense.support, sparse.support)
    np.testing.assert_allclose(dense.dual_coef, sparse.dual_coef, atol=1e-12)
    assert_libsvm_optimum(X, y, params, sparse, solve_libsvm(X, y, params))


@pytest.mark.parametrize("start", START_CASES)
def test_per_row_boxes_from_every_start(start):
    from randsvm_dist.solvers.weighted import solve_weighted, solve_weighted_warm

    X, y = moons()
    row_C = np.random.default_rng(4).uniform(0.2, 5.0, len(y))
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 2.0), tol=1e-6)
    ref = solve_weighted(X, y, params, row_C)
    a0 = start_point(start, X, y, params)
    sol = solve_weighted_warm(X, y, params, row_C, a0)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    a = alphas(sol, len(y))
    m = y * (gram(X, X, params.kernel) @ (a * y) + sol.intercept)
    low, up = a <= 1e-12, a >= row_C - 1e-12
    free = ~low & ~up
    assert max(np.max(1 - m[low], initial=0), np.max(m[up] - 1, initial=0),
               np.max(np.abs(m[free] - 1), initial=0)) < 1e-4


@pytest.mark.parametrize("start", START_CASES)
def test_shrinking_on_and_off_give_the_same_optimum(start):
    X, y = moons(1000)
    params = SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-6)
    a0 = start_point(start, X, y, params)
    on, _ = solve_warm_counted(X, y, params, a0)
    off, _ = solve_warm_counted(X, y, replace(params, shrinking=False), a0)
    ref = solve_libsvm(X, y, params)
    assert_libsvm_optimum(X, y, params, on, ref)
    assert_libsvm_optimum(X, y, params, off, ref)
    assert on.dual_objective == pytest.approx(off.dual_objective, rel=1e-6)


@pytest.mark.parametrize("shrinking", [True, False])
def test_a_tiny_cache_takes_the_same_path(shrinking):
    """A cache of two rows' worth (every row evicted, repacked, recomputed) changes the
    work, never the iterates: same iterations, same alphas."""
    X, y = moons(1000)
    params = SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-6, shrinking=shrinking)
    a0 = previous_optimum_plus_fresh(X, y, params)
    big_stats, tiny_stats = {}, {}
    big, it_big = solve_warm_counted(X, y, params, a0, stats=big_stats)
    tiny, it_tiny = solve_warm_counted(X, y, replace(params, cache_size=1e-6), a0,
                                       stats=tiny_stats)
    assert it_big == it_tiny
    assert tiny_stats["kernel_evals"] > big_stats["kernel_evals"]
    np.testing.assert_array_equal(big.support, tiny.support)
    np.testing.assert_array_equal(big.dual_coef, tiny.dual_coef)
    assert big.intercept == tiny.intercept


def test_two_threads_take_the_same_path():
    """Long kernel rows and the starting gradient split over threads: the same values,
    so the same iterates (rows long enough for the parallel path)."""
    X, y = moons(8000)
    params = SolverParams(C=10.0, kernel=Kernel("rbf", 2.0), tol=1e-4)
    a0 = previous_optimum_plus_fresh(X, y, params)
    one, it_one = solve_warm_counted(X, y, params, a0, n_threads=1)
    two, it_two = solve_warm_counted(X, y, params, a0, n_threads=2)
    assert it_one == it_two
    np.testing.assert_array_equal(one.support, two.support)
    np.testing.assert_allclose(one.dual_coef, two.dual_coef, rtol=0, atol=1e-12)


def test_the_vectorised_exp_is_exact():
    from randsvm_dist.solvers.warm_smo.kernels import EXP_MIN_ARG, exp_inplace

    x = np.concatenate([-np.geomspace(1e-300, 800, 20_000), [0.0, -0.3466, EXP_MIN_ARG]])
    v, tb = x.copy(), np.empty(len(x))
    exp_inplace(v, len(v), tb)
    want = np.exp(np.maximum(x, EXP_MIN_ARG))
    assert np.max(np.abs(v - want) / want) < 1e-15
