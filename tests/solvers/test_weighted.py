"""Per-row box constraints C_i (solvers.weighted): the same model as scikit-learn's
SVC/SVR/OneClassSVM with the same sample weights; weights equivalent to scaling C, to
repeating rows, and (zero/negative) to removing rows; KKT conditions per row with C_i,
checked in float64 numpy independently of the solver; the warm-start SMO with per-row
bounds gives the same optimum."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC, SVR, OneClassSVM

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.weighted import solve_weighted, solve_weighted_warm

KERNEL = Kernel("rbf", 1.0)
TOL = 1e-6
ATOL = 1e-4  # decision values of two LIBSVM runs stopped at tol 1e-6


def moons(n=400, seed=0):
    X, y = make_moons(n, noise=0.3, random_state=seed)
    return X.astype(np.float32), np.where(y == 1, 1.0, -1.0)


def weights(n, seed=1):
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


def f_of(X, sol, kernel=KERNEL):
    return decision_values(X, X[sol.support], sol.dual_coef, sol.intercept, kernel)


def params(**kw):
    return SolverParams(kernel=KERNEL, tol=TOL, **kw)


def test_c_svc_equals_sklearn_sample_weight_and_class_weight():
    X, y = moons()
    w = weights(len(y))
    C, cw = 2.0, {-1.0: 0.5, 1.0: 3.0}
    row_C = C * np.vectorize(cw.get)(y) * w
    sol = solve_weighted(X, y, params(), row_C)
    ref = SVC(C=C, gamma=1.0, tol=TOL, class_weight=cw).fit(X.astype(np.float64), y,
                                                            sample_weight=w)
    np.testing.assert_allclose(f_of(X, sol), ref.decision_function(X), atol=ATOL)
    np.testing.assert_array_equal(sol.support, np.sort(ref.support_))
    assert np.all(np.abs(sol.dual_coef) <= row_C[sol.support] + 1e-9)


def test_sparse_input_same_model():
    X, y = moons()
    w = weights(len(y))
    dense = solve_weighted(X, y, params(), w)
    sparse = solve_weighted(sp.csr_matrix(X), y, params(), w)
    np.testing.assert_array_equal(dense.support, sparse.support)
    np.testing.assert_allclose(dense.dual_coef, sparse.dual_coef, atol=1e-6)


def test_uniform_weights_equal_scaling_c(monkeypatch):
    """Through scikit-learn's weighted LIBSVM (the routing to libsvm-official switched
    off), uniform weights w give LIBSVM's solution with C x w."""
    import randsvm_dist.solvers.weighted as weighted

    X, y = moons()
    ref = solve_libsvm(X, y, params(C=2.5 * 4.0))
    routed = solve_weighted(X, y, params(), np.full(len(y), 2.5 * 4.0))
    np.testing.assert_array_equal(routed.support, ref.support)
    monkeypatch.setattr(weighted, "as_unweighted", lambda *a: None)
    sol = solve_weighted(X, y, params(), np.full(len(y), 2.5 * 4.0))
    np.testing.assert_allclose(f_of(X, sol), f_of(X, ref), atol=ATOL)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)


def test_class_weight_only_boxes_go_to_libsvm_official(monkeypatch):
    """Boxes constant per class are LIBSVM's -w1/-w-1: solved by libsvm-official (OpenMP),
    the same model as scikit-learn's SVC(class_weight=...)."""
    import randsvm_dist.solvers.weighted as weighted

    X, y = moons()
    row_C = np.where(y > 0, 3.0, 0.5)
    row_C[::5] = 0.0  # dropped rows do not stop the routing
    plain = weighted.as_unweighted(y[row_C > 0], row_C[row_C > 0], params())
    assert (plain.C, plain.weight_pos, plain.weight_neg) == (1.0, 3.0, 0.5)
    sol = solve_weighted(X, y, params(), row_C)
    keep = row_C > 0
    ref = SVC(C=1.0, gamma=1.0, tol=TOL, class_weight={1.0: 3.0, -1.0: 0.5}).fit(
        X[keep].astype(np.float64), y[keep])
    np.testing.assert_allclose(f_of(X, sol), ref.decision_function(X), atol=ATOL)
    assert not np.isin(sol.support, np.arange(0, len(y), 5)).any()
    monkeypatch.setattr(weighted, "as_unweighted", lambda *a: None)
    via_sklearn = solve_weighted(X, y, params(), row_C)
    np.testing.assert_array_equal(via_sklearn.support, sol.support)
    assert via_sklearn.dual_objective == pytest.approx(sol.dual_objective, rel=1e-6)
    assert weighted.as_unweighted(y, np.linspace(1, 2, len(y)), params()) is None


def test_integer_weights_equal_repeated_rows():
    X, y = moons(300)
    reps = np.random.default_rng(2).integers(1, 4, len(y))
    sol = solve_weighted(X, y, params(), 1.5 * reps)
    idx = np.repeat(np.arange(len(y)), reps)
    ref = solve_libsvm(X[idx], y[idx], params(C=1.5))
    np.testing.assert_allclose(f_of(X, sol), decision_values(
        X, X[idx][ref.support], ref.dual_coef, ref.intercept, KERNEL), atol=ATOL)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-5)


@pytest.mark.parametrize("bad", [0.0, -2.0])
def test_zero_and_negative_weight_remove_the_row(bad):
    X, y = moons()
    w = weights(len(y))
    drop = np.zeros(len(y), bool)
    drop[::7] = True
    w[drop] = bad
    sol = solve_weighted(X, y, params(), w)
    ref = solve_weighted(X[~drop], y[~drop], params(), w[~drop])
    assert not np.isin(sol.support, np.flatnonzero(drop)).any()
    np.testing.assert_array_equal(sol.support, np.flatnonzero(~drop)[ref.support])
    np.testing.assert_allclose(f_of(X, sol), decision_values(
        X, X[~drop][ref.support], ref.dual_coef, ref.intercept, KERNEL), atol=1e-9)
    # scikit-learn does the same with the same weights
    skl = SVC(C=1.0, gamma=1.0, tol=TOL).fit(X.astype(np.float64), y, sample_weight=w)
    np.testing.assert_allclose(f_of(X, sol), skl.decision_function(X), atol=ATOL)


def test_all_weights_nonpositive_is_an_error_and_one_class_left_is_degenerate():
    X, y = moons(50)
    with pytest.raises(ParameterError, match="zero or negative weights"):
        solve_weighted(X, y, params(), np.zeros(len(y)))
    with pytest.raises(ParameterError, match="entries"):
        solve_weighted(X, y, params(), np.ones(3))
    w = np.where(y > 0, 1.0, 0.0)
    sol = solve_weighted(X, y, params(), w)
    assert len(sol.support) == 0 and sol.intercept == 1.0


def test_kkt_per_row_with_row_c():
    """Each row: alpha_i = 0 -> y f >= 1, 0 < alpha_i < C_i -> y f = 1, alpha_i = C_i ->
    y f <= 1 (to LIBSVM's tolerance), with f recomputed in float64."""
    X, y = moons()
    row_C = 3.0 * weights(len(y), seed=5)
    sol = solve_weighted(X, y, params(), row_C)
    a = np.zeros(len(y))
    a[sol.support] = np.abs(sol.dual_coef)
    Xd = X.astype(np.float64)
    m = y * (rbf_kernel(Xd, Xd, gamma=1.0) @ (a * y) + sol.intercept)
    low, up = a <= 1e-12, a >= row_C - 1e-9
    free = ~low & ~up
    assert free.any() and up.any()
    assert np.max(1 - m[low], initial=0) < 1e-3
    assert np.max(m[up] - 1, initial=0) < 1e-3
    assert np.max(np.abs(m[free] - 1)) < 1e-3
    assert abs(a @ y) < 1e-8
    assert np.all(a <= row_C + 1e-9)


def test_warm_smo_with_row_bounds_is_the_same_optimum():
    X, y = moons()
    w = 2.0 * weights(len(y))
    w[::9] = 0.0
    ref = solve_weighted(X, y, params(), w)
    cold = solve_weighted_warm(X, y, params(), w)
    np.testing.assert_allclose(f_of(X, cold), f_of(X, ref), atol=1e-3)
    a0 = np.zeros(len(y))
    a0[ref.support] = np.abs(ref.dual_coef) * 0.5
    warm = solve_weighted_warm(X, y, params(), w, a0)
    np.testing.assert_allclose(f_of(X, warm), f_of(X, ref), atol=1e-3)
    assert not np.isin(warm.support, np.arange(0, len(y), 9)).any()
    assert warm.dual_objective == pytest.approx(ref.dual_objective, rel=1e-5)


def regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)


def test_svr_equals_sklearn_sample_weight():
    X, t = regression()
    w = weights(len(t))
    w[::11] = 0.0
    p = params(svm_type=3, epsilon=0.1)
    sol = solve_weighted(X, t, p, 2.0 * w)
    ref = SVR(C=2.0, gamma=1.0, tol=TOL, epsilon=0.1).fit(X.astype(np.float64), t,
                                                         sample_weight=w)
    np.testing.assert_allclose(f_of(X, sol), ref.predict(X), atol=ATOL)
    assert np.all(np.abs(sol.dual_coef) <= 2.0 * w[sol.support] + 1e-9)
    assert not np.isin(sol.support, np.arange(0, len(t), 11)).any()
    # uniform weights == scaling C (the unweighted LIBSVM solve), through scikit-learn
    import randsvm_dist.solvers.weighted as weighted

    assert weighted.as_unweighted(t, np.full(len(t), 3.0), p).C == 3.0
    uni = weighted._estimator(p).fit(X.astype(np.float64), t,
                                     sample_weight=np.full(len(t), 3.0))
    np.testing.assert_allclose(uni.predict(X), f_of(X, solve_libsvm(X, t, SolverParams(
        C=3.0, kernel=KERNEL, tol=TOL, svm_type=3, epsilon=0.1))), atol=ATOL)
    uni = solve_weighted(X, t, p, np.full(len(t), 3.0))
    np.testing.assert_allclose(f_of(X, uni), f_of(X, solve_libsvm(X, t, SolverParams(
        C=3.0, kernel=KERNEL, tol=TOL, svm_type=3, epsilon=0.1))), atol=ATOL)


def test_one_class_equals_sklearn_sample_weight_and_repeated_rows():
    X, _ = regression(300, seed=3)
    reps = np.random.default_rng(4).integers(1, 4, len(X))
    p = params(svm_type=2, nu=0.3)
    sol = solve_weighted(X, None, p, reps.astype(float))
    ref = OneClassSVM(gamma=1.0, tol=TOL, nu=0.3).fit(X.astype(np.float64),
                                                      sample_weight=reps)
    np.testing.assert_allclose(f_of(X, sol), ref.decision_function(X), atol=ATOL)
    assert sol.dual_coef.sum() == pytest.approx(0.3 * reps.sum())
    idx = np.repeat(np.arange(len(X)), reps)
    rep = solve_libsvm(X[idx], None, p)
    np.testing.assert_allclose(f_of(X, sol), decision_values(
        X, X[idx][rep.support], rep.dual_coef, rep.intercept, KERNEL), atol=ATOL)


@pytest.mark.parametrize("solver", ["libsvm", "onedal", "warm"])
def test_collapsed_duplicates_reach_the_optimum_of_the_repeated_rows(solver):
    """A duplicate-heavy set (Zipf counts: one row ~100 times, most once) solved once per
    distinct row with box C x count, by each weighted path (scikit-learn's LIBSVM, oneDAL
    with sample_weight, the warm SMO from a loose solve's alphas), is the optimum of every
    copy solved as a row of its own: the same dual objective and decision values."""
    X, y = moons(300, seed=3)
    pz = 1.0 / np.arange(1, 301)
    idx = np.random.default_rng(4).choice(300, 1_500, p=pz / pz.sum())
    counts = np.bincount(idx, minlength=300).astype(np.float64)
    keep = np.flatnonzero(counts)
    assert counts.max() >= 50 and len(keep) < 300
    ref = solve_libsvm(X[idx], y[idx], params(C=2.0))
    box = 2.0 * counts[keep]
    if solver == "onedal":
        from randsvm_dist.solvers.onedal_backend import onedal_available, solve_onedal

        if not onedal_available():
            pytest.skip("scikit-learn-intelex is not installed")
        sol = solve_onedal(X[keep], y[keep], params(), box)
    elif solver == "warm":
        loose = solve_weighted(X[keep], y[keep], replace(params(), tol=1e-2), box)
        a0 = np.zeros(len(keep))
        a0[loose.support] = np.abs(loose.dual_coef)
        sol = solve_weighted_warm(X[keep], y[keep], params(), box, a0)
    else:
        sol = solve_weighted(X[keep], y[keep], params(), box)
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-5)
    np.testing.assert_allclose(f_of(X[keep], sol), decision_values(
        X[keep], X[idx][ref.support], ref.dual_coef, ref.intercept, KERNEL), atol=ATOL)
