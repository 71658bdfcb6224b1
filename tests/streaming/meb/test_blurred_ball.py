"""Blurred Ball SVM: cover invariants in the augmented space, rules, merge, API, errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.streaming import BlurredBallSVM, StreamSVM
from randsvm_dist.streaming.meb._balls import ST_NSTORE
from randsvm_dist.streaming.meb._cover import BallCover
from randsvm_dist.streaming.meb.blurred_ball import _BlurredCover


def blobs(n=40, d=3, seed=0, sep=1.0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, d)) + sep * y[:, None] * np.ones(d) / np.sqrt(d)
    return X.astype(np.float32), y


def augmented(X, y, C):
    n = len(y)
    return np.hstack([y[:, None] * np.asarray(X, np.float64), y[:, None],
                      np.eye(n) / np.sqrt(C)])


def cover(d, C=1.0, L=1, eps=0.1, kmax=8, dual=True, rule="score", points=False):
    return _BlurredCover(d, C=C, lookahead=L, epsilon=eps, max_balls=kmax, kernel="linear",
                         gamma="scale", degree=3, coef0=0.0, fit_intercept=True, dual=dual,
                         rule=rule, coreset=points)


def exact_meb(P):
    """Exact MEB radius and centre of the rows of P (SLSQP on the dual QP)."""
    from scipy.optimize import minimize

    G = P @ P.T
    n = len(P)
    dg = np.diag(G)
    res = minimize(lambda a: -(a @ dg - a @ G @ a), np.full(n, 1.0 / n),
                   jac=lambda a: -(dg - 2 * G @ a), method="SLSQP", bounds=[(0, 1)] * n,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1,
                                 "jac": lambda a: np.ones(n)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    c = res.x @ P
    return float(np.sqrt(np.max(((P - c) ** 2).sum(1)))), c


def explicit_centers(cov: BallCover, X, y):
    """All ball centres of a flushed dual linear cover as explicit augmented vectors."""
    m = int(cov.st[ST_NSTORE])
    X64 = np.asarray(X, np.float64)
    rows = [int(np.flatnonzero(np.all(X64 == cov.S[s], axis=1))[0]) for s in range(m)]
    out = []
    for j in range(cov.n_balls):
        c = np.zeros(X.shape[1] + 1 + len(y))
        for s, r in enumerate(rows):
            c[: X.shape[1]] += cov.A[j, s] * X64[r]
            c[X.shape[1] + 1 + r] = cov.A[j, s] * y[r] / np.sqrt(cov.C)
        c[X.shape[1]] = cov.bb[j]
        out.append(c)
    return np.array(out)


@pytest.mark.parametrize("L,eps", [(1, 0.05), (4, 0.2), (3, 0.0)])
def test_cover_invariants_after_every_point(L, eps):
    X, y = blobs(40, 3, seed=1)
    C = 2.0
    P = augmented(X, y, C)
    cov = cover(3, C=C, L=L, eps=eps, kmax=5)
    for i in range(len(y)):
        cov.partial_fit(X[i:i + 1], y[i:i + 1])
        f = cov.flushed()
        cs = explicit_centers(f, X, y)
        r = f.rr[: f.n_balls]
        dist = np.sqrt(((P[: i + 1, None, :] - cs[None]) ** 2).sum(-1))  # (points, balls)
        # skipped points were in some (1+eps)B_i and B_i lies inside the newest ball,
        # so every point seen is within (1+eps) r of the newest centre
        assert dist[:, -1].max() <= (1 + eps) * r[-1] * (1 + 1e-9) + 1e-12
        if eps == 0:
            assert dist[:, -1].max() <= r[-1] * (1 + 1e-9) + 1e-12
        # balls are nested: every ball lies inside the newest one
        gap = np.linalg.norm(cs - cs[-1], axis=1) + r
        assert gap.max() <= r[-1] * (1 + 1e-9) + 1e-12
        # radii increase with age order; small balls were discarded; cap respected
        assert np.all(np.diff(r) >= -1e-12)
        assert f.n_balls <= 5
        if eps > 0:
            assert r.min() >= 0.25 * eps * r[-1] - 1e-12
        # stored xi^2 and |w|^2 + b^2 agree with the explicit centres
        np.testing.assert_allclose(f.ee[: f.n_balls], (cs[:, 4:] ** 2).sum(1), rtol=1e-8)
        np.testing.assert_allclose(f.Q[: f.n_balls], (cs[:, :4] ** 2).sum(1), rtol=1e-8)


def core_rows(cov, X):
    """Row indices (into X) of each live ball's core points."""
    m = int(cov.st[ST_NSTORE])
    X64 = np.asarray(X, np.float64)
    rows = [int(np.flatnonzero(np.all(X64 == cov.S[s], axis=1))[0]) for s in range(m)]
    return [[rows[s] for s in range(m) if cov.A[j, s] != 0] for j in range(cov.n_balls)]


@pytest.mark.parametrize("L,eps", [(1, 0.05), (3, 0.01), (5, 0.3)])
def test_core_set_cover_each_ball_is_the_meb_of_its_core_set(L, eps):
    X, y = blobs(36, 3, seed=11)
    C = 1.5
    P = augmented(X, y, C)
    cov = cover(3, C=C, L=L, eps=eps, kmax=4, points=True)
    checked = 0
    for i in range(len(y)):
        cov.partial_fit(X[i:i + 1], y[i:i + 1])
        f = cov.flushed()
        cs = explicit_centers(f, X, y)
        cores = core_rows(f, X)
        r = f.rr[: f.n_balls]
        assert f.n_balls <= 4
        if eps > 0:
            assert r.min() >= 0.25 * eps * r[-1] - 1e-12
        # the newest ball encloses the core points of every live ball
        every = sorted({k for core in cores for k in core})
        d_new = np.sqrt(((P[every] - cs[-1]) ** 2).sum(1))
        assert d_new.max() <= r[-1] * (1 + 1e-9) + 1e-12
        # each ball is the exact MEB of its own core set (checked on a few prefixes)
        if i % 7 == 6 or i == len(y) - 1:
            for j, core in enumerate(cores):
                r_opt, c_opt = exact_meb(P[core])
                assert r[j] == pytest.approx(r_opt, rel=1e-6, abs=1e-9)
                np.testing.assert_allclose(cs[j], c_opt, atol=1e-5)
                checked += 1
        np.testing.assert_allclose(f.ee[: f.n_balls], (cs[:, 4:] ** 2).sum(1), rtol=1e-8)
        np.testing.assert_allclose(f.Q[: f.n_balls], (cs[:, :4] ** 2).sum(1), rtol=1e-8)
    assert checked >= 5


def test_core_set_merge_encloses_both_core_sets():
    X, y = blobs(60, 3, seed=12)
    C = 1.0
    a = cover(3, C=C, L=3, eps=0.05, kmax=4, points=True).partial_fit(X[:30], y[:30])
    b = cover(3, C=C, L=3, eps=0.05, kmax=4, points=True).partial_fit(X[30:], y[30:])
    m = a.merge(b)
    assert m.n_balls <= 4
    P = augmented(X, y, C)
    cs = explicit_centers(m, X, y)
    inputs = {k for cov in (a.flushed(), b.flushed()) for core in core_rows(cov, X)
              for k in core}
    d = np.sqrt(((P[sorted(inputs)] - cs[-1]) ** 2).sum(1))
    assert d.max() <= m.rr[m.n_balls - 1] * (1 + 1e-9)
    r_opt, _ = exact_meb(P[sorted(inputs)])
    assert m.rr[m.n_balls - 1] == pytest.approx(r_opt, rel=1e-6)
    assert m.n_core == len({k for core in core_rows(m, X) for k in core})


def test_core_set_cover_beats_nested_balls_on_overlapping_data():
    X, y = blobs(3000, 10, seed=13, sep=1.5)
    Xt, yt = blobs(2000, 10, seed=14, sep=1.5)
    pts = BlurredBallSVM(kernel="linear", C=1.0, epsilon=0.01, lookahead=10).fit(X, y)
    nested = BlurredBallSVM(kernel="linear", C=1.0, epsilon=0.01, lookahead=10,
                            cover="balls").fit(X, y)
    assert pts.score(Xt, yt) > nested.score(Xt, yt)


@pytest.mark.parametrize("points", [False, True])
def test_points_inside_the_blurred_cover_cause_no_update(points):
    if points:
        X, y = blobs(300, 4, seed=2)
        cov = cover(4, L=1, eps=0.5, points=True).partial_fit(X, y)
        state = (cov.A.copy(), cov.rr.copy(), cov.n_balls, cov.n_core)
        d2 = cov.sq_distances(X, y)
        lim = ((1 + cov.eps) * cov.rr[: cov.n_balls]) ** 2
        inside = (d2 <= lim).any(axis=1)
        assert inside.sum() > 10
        cov.partial_fit(X[inside], y[inside])
        np.testing.assert_array_equal(cov.A, state[0])
        assert (cov.n_balls, cov.n_core) == state[2:]
        return
    _no_update_balls()


def _no_update_balls():
    X, y = blobs(300, 4, seed=2)
    cov = cover(4, L=1, eps=0.5, dual=False).partial_fit(X, y)
    state = (cov.W.copy(), cov.rr.copy(), cov.n_balls, cov.n_core)
    d2 = cov.sq_distances(X, y)
    lim = ((1 + cov.eps) * cov.rr[: cov.n_balls]) ** 2
    inside = (d2 <= lim).any(axis=1)
    assert inside.sum() > 10
    cov.partial_fit(X[inside], y[inside])
    np.testing.assert_array_equal(cov.W, state[0])
    np.testing.assert_array_equal(cov.rr, state[1])
    assert (cov.n_balls, cov.n_core) == state[2:]
    # a larger epsilon uses fewer points
    few = cover(4, L=1, eps=1.0, dual=False).partial_fit(X, y)
    many = cover(4, L=1, eps=0.0, dual=False).partial_fit(X, y)
    assert few.n_core < many.n_core


def test_zero_epsilon_single_ball_is_streamsvm():
    X, y = blobs(500, 5, seed=3)
    for L in (1, 7):
        bb = BlurredBallSVM(kernel="linear", epsilon=0.0, max_balls=1, lookahead=L, rule="largest",
                            cover="balls").fit(X, y)
        ss = StreamSVM(kernel="linear", lookahead=L).fit(X, y)
        np.testing.assert_allclose(bb.decision_function(X), ss.decision_function(X),
                                   rtol=1e-12, atol=1e-12)
        assert bb.n_core_ == ss.n_core_


def test_rules_and_set_params():
    X, y = blobs(3000, 5, seed=4, sep=2.0)
    m = BlurredBallSVM(kernel="linear", C=1.0, epsilon=0.05, lookahead=5, max_balls=16).fit(X, y)
    assert m.n_balls_ > 1
    scores = {}
    for rule in ("score", "support", "largest"):
        m.set_params(rule=rule)
        scores[rule] = m.decision_function(X)
        assert m.score(X, y) > 0.8
    assert not np.allclose(scores["score"], scores["largest"])
    with pytest.raises(ParameterError):
        m.set_params(rule="vote")


def test_merge_encloses_both_inputs():
    X, y = blobs(60, 3, seed=5)
    C = 1.0
    a = cover(3, C=C, L=3, eps=0.1, kmax=4).partial_fit(X[:30], y[:30])
    b = cover(3, C=C, L=3, eps=0.1, kmax=4).partial_fit(X[30:], y[30:])
    m = a.merge(b)
    P = augmented(X, y, C)
    cs = explicit_centers(m, X, y)
    r = m.rr[: m.n_balls]
    assert m.n_balls <= 4
    dist = np.sqrt(((P - cs[-1]) ** 2).sum(1))
    assert dist.max() <= 1.1 * r[-1] * (1 + 1e-9)
    for inp in (a.flushed(), b.flushed()):
        ci = explicit_centers(inp, X, y)[-1]
        assert np.linalg.norm(ci - cs[-1]) + inp.radius() <= r[-1] * (1 + 1e-9)
    # estimator level
    ea = BlurredBallSVM(kernel="linear", lookahead=3).fit(X[:30], y[:30])
    eb = BlurredBallSVM(kernel="linear", lookahead=3).fit(X[30:], y[30:])
    em = ea.merge(eb)
    assert em.n_seen_ == 60 and em.predict(X).shape == (60,)


def test_sparse_equals_dense_and_determinism():
    rng = np.random.default_rng(6)
    X, y = blobs(500, 40, seed=6)
    X[rng.random(X.shape) < 0.75] = 0
    for kernel in ("linear", "rbf"):
        kw = dict(epsilon=0.05, lookahead=4, kernel=kernel, gamma=0.05, random_state=1)
        a = BlurredBallSVM(**{"kernel": "linear", "lookahead": 10, **kw}).fit(X, y)
        b = BlurredBallSVM(**{"kernel": "linear", "lookahead": 10, **kw}).fit(sp.csr_matrix(X), y)
        c = BlurredBallSVM(**{"kernel": "linear", "lookahead": 10, **kw}).fit(X, y)
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(a.decision_function(X), c.decision_function(X))
        assert a.n_core_ == b.n_core_


def test_kernel_and_multiclass():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, size=(1200, 2)).astype(np.float32)
    y = np.where((X ** 2).sum(1) < 0.5, 1, -1)
    m = BlurredBallSVM(C=10.0, epsilon=0.05, lookahead=10, kernel="rbf", gamma=2.0).fit(X, y)
    assert m.score(X, y) > 0.8
    centers = np.array([[4, 0], [-4, 0], [0, 4]], dtype=float)
    lab = rng.integers(0, 3, 900)
    Xm = (centers[lab] + rng.normal(size=(900, 2))).astype(np.float32)
    mm = BlurredBallSVM(kernel="linear", lookahead=5).fit(Xm, lab)
    assert mm.decision_function(Xm).shape == (900, 3)
    assert mm.score(Xm, lab) > 0.9


def test_bad_input_and_parameters():
    X, y = blobs(50, 3)
    bad = X.copy()
    bad[3, 0] = np.inf
    with pytest.raises(SchemaError, match="NaN or infinite"):
        BlurredBallSVM(kernel="linear", lookahead=10).fit(bad, y)
    with pytest.raises(SchemaError, match="one class"):
        BlurredBallSVM(kernel="linear", lookahead=10).fit(X, np.zeros(50))
    m = BlurredBallSVM(kernel="linear", lookahead=10).fit(X, y)
    with pytest.raises(SchemaError, match="features"):
        m.decision_function(np.zeros((2, 5)))
    for kw in ({"epsilon": -0.1}, {"epsilon": "big"}, {"max_balls": 0}, {"rule": "vote"},
               {"lookahead": 0}, {"C": 0.0}):
        with pytest.raises(ParameterError):
            BlurredBallSVM(**{"kernel": "linear", "lookahead": 10, **kw}).fit(X, y)
