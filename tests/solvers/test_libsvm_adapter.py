"""solve_libsvm for every supported LIBSVM svm_type (C-SVC, epsilon-SVR, one-class):
decision values as scikit-learn's SVC/SVR/OneClassSVM (the same LIBSVM), and the dual
objective of each kind checked against a primal recomputed in float64 numpy (at LIBSVM's
optimum the duality gap is ~0, so a wrong dual formula shows)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC, SVR, OneClassSVM

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.dual_objective import dual_objective, dual_objective_from_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.solution import BinarySolution, finish_solution

KERNEL = Kernel("rbf", 0.5)


def regression(n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    return X, np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 4 + 0.1 * rng.normal(size=n)


def moons(n=500, seed=0):
    X, y = make_moons(n, noise=0.3, random_state=seed)
    return X.astype(np.float32), np.where(y == 1, 1.0, -1.0)


def f_of(X, sol: BinarySolution, kernel=KERNEL):
    return decision_values(X, X[sol.support], sol.dual_coef, sol.intercept, kernel)


def test_options_per_svm_type():
    assert SolverParams().options().startswith("-s 0 ")
    assert "-w1 1.0 -w-1 1.0" in SolverParams().options()
    svr = SolverParams(svm_type=3, epsilon=0.25).options()
    assert svr.startswith("-s 3 ") and "-p 0.25" in svr and "-w1" not in svr
    oc = SolverParams(svm_type=2, nu=0.3).options()
    assert oc.startswith("-s 2 ") and "-n 0.3" in oc
    with pytest.raises(ParameterError, match="svm_type"):
        SolverParams(svm_type=1)
    with pytest.raises(ParameterError, match="nu"):
        SolverParams(svm_type=2, nu=0.0)
    with pytest.raises(ParameterError, match="epsilon"):
        SolverParams(svm_type=3, epsilon=-1.0)


def test_positional_construction_unchanged():
    """Callers build SolverParams(C, kernel, weight_pos, weight_neg, tol, cache_size)."""
    p = SolverParams(2.0, KERNEL, 3.0, 0.5, 1e-4, 100.0)
    assert (p.C, p.weight_pos, p.weight_neg, p.tol, p.cache_size, p.svm_type) == \
        (2.0, 3.0, 0.5, 1e-4, 100.0, 0)


def test_c_svc_matches_sklearn():
    X, y = moons()
    p = SolverParams(C=3.0, kernel=KERNEL, tol=1e-6)
    sol = solve_libsvm(X, y, p)
    ref = SVC(C=3.0, gamma=0.5, tol=1e-6).fit(X.astype(np.float64), y)
    np.testing.assert_allclose(f_of(X, sol), ref.decision_function(X), atol=1e-4)
    np.testing.assert_array_equal(sol.support, np.sort(ref.support_))
    # the dual objective at the optimum equals the primal over all rows
    m = y * f_of(X, sol)
    quad = np.abs(sol.dual_coef).sum() - sol.dual_objective  # = 1/2 b'Kb
    primal = quad + 3.0 * np.maximum(0, 1 - m).sum()
    assert abs(primal - sol.dual_objective) / primal < 1e-4


@pytest.mark.parametrize("sparse", [False, True])
def test_epsilon_svr_matches_sklearn(sparse):
    X, t = regression()
    Xs = sp.csr_matrix(X) if sparse else X
    p = SolverParams(C=2.0, kernel=KERNEL, tol=1e-6, svm_type=3, epsilon=0.15)
    sol = solve_libsvm(Xs, t, p)
    ref = SVR(C=2.0, gamma=0.5, tol=1e-6, epsilon=0.15).fit(X.astype(np.float64), t)
    f = f_of(X, sol)
    np.testing.assert_allclose(f, ref.predict(X), atol=1e-4)
    np.testing.assert_array_equal(sol.support, np.sort(ref.support_))
    assert np.all(np.abs(sol.dual_coef) <= 2.0 + 1e-9)
    assert abs(sol.dual_coef.sum()) < 1e-8
    # D = -1/2 b'Kb - eps |b|_1 + y'b against P = 1/2 b'Kb + C sum max(0, |y-f| - eps)
    b, S = sol.dual_coef, X[sol.support].astype(np.float64)
    quad = b @ rbf_kernel(S, S, gamma=0.5) @ b
    d = -0.5 * quad - 0.15 * np.abs(b).sum() + t[sol.support] @ b
    assert sol.dual_objective == pytest.approx(d, rel=1e-5)
    primal = 0.5 * quad + 2.0 * np.maximum(0, np.abs(t - f) - 0.15).sum()
    assert abs(primal - sol.dual_objective) / abs(primal) < 1e-4
    assert primal >= sol.dual_objective - 1e-6 * abs(primal)


def test_one_class_matches_sklearn():
    X, _ = regression(400, seed=1)
    p = SolverParams(kernel=KERNEL, tol=1e-6, svm_type=2, nu=0.2)
    sol = solve_libsvm(X, None, p)
    ref = OneClassSVM(gamma=0.5, tol=1e-6, nu=0.2).fit(X.astype(np.float64))
    f = f_of(X, sol)
    np.testing.assert_allclose(f, ref.decision_function(X), atol=1e-4)
    np.testing.assert_array_equal(sol.support, np.sort(ref.support_))
    # LIBSVM's scaling: box 1, sum alpha = nu l
    assert sol.dual_coef.sum() == pytest.approx(0.2 * 400)
    assert np.all((sol.dual_coef > 0) & (sol.dual_coef <= 1 + 1e-12))
    assert sol.intercept == pytest.approx(ref.intercept_[0])
    # D = -1/2 a'Ka against P = 1/2 a'Ka - nu l rho + sum max(0, rho - g(x_i))
    a, S = sol.dual_coef, X[sol.support].astype(np.float64)
    quad = a @ rbf_kernel(S, S, gamma=0.5) @ a
    assert sol.dual_objective == pytest.approx(-0.5 * quad, rel=1e-5)
    rho = -sol.intercept
    g = f - sol.intercept  # f = g - rho
    primal = 0.5 * quad - 0.2 * 400 * rho + np.maximum(0, rho - g).sum()
    assert abs(primal - sol.dual_objective) / abs(primal) < 1e-4
    # the targets are ignored
    again = solve_libsvm(X, np.full(400, 7.0), p)
    np.testing.assert_array_equal(again.support, sol.support)


def test_dual_objective_requires_svr_targets():
    with pytest.raises(ParameterError, match="targets"):
        dual_objective(np.ones((1, 2), np.float32), np.ones(1), KERNEL, svm_type=3)


def test_degenerate_problems():
    X = np.ones((3, 2), np.float32)
    one = solve_libsvm(X, -np.ones(3), SolverParams(kernel=KERNEL))
    assert len(one.support) == 0 and one.intercept == -1.0
    empty = solve_libsvm(X[:0], np.empty(0), SolverParams(kernel=KERNEL, svm_type=3))
    assert len(empty.support) == 0 and empty.dual_objective == 0.0


@pytest.mark.parametrize("svm_type", [0, 2, 3])
def test_dual_objective_from_the_support_vectors_decision_values(svm_type):
    """The dual objective from a scan's decision values of the support vectors (no kernel
    pass) is the one from the kernel over them, for every kind."""
    X, y = regression() if svm_type == 3 else moons()
    params = SolverParams(C=2.0, kernel=KERNEL, svm_type=svm_type, nu=0.3, epsilon=0.1)
    sol = solve_libsvm(X, y, params)
    f_sv = f_of(X, sol)[sol.support].astype(np.float32)  # as a scan stores them
    targets = y[sol.support] if svm_type == 3 else None
    got = dual_objective_from_values(f_sv, sol.dual_coef, sol.intercept, svm_type, targets,
                                     params.epsilon)
    assert got == pytest.approx(sol.dual_objective, rel=1e-6)
    assert dual_objective_from_values(np.empty(0), np.empty(0), 0.3, svm_type) == 0.0
    no_objective = finish_solution(X, y, sol.support[::-1], sol.dual_coef[::-1],
                                   sol.intercept, params, objective=False)
    assert no_objective.dual_objective is None
    np.testing.assert_array_equal(no_objective.support, sol.support)
    np.testing.assert_array_equal(no_objective.dual_coef, sol.dual_coef)
