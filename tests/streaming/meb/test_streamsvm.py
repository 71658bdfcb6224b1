"""StreamSVM: geometry of the streaming MEB in the augmented space, API and errors.

The geometry is checked against explicit augmented vectors [y x; y; C^-1/2 e_n] built
here with numpy (an independent implementation), and against an exact MEB computed with
scipy's SLSQP on the MEB dual.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.streaming import StreamSVM
from randsvm_dist.streaming.meb._balls import ST_NSTORE
from randsvm_dist.streaming.meb._cover import BallCover
from randsvm_dist.streaming.meb._solver import meb_of_balls

TOL = 1e-9


def blobs(n=40, d=3, seed=0, sep=1.0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, d)) + sep * y[:, None] * np.ones(d) / np.sqrt(d)
    return X.astype(np.float32), y


def augmented(X, y, C, beta=1.0):
    """Explicit augmented points p_n = [y x; beta y; C^-1/2 e_n] (float64)."""
    n = len(y)
    X = np.asarray(X, dtype=np.float64)
    return np.hstack([y[:, None] * X, beta * y[:, None], np.eye(n) / np.sqrt(C)])


def exact_meb(P):
    """Exact MEB radius and centre of the rows of P (SLSQP on the dual QP)."""
    G = P @ P.T
    n = len(P)
    dg = np.diag(G)
    res = minimize(lambda a: -(a @ dg - a @ G @ a), np.full(n, 1.0 / n),
                   jac=lambda a: -(dg - 2 * G @ a), method="SLSQP",
                   bounds=[(0, 1)] * n,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1,
                                 "jac": lambda a: np.ones(n)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    c = res.x @ P
    return float(np.sqrt(np.max(((P - c) ** 2).sum(1)))), c


def dual_cover(d, C=1.0, L=1, **kw):
    return BallCover(d, C=C, lookahead=L, epsilon=kw.pop("epsilon", 0.0),
                     max_balls=kw.pop("max_balls", 1), kernel="linear", gamma="scale",
                     degree=3, coef0=0.0, fit_intercept=True, dual=True, **kw)


def explicit_center(cov, X, y, ball=-1):
    """The centre of a *dual, linear* cover as an explicit augmented vector.

    The store rows are matched back to the rows of X (continuous random data: unique).
    """
    cov = cov.flushed()
    m = int(cov.st[ST_NSTORE])
    n = len(y)
    c = np.zeros(X.shape[1] + 1 + n)
    j = cov.n_balls - 1 if ball == -1 else ball
    X64 = np.asarray(X, dtype=np.float64)
    for s in range(m):
        idx = np.flatnonzero(np.all(X64 == cov.S[s], axis=1))
        assert len(idx) == 1
        a = cov.A[j, s] * y[idx[0]]  # A holds a_n y_n, a_n >= 0
        assert a >= -1e-12
        c[: X.shape[1]] += cov.A[j, s] * X64[idx[0]]
        c[X.shape[1] + 1 + idx[0]] = a / np.sqrt(cov.C)
    c[X.shape[1]] = cov.bb[j]
    return c, cov


def zzc_reference(P):
    """Algorithm 1 on explicit vectors (Zarrabi-Zadeh & Chan): centre, radius, updates."""
    c, R, ups = P[0].copy(), 0.0, 1
    for p in P[1:]:
        d = np.linalg.norm(p - c)
        if d > R:
            c = c + 0.5 * (1 - R / d) * (p - c)
            R = 0.5 * (R + d)
            ups += 1
    return c, R, ups


# -- geometry ------------------------------------------------------------------------------
@pytest.mark.parametrize("C", [0.3, 1.0, 10.0])
def test_algorithm1_matches_explicit_geometry(C):
    X, y = blobs(60, 4, seed=1)
    P = augmented(X, y, C)
    c_ref, R_ref, ups = zzc_reference(P)
    cov = BallCover(4, C=C, lookahead=1, epsilon=0.0, max_balls=1, kernel="linear",
                    gamma="scale", degree=3, coef0=0.0, fit_intercept=True)
    cov.partial_fit(X, y)
    np.testing.assert_allclose(cov.W[0], c_ref[:4], rtol=1e-9, atol=1e-12)
    assert cov.bb[0] == pytest.approx(c_ref[4], rel=1e-9, abs=1e-12)
    assert cov.ee[0] == pytest.approx(np.sum(c_ref[5:] ** 2), rel=1e-9)  # xi^2
    assert cov.rr[0] == pytest.approx(R_ref, rel=1e-12)
    assert cov.n_core == ups


@pytest.mark.parametrize("L", [1, 3, 7])
def test_ball_encloses_every_point_after_every_update(L):
    X, y = blobs(30, 3, seed=2)
    C = 2.0
    P = augmented(X, y, C)
    cov = dual_cover(3, C=C, L=L)
    for i in range(len(y)):
        cov.partial_fit(X[i:i + 1], y[i:i + 1])
        c, f = explicit_center(cov, X, y)
        dist = np.sqrt(((P[: i + 1] - c) ** 2).sum(1))
        assert dist.max() <= f.radius() * (1 + TOL) + 1e-12
        # the stored xi^2 and |w|^2 + b^2 agree with the explicit centre
        assert f.ee[0] == pytest.approx(np.sum(c[4:] ** 2), rel=1e-8)
        assert f.Q[0] == pytest.approx(np.sum(c[:4] ** 2), rel=1e-8)
        if i >= 1:
            r_opt, _ = exact_meb(P[: i + 1])
            assert f.radius() <= 1.5 * r_opt * (1 + 1e-6)
            assert f.radius() >= r_opt * (1 - 1e-6)


def test_algorithm2_with_lookahead_n_is_the_exact_meb():
    X, y = blobs(25, 3, seed=3)
    C = 0.7
    P = augmented(X, y, C)
    r_opt, c_opt = exact_meb(P)
    cov = dual_cover(3, C=C, L=len(y)).partial_fit(X, y)
    c, f = explicit_center(cov, X, y)
    assert f.radius() == pytest.approx(r_opt, rel=1e-6)
    np.testing.assert_allclose(c, c_opt, atol=1e-4)
    # the primal form gives the same ball
    m = StreamSVM(kernel="linear", C=C, lookahead=len(y), normalize=False).fit(X, y)
    assert m.radius_ == pytest.approx(r_opt, rel=1e-6)
    np.testing.assert_allclose(m.learners_[0].flushed().W[0], c_opt[:3], atol=1e-4)


def test_meb_of_balls_solver_against_slsqp():
    rng = np.random.default_rng(4)
    for _ in range(4):
        Cn = rng.normal(size=(7, 5))
        radii = np.zeros(7)
        radii[0] = rng.uniform(0.2, 2.0)
        mu, R = meb_of_balls(Cn @ Cn.T, radii, np.zeros(len(radii)))
        x = mu @ Cn
        assert np.all(np.linalg.norm(Cn - x, axis=1) + radii <= R * (1 + 1e-12))
        cons = [{"type": "ineq",
                 "fun": (lambda z, j=j, r=radii, c=Cn: z[-1] - r[j]
                         - np.linalg.norm(z[:-1] - c[j]))}
                for j in range(7)]
        res = minimize(lambda z: z[-1], np.r_[Cn.mean(0), 10.0], constraints=cons,
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
        assert R == pytest.approx(res.x[-1], rel=1e-7)
        assert mu.min() >= 0 and mu.sum() == pytest.approx(1.0)


def test_merge_encloses_both_inputs_closed_form():
    X, y = blobs(40, 3, seed=5)
    C = 1.5
    a = StreamSVM(kernel="linear", C=C, lookahead=4, normalize=False).fit(X[:20], y[:20])
    b = StreamSVM(kernel="linear", C=C, lookahead=4, normalize=False).fit(X[20:], y[20:])
    merged = a.merge(b)
    # dual forms for explicit checks
    da = dual_cover(3, C=C, L=4).partial_fit(X[:20], y[:20])
    db = dual_cover(3, C=C, L=4).partial_fit(X[20:], y[20:])
    dm = da.merge(db)
    P = augmented(X, y, C)
    c, f = explicit_center(dm, X, y)
    dist = np.sqrt(((P - c) ** 2).sum(1))
    assert dist.max() <= f.radius() * (1 + TOL)
    # the two input balls are inside the merged ball
    ca, fa = explicit_center(da, X, y)
    cb, fb = explicit_center(db, X, y)
    assert np.linalg.norm(c - ca) + fa.radius() <= f.radius() * (1 + TOL)
    assert np.linalg.norm(c - cb) + fb.radius() <= f.radius() * (1 + TOL)
    d = np.linalg.norm(ca - cb)
    if d + fb.radius() > fa.radius() and d + fa.radius() > fb.radius():
        assert f.radius() == pytest.approx(0.5 * (d + fa.radius() + fb.radius()), rel=1e-9)
    # primal merge = dual merge
    assert merged.radius_ == pytest.approx(f.radius(), rel=1e-9)
    np.testing.assert_allclose(merged.learners_[0].W[0], c[:3], rtol=1e-7, atol=1e-10)
    assert merged.n_seen_ == 40
    assert merged.n_core_ == a.n_core_ + b.n_core_
    assert a.radius_ < merged.radius_ + 1e-12  # inputs unchanged, still usable


def test_kernel_form_with_linear_kernel_matches_primal():
    X, y = blobs(300, 5, seed=6)
    for L in (1, 10):
        p = BallCover(5, C=3.0, lookahead=L, epsilon=0.0, max_balls=1, kernel="linear",
                      gamma="scale", degree=3, coef0=0.0, fit_intercept=True)
        p.partial_fit(X, y)
        d = dual_cover(5, C=3.0, L=L).partial_fit(X, y)
        pf, df = p.flushed(), d.flushed()
        m = int(df.st[ST_NSTORE])
        np.testing.assert_allclose(df.A[0, :m] @ df.S[:m], pf.W[0], rtol=1e-8, atol=1e-10)
        assert df.radius() == pytest.approx(pf.radius(), rel=1e-9)
        np.testing.assert_allclose(df.ball_scores(X), pf.ball_scores(X), rtol=1e-5,
                                   atol=1e-5)
        assert df.n_core == pf.n_core


# -- estimator behaviour -------------------------------------------------------------------
def test_separable_blobs_are_learnt_and_lookahead_helps_radius():
    X, y = blobs(2000, 5, seed=7, sep=4.0)
    m1 = StreamSVM(kernel="linear", lookahead=1, C=1.0).fit(X, y)
    m2 = StreamSVM(kernel="linear", C=1.0, lookahead=10).fit(X, y)
    assert m1.score(X, y) > 0.9
    assert m2.score(X, y) > 0.9
    assert m1.n_core_ < 200  # core set much smaller than the stream


def test_same_order_same_model_and_batches_do_not_matter():
    X, y = blobs(500, 4, seed=8)
    a = StreamSVM(kernel="linear", lookahead=5, random_state=3).fit(X, y)
    b = StreamSVM(kernel="linear", lookahead=5, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    c = StreamSVM(kernel="linear", lookahead=5, random_state=3)
    for s in range(0, 500, 37):
        c.partial_fit(X[s:s + 37], y[s:s + 37], classes=[-1, 1])
    np.testing.assert_allclose(a.decision_function(X), c.decision_function(X), rtol=1e-12)
    # a different order gives a different model
    p = np.random.default_rng(0).permutation(500)
    d = StreamSVM(kernel="linear", lookahead=5, random_state=3).fit(X[p], y[p])
    assert not np.allclose(a.decision_function(X), d.decision_function(X))


@pytest.mark.parametrize("L", [1, 6])
def test_sparse_equals_dense(L):
    rng = np.random.default_rng(9)
    X, y = blobs(400, 30, seed=9)
    X[rng.random(X.shape) < 0.7] = 0.0
    for kernel in ("linear", "rbf"):
        a = StreamSVM(lookahead=L, kernel=kernel, gamma=0.1).fit(X, y)
        b = StreamSVM(lookahead=L, kernel=kernel, gamma=0.1).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(a.decision_function(X),
                                   b.decision_function(sp.csr_matrix(X)), rtol=1e-5,
                                   atol=1e-6)
        assert a.n_core_ == b.n_core_


def test_normalize_is_unit_norm_rows():
    X, y = blobs(300, 6, seed=12)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    a = StreamSVM(kernel="linear", lookahead=5).fit(X, y)  # 'auto' normalises the linear kernel
    b = StreamSVM(kernel="linear", lookahead=5, normalize=False).fit(Xn, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(Xn), rtol=1e-5,
                               atol=1e-6)
    c = StreamSVM(kernel="linear", lookahead=5, normalize=False).fit(X, y)
    assert not np.allclose(a.decision_function(X), c.decision_function(X))
    with pytest.raises(ParameterError):
        StreamSVM(kernel="linear", lookahead=1, normalize="yes").fit(X, y)


def test_rbf_kernel_learns_a_circle():
    rng = np.random.default_rng(10)
    X = rng.uniform(-1, 1, size=(1500, 2)).astype(np.float32)
    y = np.where((X ** 2).sum(1) < 0.5, 1, -1)
    lin = StreamSVM(kernel="linear", C=10.0, lookahead=10).fit(X, y)
    rbf = StreamSVM(C=10.0, lookahead=10, kernel="rbf", gamma=2.0).fit(X, y)
    assert rbf.score(X, y) > 0.85
    assert rbf.score(X, y) > lin.score(X, y) + 0.1
    f = rbf.learners_[0].flushed()
    assert rbf.n_core_ == int((f.A[0, : int(f.st[ST_NSTORE])] != 0).sum())


def test_multiclass_one_vs_rest():
    rng = np.random.default_rng(11)
    centers = np.array([[4, 0], [-4, 0], [0, 4]], dtype=float)
    lab = rng.integers(0, 3, 900)
    X = (centers[lab] + rng.normal(size=(900, 2))).astype(np.float32)
    names = np.array(["a", "b", "c"])[lab]
    m = StreamSVM(kernel="linear", C=1.0, lookahead=5).fit(X, names)
    assert list(m.classes_) == ["a", "b", "c"]
    assert len(m.learners_) == 3
    assert m.decision_function(X).shape == (900, 3)
    assert m.score(X, names) > 0.9


def test_bad_input_gives_clear_errors():
    X, y = blobs(50, 3)
    bad = X.copy()
    bad[7, 1] = np.nan
    with pytest.raises(SchemaError, match="NaN"):
        StreamSVM(kernel="linear", lookahead=1).fit(bad, y)
    m = StreamSVM(kernel="linear", lookahead=1).fit(X, y)
    with pytest.raises(SchemaError, match="features"):
        m.predict(np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(SchemaError, match="one class"):
        StreamSVM(kernel="linear", lookahead=1).fit(X, np.ones(50))
    for kw in ({"C": 0}, {"C": -1.0}, {"lookahead": 0}, {"lookahead": 2.5},
               {"kernel": "cosine"}, {"kernel": "poly", "degree": 0}):
        with pytest.raises(ParameterError):
            StreamSVM(**{"kernel": "linear", "lookahead": 1, **kw}).fit(X, y)
    assert StreamSVM(kernel="linear", C=2.0, lookahead=3).get_params()["lookahead"] == 3


def test_pickle_clone_and_merge_of_kernel_models():
    import pickle

    from sklearn.base import clone

    X, y = blobs(400, 4, seed=13)
    m = StreamSVM(lookahead=5, kernel="rbf", gamma=0.5).fit(X[:200], y[:200])
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.decision_function(X), m2.decision_function(X))
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "learners_")
    other = StreamSVM(lookahead=5, kernel="rbf", gamma=0.5).fit(X[200:], y[200:])
    merged = m.merge(other)
    assert merged.radius_ >= max(m.radius_, other.radius_) - 1e-12
    assert merged.n_core_ <= m.n_core_ + other.n_core_
    assert merged.score(X, y) > 0.6
