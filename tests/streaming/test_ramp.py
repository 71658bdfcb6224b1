"""OnlineRampSVM (OnlineSVMR / OnlineASVMR): KKT, offline CCCP, removal, active, merge, errors.

The reference computations here are independent of the learner: Gram matrices from
scikit-learn in float64, and box-constrained QPs solved exactly by a primal active-set
method (least-squares solves on the free variables), nothing like the learner's SMO.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel

from randsvm_dist.data import make_arrays
from randsvm_dist.exceptions import NotFittedError, ParameterError, SchemaError
from randsvm_dist.streaming import OnlineRampSVM

TIGHT = dict(tol=1e-6, gain_tol=1e-14)


# -- independent references --------------------------------------------------------------
def box_qp(Q: np.ndarray, C: float) -> np.ndarray:
    """argmax 1'a - a'Qa/2 subject to 0 <= a <= C, exactly, by a primal active-set method
    (free variables solved by least squares; bounds added on blocking, dropped by the sign
    of their multiplier)."""
    n = len(Q)
    a = np.zeros(n)
    free = np.zeros(n, bool)
    for _ in range(50 * n + 100):
        if free.any():
            fixed = ~free
            rhs = 1.0 - Q[np.ix_(free, fixed)] @ a[fixed]
            target = np.linalg.lstsq(Q[np.ix_(free, free)], rhs, rcond=1e-13)[0]
            cur = a[free]
            step = target - cur
            with np.errstate(divide="ignore", invalid="ignore"):
                t_hi = np.where(step > 0, (C - cur) / step, np.inf)
                t_lo = np.where(step < 0, -cur / step, np.inf)
            t_all = np.minimum(t_hi, t_lo)
            t = min(1.0, float(t_all.min()))
            a[free] = cur + t * step
            if t < 1.0:
                block = np.flatnonzero(free)[np.argmin(t_all)]
                a[block] = C if step[np.argmin(t_all)] > 0 else 0.0
                free[block] = False
                continue
        grad = 1.0 - Q @ a
        bad = np.where(~free & (a <= 0) & (grad > 1e-12), grad, 0.0)
        bad = np.maximum(bad, np.where(~free & (a >= C) & (grad < -1e-12), -grad, 0.0))
        if bad.max() <= 1e-12:
            return np.clip(a, 0, C)
        free[np.argmax(bad)] = True
    raise AssertionError("active-set QP did not converge")


def offline_cccp(K, y, C, s=-1.0, init_v=None, max_iter=100):
    """Offline CCCP of the ramp-loss SVM: SVM on V, reassign V = {y f >= s}, until stable.

    Returns (alpha, f, V, iterations)."""
    n = len(y)
    V = np.ones(n, bool) if init_v is None else init_v.copy()
    for it in range(max_iter):
        Q = (y[:, None] * y[None, :] * K)[np.ix_(V, V)]
        a = np.zeros(n)
        a[V] = box_qp(Q, C)
        f = K @ (a * y)
        new_v = y * f >= s
        if (new_v == V).all():
            return a, f, V, it
        V = new_v
    raise AssertionError("offline CCCP did not converge")


def incremental_offline_cccp(K, y, C, s=-1.0):
    """The optimal ramp SVM on t+1 points by offline CCCP started from the one on t points."""
    a = np.zeros(len(y))
    for t in range(1, len(y) + 1):
        f = K[:t, :t] @ (a[:t] * y[:t])
        a[:t] = offline_cccp(K[:t, :t], y[:t], C, s, init_v=y[:t] * f >= s)[0]
    return a


def kkt_violation(K, y, alpha, C, s=-1.0) -> float:
    """Largest violation of the ramp-loss KKT conditions, from the Gram matrix."""
    g = 1.0 - y * (K @ (alpha * y))
    inside = g <= 1 - s
    v = np.zeros_like(g)
    v = np.maximum(v, np.where(inside & (alpha < C), g, 0))
    v = np.maximum(v, np.where(inside & (alpha > 0), -g, 0))
    v = np.maximum(v, np.where(~inside & (alpha > 0), np.inf, 0))
    return float(v.max())


def ramp_objective(K, y, alpha, C, s=-1.0) -> float:
    f = K @ (alpha * y)
    return 0.5 * (alpha * y) @ f + C * np.minimum(1 - s, np.maximum(0, 1 - y * f)).sum()


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def kept(clf):
    k = clf.learners_[0].kept()
    return dense(k["X"]).astype(np.float64), k


@pytest.fixture(scope="module")
def noisy():
    X, y = make_arrays("noisy_checkerboard", 300, 3)
    return X, y.astype(float)


# -- KKT on the active set ---------------------------------------------------------------
@pytest.mark.parametrize("C,gamma", [(10.0, 1.0), (1.0, 0.5)])
def test_kkt_after_stream_dense(noisy, C, gamma):
    X, y = noisy
    clf = OnlineRampSVM(C=C, gamma=gamma, **TIGHT)
    for a in range(0, len(y), 50):
        clf.partial_fit(X[a:a + 50], y[a:a + 50], classes=[-1.0, 1.0])
    Xk, k = kept(clf)
    assert len(k["y"]) == len(y)  # no removal: every point kept
    K = rbf_kernel(Xk, gamma=gamma)
    assert kkt_violation(K, k["y"], k["alpha"], C) < 1e-4
    # the ramp region: every SV has y f in [-1, 1]
    f = K @ (k["alpha"] * k["y"])
    sv = k["alpha"] > 0
    assert np.all(k["y"][sv] * f[sv] >= -1 - 1e-6) and np.all(k["y"][sv] * f[sv] <= 1 + 1e-4)
    assert clf.n_support_ == int(sv.sum())
    # noisy data: some points end outside V (the ramp loss ignores them)
    assert (~k["in_v"]).sum() > 0
    np.testing.assert_allclose(clf.decision_function(X), rbf_kernel(X, Xk, gamma=gamma)
                               @ (k["alpha"] * k["y"]), atol=1e-4)


def test_kkt_sparse_linear_and_same_as_dense():
    rng = np.random.default_rng(0)
    Xd = rng.standard_normal((250, 30)) * (rng.random((250, 30)) < 0.2)
    y = np.where(Xd[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(250) > 0, 1.0, -1.0)
    Xs = sp.csr_matrix(Xd)
    a = OnlineRampSVM(C=2.0, kernel="linear", **TIGHT).fit(Xs, y)
    b = OnlineRampSVM(C=2.0, kernel="linear", **TIGHT).fit(Xd, y)
    Xk, k = kept(a)
    K = linear_kernel(Xk)
    assert kkt_violation(K, k["y"], k["alpha"], 2.0) < 1e-4
    np.testing.assert_allclose(a.decision_function(Xd), b.decision_function(Xs), atol=1e-4)
    # sparse rbf as well
    c = OnlineRampSVM(C=2.0, gamma=0.05, **TIGHT).fit(Xs, y)
    Xk, k = kept(c)
    assert kkt_violation(rbf_kernel(Xk, gamma=0.05), k["y"], k["alpha"], 2.0) < 1e-4


def test_default_stopping_rules_bound_the_violation(noisy):
    X, y = noisy
    clf = OnlineRampSVM(C=10.0, gamma=1.0).fit(X, y)  # paper's 1e-3 / 1e-5
    Xk, k = kept(clf)
    K = rbf_kernel(Xk, gamma=1.0)
    g = 1 - k["y"] * (K @ (k["alpha"] * k["y"]))
    free = (k["alpha"] > 1e-2) & (k["alpha"] < 10 - 1e-2)
    # the gain rule stops at |g| ~ sqrt(2e-5 Q_jj) for free variables
    assert np.abs(g[free]).max() < 0.01
    assert clf.learners_[0].kkt_violation() < 0.1
    assert not np.any((g > 2) & (k["alpha"] > 0))


# -- against offline CCCP ----------------------------------------------------------------
@pytest.mark.parametrize("name,C,gamma,seed", [("noisy_checkerboard", 10.0, 1.0, 0),
                                               ("gauss", 1.0, 0.5, 1)])
def test_matches_offline_cccp_started_from_previous_solution(name, C, gamma, seed):
    """The paper's claim: the solution on t+1 examples is the offline CCCP solution started
    from the one on t examples (exact QPs here)."""
    X, y = make_arrays(name, 70, seed)
    y = y.astype(float)
    K = rbf_kernel(X.astype(np.float64), gamma=gamma)
    a_ref = incremental_offline_cccp(K, y, C)
    clf = OnlineRampSVM(C=C, gamma=gamma, **TIGHT).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X), K @ (a_ref * y), atol=1e-3)
    assert clf.n_support_ == int((a_ref > 1e-7).sum())
    assert ramp_objective(K, y, clf.learners_[0].kept()["alpha"], C) == pytest.approx(
        ramp_objective(K, y, a_ref, C), rel=1e-5)


def test_is_a_fixed_point_of_offline_cccp(noisy):
    X, y = noisy
    X, y = X[:200], y[:200]
    clf = OnlineRampSVM(C=10.0, gamma=1.0, **TIGHT).fit(X, y)
    Xk, k = kept(clf)
    K = rbf_kernel(Xk, gamma=1.0)
    a, f, V, it = offline_cccp(K, k["y"], 10.0, init_v=k["in_v"])
    assert it == 0 and np.array_equal(V, k["in_v"])
    np.testing.assert_allclose(clf.decision_function(Xk.astype(np.float32)), f, atol=1e-3)


def test_separable_data_gives_the_zero_bias_hinge_svm():
    X, y = make_arrays("clusters2", 150, 0)
    X = X * 3  # well separated: no point ever leaves V, so ramp = hinge
    y = y.astype(float)
    K = rbf_kernel(X.astype(np.float64), gamma=0.5)
    a = box_qp(y[:, None] * y[None, :] * K, 1.0)
    clf = OnlineRampSVM(C=1.0, gamma=0.5, **TIGHT).fit(X, y)
    assert kept(clf)[1]["in_v"].all()
    np.testing.assert_allclose(clf.decision_function(X), K @ (a * y), atol=1e-3)


# -- removal step ------------------------------------------------------------------------
@pytest.mark.parametrize("m", [0, 5, 40])
def test_removal_keeps_at_most_m_non_svs(noisy, m):
    X, y = noisy
    clf = OnlineRampSVM(C=10.0, gamma=1.0, max_non_sv=m, **TIGHT)
    for a in range(0, len(y), 30):
        clf.partial_fit(X[a:a + 30], y[a:a + 30], classes=[-1.0, 1.0])
        k = clf.learners_[0].kept()
        assert int((k["alpha"] == 0).sum()) <= m
    Xk, k = kept(clf)
    assert clf.n_kept_ == clf.n_support_ + int((k["alpha"] == 0).sum()) < len(y)
    assert kkt_violation(rbf_kernel(Xk, gamma=1.0), k["y"], k["alpha"], 10.0) < 1e-4
    if m == 40:
        # the kept non-SVs are the ones closest to the boundary (|1 - g| = |f| smallest)
        f = np.abs(1 - k["g"])[k["alpha"] == 0]
        assert len(f) == m


def test_removal_drops_the_first_of_a_stable_sort():
    """The removal step's selection is the first k of a stable argsort: ties by position."""
    from randsvm_dist.streaming._select import first_of_stable_sort

    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 50))
        key = (rng.integers(0, 4, n) if trial % 2 else rng.standard_normal(n)).astype(float)
        k = int(rng.integers(1, n + 1))
        np.testing.assert_array_equal(first_of_stable_sort(key, k),
                                      np.argsort(key, kind="stable")[:k])


def test_removal_with_large_m_equals_no_removal(noisy):
    X, y = noisy
    a = OnlineRampSVM(C=10.0, gamma=1.0, max_non_sv=10_000).fit(X, y)
    b = OnlineRampSVM(C=10.0, gamma=1.0).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


# -- active variant ----------------------------------------------------------------------
def test_active_queries_fewer_labels_and_ignores_the_others(noisy):
    X, y = noisy
    full = OnlineRampSVM(C=10.0, gamma=1.0).fit(X, y)
    act = OnlineRampSVM(C=10.0, gamma=1.0, active=True).fit(X, y)
    assert full.n_labels_queried_ == len(y)
    assert 0 < act.n_labels_queried_ < len(y)
    mask = act.learners_[0].last_query_mask
    assert mask.sum() == act.n_labels_queried_
    # labels that were not queried cannot matter: flip them all, same model
    y2 = np.where(mask, y, -y)
    act2 = OnlineRampSVM(C=10.0, gamma=1.0, active=True).fit(X, y2)
    np.testing.assert_array_equal(act.decision_function(X), act2.decision_function(X))
    assert act.score(X, y) > 0.6
    assert act.kernel_evals_ < full.kernel_evals_


# -- determinism, API --------------------------------------------------------------------
def test_deterministic_and_batching_invariant(noisy):
    X, y = noisy
    a = OnlineRampSVM(C=10.0, gamma=1.0, random_state=1).fit(X, y)
    b = OnlineRampSVM(C=10.0, gamma=1.0, random_state=1).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.kernel_evals_ == b.kernel_evals_ and a.smo_steps_ == b.smo_steps_
    c = OnlineRampSVM(C=10.0, gamma=1.0, random_state=1, **TIGHT)
    for i in range(0, len(y), 7):
        c.partial_fit(X[i:i + 7], y[i:i + 7], classes=[-1.0, 1.0])
    d = OnlineRampSVM(C=10.0, gamma=1.0, random_state=1, **TIGHT).fit(X, y)
    np.testing.assert_allclose(c.decision_function(X), d.decision_function(X), atol=1e-3)


def test_multiclass_one_vs_rest():
    X, y = make_arrays("waveform", 300, 0)
    clf = OnlineRampSVM(C=1.0, gamma="scale").fit(X, y)
    assert len(clf.learners_) == 3
    assert clf.decision_function(X).shape == (300, 3)
    assert clf.n_support_ == sum(lr.n_support for lr in clf.learners_)
    Xt, yt = make_arrays("waveform", 500, 1)
    assert clf.score(Xt, yt) > 0.75
    assert set(np.unique(clf.predict(Xt))) <= {0, 1, 2}


def test_pickle_clone_params(noisy):
    X, y = noisy
    clf = OnlineRampSVM(C=3.0, gamma=1.0, max_non_sv=10).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    back.partial_fit(X[:20], y[:20])
    c = clone(clf)
    assert c.get_params()["max_non_sv"] == 10 and not hasattr(c, "learners_")


# -- merge -------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [None, 20])
def test_merge_restores_kkt_on_the_union(m):
    X, y = make_arrays("noisy_checkerboard", 400, 5)
    y = y.astype(float)
    a = OnlineRampSVM(C=10.0, gamma=1.0, max_non_sv=m, **TIGHT).fit(X[:200], y[:200])
    b = OnlineRampSVM(C=10.0, gamma=1.0, max_non_sv=m, **TIGHT).fit(X[200:], y[200:])
    fa, fb = a.decision_function(X), b.decision_function(X)
    ab = a.merge(b)
    np.testing.assert_array_equal(a.decision_function(X), fa)  # inputs unchanged
    np.testing.assert_array_equal(b.decision_function(X), fb)
    Xk, k = kept(ab)
    if m is None:
        assert len(k["y"]) == 400
    else:
        assert int((k["alpha"] == 0).sum()) <= m
    assert kkt_violation(rbf_kernel(Xk, gamma=1.0), k["y"], k["alpha"], 10.0) < 1e-4
    assert ab.n_seen_ == 400 and ab.n_labels_queried_ == 400
    assert ab.kernel_evals_ > a.kernel_evals_ + b.kernel_evals_
    Xt, yt = make_arrays("checkerboard", 1000, 6)
    assert ab.score(Xt, yt) > 0.7
    ab.partial_fit(X[:10], y[:10])  # keeps learning


def test_merge_rejects_different_kernels(noisy):
    X, y = noisy
    a = OnlineRampSVM(gamma=1.0).fit(X, y)
    b = OnlineRampSVM(gamma=2.0).fit(X, y)
    with pytest.raises(ParameterError, match="gamma 1.0 and 2.0"):
        a.merge(b)


# -- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,match", [
    (dict(C=0), "C must be > 0"),
    (dict(C="x"), "C must be a number"),
    (dict(s=1.0), "s must be"),
    (dict(s=float("nan")), "s must be"),
    (dict(max_non_sv=-1), "max_non_sv"),
    (dict(max_non_sv=2.5), "max_non_sv"),
    (dict(active="yes"), "active"),
    (dict(kernel="cubic"), "kernel must be"),
    (dict(gamma=-1.0), "gamma must be > 0"),
    (dict(gamma="big"), "gamma must be"),
    (dict(tol=0), "tol must be > 0"),
])
def test_bad_parameters(noisy, kw, match):
    X, y = noisy
    with pytest.raises(ParameterError, match=match):
        OnlineRampSVM(**kw).fit(X, y)


def test_bad_data(noisy):
    X, y = noisy
    with pytest.raises(NotFittedError):
        OnlineRampSVM().predict(X)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(SchemaError, match="row 3"):
        OnlineRampSVM().fit(Xn, y)
    with pytest.raises(SchemaError, match="one class"):
        OnlineRampSVM().fit(X, np.ones(len(y)))
    clf = OnlineRampSVM(gamma=1.0).fit(X, y)
    with pytest.raises(SchemaError, match="features"):
        clf.predict(np.zeros((2, 3)))
    with pytest.raises(SchemaError, match="labels for"):
        OnlineRampSVM().fit(X, y[:-1])
    with pytest.raises(SchemaError, match="not among classes"):
        clf.partial_fit(X[:2], [1.0, 7.0])
