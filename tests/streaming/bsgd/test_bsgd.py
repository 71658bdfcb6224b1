"""BudgetedSGD: merge maths against brute force, plain-BSGD reference, budgets, errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize, minimize_scalar
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_moons
from sklearn.svm import SVC

from randsvm_dist.exceptions import NotFittedError, ParameterError, SchemaError
from randsvm_dist.streaming import BudgetedSGD
from randsvm_dist.streaming.bsgd import _merge as K
from randsvm_dist.streaming.bsgd.budgeted_sgd import merge_points

# -- brute-force references ---------------------------------------------------------------


def weight_degradation(points, alphas, z, alpha_z, gamma) -> float:
    """``|sum_i alpha_i phi(x_i) - alpha_z phi(z)|^2`` for the Gaussian kernel (numpy)."""
    Q = np.vstack([np.asarray(points, dtype=np.float64), np.asarray(z, dtype=np.float64)])
    c = np.append(np.asarray(alphas, dtype=np.float64), -float(alpha_z))
    d2 = np.sum((Q[:, None, :] - Q[None, :, :]) ** 2, axis=2)
    return float(c @ np.exp(-gamma * d2) @ c)


def best_alpha_z(points, alphas, z, gamma):
    """Optimal coefficient of phi(z) for fixed z (k(z, z) = 1)."""
    return float(alphas @ np.exp(-gamma * np.sum((points - z) ** 2, axis=1)))


def wd_at(points, alphas, z, gamma):
    return weight_degradation(points, alphas, z, best_alpha_z(points, alphas, z, gamma), gamma)


def brute_pair_h(am, an, L):
    """Maximize |am e^{-L(1-h)^2} + an e^{-L h^2}| over h on a wide grid, then refine."""
    def neg(h):
        return -abs(am * np.exp(-L * (1 - h) ** 2) + an * np.exp(-L * h * h))
    hs = np.linspace(-20.0, 21.0, 41001)
    h0 = hs[np.argmin(neg(hs))]
    step = hs[1] - hs[0]
    res = minimize_scalar(neg, bounds=(h0 - step, h0 + step), method="bounded",
                          options={"xatol": 1e-12})
    return res.x if res.fun <= neg(h0) else h0


def brute_merge_space(points, alphas, gamma, seed=0):
    """Minimize the degradation over z in R^d (scipy, several starts); returns (z, wd)."""
    rng = np.random.default_rng(seed)
    starts = list(points) + [points.mean(axis=0)]
    starts += [points.mean(axis=0) + rng.normal(scale=points.std() + 0.1, size=points.shape[1])
               for _ in range(4)]
    best = None
    for z0 in starts:
        res = minimize(lambda z: wd_at(points, alphas, z, gamma), z0, method="BFGS",
                       options={"gtol": 1e-12})
        if best is None or res.fun < best.fun:
            best = res
    return best.x, float(best.fun)


# -- merge maths ----------------------------------------------------------------------------

PAIR_CASES = [(a, b, L) for a, b in [(1.0, 0.7), (0.3, 1.2), (-1.0, -0.2), (1.0, -0.4),
                                      (-0.3, 0.9), (1.0, -0.999)]
              for L in (0.01, 0.3, 1.0, 3.0, 9.0)]


@pytest.mark.parametrize("am,an,L", PAIR_CASES)
def test_golden_pair_matches_brute_force_line_search(am, an, L):
    h, az, wd = K.golden_pair(am, an, L, K.GOLDEN_ITERS_MERGE)
    hb = brute_pair_h(am, an, L)
    azb = am * np.exp(-L * (1 - hb) ** 2) + an * np.exp(-L * hb * hb)
    wdb = am * am + an * an + 2 * am * an * np.exp(-L) - azb * azb
    scale = am * am + an * an
    assert wd <= wdb + 1e-9 * scale
    assert wd == pytest.approx(wdb, abs=1e-9 * scale)
    # the reported degradation is the true RKHS distance of the merge
    xm, xn = np.zeros(2), np.array([np.sqrt(L), 0.0])  # gamma = 1: L = |xm - xn|^2
    z = h * xm + (1 - h) * xn
    assert az == pytest.approx(best_alpha_z(np.vstack([xm, xn]), np.array([am, an]), z, 1.0),
                               rel=1e-12, abs=1e-14)
    assert weight_degradation(np.vstack([xm, xn]), np.array([am, an]), z, az, 1.0) == \
        pytest.approx(wd, abs=1e-10 * scale)


@pytest.mark.parametrize("signs", [(1, 1), (1, -1), (-1, 1)])
@pytest.mark.parametrize("method", ["golden", "gradient"])
def test_two_point_merge_is_optimal_over_the_whole_space(signs, method):
    rng = np.random.default_rng(7)
    for trial in range(3):
        P = rng.normal(size=(2, 3))
        a = np.array(signs) * rng.uniform(0.2, 1.0, size=2)
        gamma = 0.4
        z, az = merge_points(P, a, gamma, method)
        wd = weight_degradation(P, a, z, az, gamma)
        _, wd_brute = brute_merge_space(P, a, gamma, seed=trial)
        assert az == pytest.approx(best_alpha_z(P, a, z, gamma), rel=1e-9)
        assert wd <= wd_brute + 1e-7 * np.sum(a * a)
        assert wd == pytest.approx(wd_brute, abs=1e-6 * np.sum(a * a))


@pytest.mark.parametrize("M", [3, 5])
def test_gradient_merge_matches_brute_force_minimization(M):
    rng = np.random.default_rng(M)
    for trial in range(3):
        P = rng.normal(scale=0.6, size=(M, 4))
        a = rng.uniform(0.2, 1.0, size=M) * np.where(rng.random(M) < 0.8, 1, -1)
        a[0] = abs(a[0]) + 0.5  # keep the sum well away from 0
        gamma = 0.5
        z, az = merge_points(P, a, gamma, "gradient")
        wd = weight_degradation(P, a, z, az, gamma)
        _, wd_brute = brute_merge_space(P, a, gamma, seed=trial)
        assert az == pytest.approx(best_alpha_z(P, a, z, gamma), rel=1e-9)
        assert wd == pytest.approx(wd_brute, abs=1e-6 * np.sum(a * a))
        # the chain of binary merges can only be as good or worse than the joint optimum
        zg, azg = merge_points(P, a, gamma, "golden")
        assert weight_degradation(P, a, zg, azg, gamma) >= wd_brute - 1e-6 * np.sum(a * a)


def test_golden_chain_is_a_sequence_of_optimal_binary_merges():
    rng = np.random.default_rng(3)
    P = rng.normal(size=(4, 3))
    a = np.array([0.5, 0.9, -0.3, 0.7])
    gamma = 0.3
    z, az = P[0].copy(), a[0]
    for p in range(1, 4):
        L = gamma * np.sum((z - P[p]) ** 2)
        h = brute_pair_h(az, a[p], L)
        az = az * np.exp(-L * (1 - h) ** 2) + a[p] * np.exp(-L * h * h)
        z = h * z + (1 - h) * P[p]
    zc, azc = merge_points(P, a, gamma, "golden")
    np.testing.assert_allclose(zc, z, atol=1e-6)
    assert azc == pytest.approx(az, rel=1e-8)


def test_merge_points_rejects_bad_input():
    with pytest.raises(ParameterError):
        merge_points(np.zeros((1, 2)), np.ones(1), 1.0)
    with pytest.raises(ParameterError):
        merge_points(np.zeros((2, 2)), np.ones(2), 1.0, method="nope")
    with pytest.raises(ParameterError):
        merge_points(np.zeros((2, 2)), np.ones(2), -1.0)


# -- M=2 against an independent plain-BSGD reference -----------------------------------------


def reference_bsgd(X, y, lam, gamma, budget):
    """Plain BSGD-merge (Wang et al. 2012) in numpy: explicit alpha scaling each step, the
    first merge point is the smallest |alpha|, its partner the best by brute-force line
    search. Storage order mimics the compiled code (merge into the first point's slot, drop
    the partner by moving the last SV into its slot) so ties break the same way."""
    svs, alphas = [], []
    for t, (x, yt) in enumerate(zip(X.astype(np.float64), y), start=1):
        if svs:
            S, A = np.array(svs), np.array(alphas)
            f = A @ np.exp(-gamma * np.sum((S - x) ** 2, axis=1))
        else:
            f = 0.0
        alphas = [a * (1 - 1 / t) for a in alphas]
        if yt * f < 1:
            svs.append(x.copy())
            alphas.append(yt / (lam * t))
            if len(svs) > budget:
                A = np.abs(alphas)  # exact ties (all 1/(lambda t)) break to the lowest slot
                i = int(np.flatnonzero(A <= A.min() * (1 + 1e-9))[0])
                best = (np.inf, -1, 0.0, 0.0)
                for j in range(len(svs)):
                    if j == i:
                        continue
                    L = gamma * np.sum((svs[i] - svs[j]) ** 2)
                    h = brute_pair_h(alphas[i], alphas[j], L)
                    az = alphas[i] * np.exp(-L * (1 - h) ** 2) + alphas[j] * np.exp(-L * h * h)
                    wd = alphas[i] ** 2 + alphas[j] ** 2 + 2 * alphas[i] * alphas[j] * \
                        np.exp(-L) - az * az
                    if wd < best[0]:
                        best = (wd, j, h, az)
                _, j, h, az = best
                svs[i] = h * svs[i] + (1 - h) * svs[j]
                alphas[i] = az
                svs[j], alphas[j] = svs[-1], alphas[-1]
                svs.pop()
                alphas.pop()
    return np.array(svs), np.array(alphas)


@pytest.mark.parametrize("method", ["golden", "gradient"])
def test_merge_size_2_reproduces_plain_bsgd(method):
    X, y = make_moons(250, noise=0.25, random_state=1)
    X = X.astype(np.float32)
    ypm = np.where(y == 1, 1.0, -1.0)
    C, gamma, B = 5.0, 1.5, 12
    est = BudgetedSGD(C=C, gamma=gamma, budget=B, merge_size=2, merge_method=method,
                      average=False).fit(X, y)  # the paper's model: the last iterate
    S, A = reference_bsgd(X, ypm, 1.0 / (len(X) * C), gamma, B)
    assert est.n_maintenance_ > 20  # the budget was really maintained
    assert est.n_support_.sum() == len(A)
    grid = np.random.default_rng(0).uniform(-1.5, 2.5, size=(200, 2))
    ref = A @ np.exp(-gamma * np.sum((S[:, None, :] - grid[None]) ** 2, axis=2))
    np.testing.assert_allclose(est.decision_function(grid), ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())


# -- the estimator --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(2400, noise=0.2, random_state=0)
    return X[:1600], y[:1600], X[1600:], y[1600:]


@pytest.mark.parametrize("method", ["golden", "gradient"])
@pytest.mark.parametrize("M", [2, 3, 5])
def test_budget_never_exceeded(moons, method, M):
    X, y, _, _ = moons
    est = BudgetedSGD(C=10, gamma=2, budget=20, merge_size=M, merge_method=method, random_state=0)
    for s in range(0, len(X), 200):
        est.partial_fit(X[s:s + 200], y[s:s + 200], classes=[0, 1])
        assert est.n_support_.sum() <= 20
        assert est.n_core_ == est.n_support_.sum()
        assert est.learners_[0].n_sv <= 20  # the SGD iterate's own budget
    assert est.n_maintenance_ > 0
    assert est.n_merges_ == est.n_maintenance_ * (M - 1)
    assert est.n_violations_ - est.n_merges_ == est.learners_[0].n_sv


@pytest.mark.parametrize("method", ["golden", "gradient"])
def test_accuracy_close_to_svc_on_moons(moons, method):
    X, y, Xt, yt = moons
    svc = SVC(C=10, gamma=2).fit(X, y).score(Xt, yt)
    est = BudgetedSGD(C=10, gamma=2, budget=60, merge_size=3, merge_method=method, epochs=2,
                      random_state=0).fit(X, y)
    assert est.score(Xt, yt) >= svc - 0.03
    assert est.n_support_.sum() <= 60


def test_more_merges_need_fewer_maintenance_steps(moons):
    X, y, _, _ = moons
    m2 = BudgetedSGD(C=10, gamma=2, budget=20, merge_size=2).fit(X, y)
    m5 = BudgetedSGD(C=10, gamma=2, budget=20, merge_size=5).fit(X, y)
    assert m5.n_maintenance_ < m2.n_maintenance_ / 2


def test_deterministic_by_seed(moons):
    X, y, Xt, _ = moons
    kw = dict(C=10, gamma=2, budget=25, merge_size=3, epochs=3)
    a = BudgetedSGD(random_state=5, **kw).fit(X, y)
    b = BudgetedSGD(random_state=5, **kw).fit(X, y)
    c = BudgetedSGD(random_state=6, **kw).fit(X, y)
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))
    assert not np.array_equal(a.decision_function(Xt), c.decision_function(Xt))


def test_sparse_and_dense_give_the_same_model(moons):
    X, y, Xt, _ = moons
    X = np.hstack([X, np.zeros((len(X), 3))])  # some structural zeros
    Xt = np.hstack([Xt, np.zeros((len(Xt), 3))])
    kw = dict(C=10, gamma=2, budget=25, merge_size=3)
    d = BudgetedSGD(**kw).fit(X, y)
    s = BudgetedSGD(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(s.support_vectors_, d.support_vectors_, rtol=1e-9, atol=1e-12)
    # float32 kernel blocks: sparse and dense dot products round differently, so agreement
    # is to float32's precision relative to the scale of f, not to each (cancelled) value
    fd = d.decision_function(Xt)
    np.testing.assert_allclose(s.decision_function(sp.csr_matrix(Xt)), fd, rtol=1e-5,
                               atol=1e-6 * np.abs(fd).max())


def test_merge_two_learners(moons):
    X, y, Xt, yt = moons
    kw = dict(C=10, gamma=2, budget=30, merge_size=3)
    a = BudgetedSGD(**kw).fit(X[:800], y[:800])
    b = BudgetedSGD(**kw).fit(X[800:], y[800:])
    before = a.dual_coef_.copy()
    ab = a.merge(b)
    assert ab is not a and ab.n_support_.sum() <= 30
    np.testing.assert_array_equal(a.dual_coef_, before)
    assert a.merge_method == "golden"
    assert ab.n_seen_ == len(X)
    assert ab.score(Xt, yt) >= min(a.score(Xt, yt), b.score(Xt, yt)) - 0.03
    assert ab.score(Xt, yt) >= 0.9
    # the merged model is the share-weighted sum before multi-merging back to B
    a2 = BudgetedSGD(**{**kw, "budget": 200}).fit(X[:800], y[:800])
    b2 = BudgetedSGD(**{**kw, "budget": 200}).fit(X[800:], y[800:])
    u = a2.merge(b2)  # no merge needed: union fits in the budget
    expected = 0.5 * a2.decision_function(Xt) + 0.5 * b2.decision_function(Xt)
    np.testing.assert_allclose(u.decision_function(Xt), expected,  # float32 evaluation
                               rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    ab.partial_fit(Xt[:100], yt[:100])  # the merged learner keeps learning
    assert ab.n_support_.sum() <= 30


def test_merge_refuses_different_kernels(moons):
    X, y, _, _ = moons
    a = BudgetedSGD(budget=10).fit(X[:800], y[:800])  # gamma='scale' on each part
    b = BudgetedSGD(budget=10).fit(X[800:] * 2, y[800:])
    with pytest.raises(ParameterError, match="gamma"):
        a.merge(b)


def test_multiclass_one_vs_rest():
    X, y = make_blobs(900, centers=3, cluster_std=1.5, random_state=2)
    est = BudgetedSGD(C=1, gamma=0.5, budget=15, merge_size=3).fit(X[:600], y[:600])
    assert est.score(X[600:], y[600:]) > 0.85  # SVC(C=1, gamma=0.5): 0.91
    assert est.n_support_.shape == (3,) and (est.n_support_ <= 15).all()
    assert est.decision_function(X[:5]).shape == (5, 3)


def test_intercept_and_lambda(moons):
    X, y, Xt, yt = moons
    est = BudgetedSGD(lambda_=1e-4, gamma=2, budget=40, fit_intercept=True).fit(X + 5, y)
    assert est.score(Xt + 5, yt) > 0.85
    rare = X[:, 1] > 0.8  # mostly negatives: the bias (sum of added labels) goes negative
    est = BudgetedSGD(lambda_=1e-4, gamma=2, budget=40, fit_intercept=True).fit(X, rare)
    assert est.intercept_[0] < 0.0
    assert BudgetedSGD(lambda_=1e-4, gamma=2, budget=40).fit(X, rare).intercept_[0] == 0.0
    assert est.lambda_used_[0] == 1e-4
    c = BudgetedSGD(C=2.0, gamma=2, budget=40).fit(X, y)
    assert c.lambda_used_[0] == pytest.approx(1 / (len(X) * 2.0))
    n = BudgetedSGD(C=2.0, gamma=2, budget=40, n_rows=10_000).partial_fit(X[:100], y[:100],
                                                                         classes=[0, 1])
    assert n.lambda_used_[0] == pytest.approx(1 / (10_000 * 2.0))


def test_sklearn_protocol(moons):
    X, y, Xt, _ = moons
    est = BudgetedSGD(C=3, gamma=2, budget=20, merge_method="gradient", merge_size=4)
    assert clone(est).get_params() == est.get_params()
    assert est.get_params()["merge_method"] == "gradient"
    est.set_params(merge_method="golden")
    assert est.merge_method == "golden"
    est.fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(Xt), est.decision_function(Xt))


# -- errors -------------------------------------------------------------------------------


def test_bad_input_errors(moons):
    X, y, _, _ = moons
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(SchemaError, match="NaN"):
        BudgetedSGD(budget=10).fit(Xn, y)
    with pytest.raises(SchemaError, match="one class"):
        BudgetedSGD(budget=10).fit(X, np.zeros(len(X)))
    est = BudgetedSGD(budget=10).fit(X, y)
    with pytest.raises(SchemaError, match="features"):
        est.predict(np.zeros((2, 3)))
    with pytest.raises(SchemaError, match="features"):
        est.partial_fit(np.zeros((2, 3)), [0, 1])
    with pytest.raises(NotFittedError):
        BudgetedSGD().predict(X)


@pytest.mark.parametrize("params,match", [
    (dict(budget=0), "budget"), (dict(budget=2.5), "budget"), (dict(budget="10"), "budget"),
    (dict(merge_size=1), "merge_size"), (dict(budget=3, merge_size=5), "merge_size"),
    (dict(merge_method="fast"), "merge_method"), (dict(C=1, lambda_=0.1), "not both"),
    (dict(C=-1), "C"), (dict(lambda_=0), "lambda_"), (dict(epochs=0), "epochs"),
    (dict(gamma=-2), "gamma"), (dict(gamma="wide"), "gamma"),
    (dict(fit_intercept="yes"), "fit_intercept"), (dict(n_rows=0), "n_rows"),
])
def test_bad_parameters(moons, params, match):
    X, y, _, _ = moons
    with pytest.raises(ParameterError, match=match):
        BudgetedSGD(**params).fit(X[:50], y[:50])
