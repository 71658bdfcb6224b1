"""Issue 19: the papers' invariants that the fixes must keep, order robustness, and the
streaming learners' independence from Dask (issue 16)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import rbf_kernel

from randsvm_dist.data import make_arrays
from randsvm_dist.streaming import LEARNERS, MODEL_CLASSES, BudgetedSGD, OnlineRampSVM
from randsvm_dist.streaming.base import gamma_moments, learner_gamma


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(2000, noise=0.3, random_state=0)
    Xt, yt = make_moons(3000, noise=0.3, random_state=1)
    return X.astype(np.float32), y, Xt.astype(np.float32), yt


def _spread(make, X, y, Xt, yt, k=10) -> tuple[float, float, float]:
    """(median, worst, max - min) test accuracy in points over k random stream orders."""
    acc = []
    for s in range(k):
        p = np.random.default_rng(s).permutation(len(y))
        acc.append(100 * make().fit(X[p], y[p]).score(Xt, yt))
    a = np.asarray(acc)
    return float(np.median(a)), float(a.min()), float(a.max() - a.min())


def test_bsgd_average_removes_the_order_dependence_of_the_last_iterate(moons):
    """The last SGD iterate with eta = 1/(lambda t) still moves by ~C per violation at the
    end of the stream, so its accuracy depends on which rows came last (5 points between
    10 orders here); the t-weighted average of the iterates does not (bound 2.5 points: the
    issue's worst-within-2-of-median with a margin of one test-set standard error,
    sqrt(0.1 * 0.9 / 3000) = 0.55 points)."""
    X, y, Xt, yt = moons
    kw = dict(C=10.0, gamma=1.0, budget=50, random_state=0)
    med_a, worst_a, spread_a = _spread(lambda: BudgetedSGD(**kw), X, y, Xt, yt)
    med_l, worst_l, spread_l = _spread(lambda: BudgetedSGD(average=False, **kw), X, y, Xt, yt)
    assert spread_a <= 2.5
    assert med_a - worst_a <= 2.0
    assert spread_a < 0.6 * spread_l
    assert med_a >= med_l - 0.5


@pytest.mark.heavy
@pytest.mark.parametrize("key", list(LEARNERS))
def test_defaults_are_robust_to_the_stream_order(moons, key):
    """Every learner with its default settings: the worst of 10 orders within 2 points of
    their median (issue 19's rule; see the previous test for the bound)."""
    X, y, Xt, yt = moons
    med, worst, spread = _spread(lambda: LEARNERS[key](random_state=0), X, y, Xt, yt)
    assert med - worst <= 2.0
    assert spread <= 2.5


def test_bsgd_averaged_model_keeps_the_budget_and_merges_like_its_iterate(moons):
    X, y, _, _ = moons
    kw = dict(C=10.0, gamma=1.0, budget=30, merge_size=3, n_rows=1000)
    a = BudgetedSGD(random_state=0, **kw)
    b = BudgetedSGD(random_state=1, **kw)
    a.partial_fit(X[:1000], y[:1000], classes=[0, 1])
    b.partial_fit(X[1000:], y[1000:], classes=[0, 1])
    for est in (a, b, a.merge(b)):
        lr = est.learners_[0]
        assert lr.n_core <= 30 and lr.n_sv <= 30
        assert est.support_vectors_.shape == (lr.n_core, 2)
    # the averaged model is a fold of the iterates: a fit in one batch and in 8 batches agree
    c = BudgetedSGD(random_state=0, **kw)
    for s in range(0, 1000, 125):
        c.partial_fit(X[s:s + 125], y[s:s + 125], classes=[0, 1])
    np.testing.assert_allclose(c.decision_function(X), a.decision_function(X), rtol=1e-9)


def test_ramp_cccp_never_increases_the_objective():
    """Each example: the ramp objective (over the points kept so far) after the CCCP steps
    is at most the objective of the previous solution extended by alpha_new = 0 (each CCCP
    step minimizes a convex upper bound that touches the objective there)."""
    X, y = make_arrays("noisy_checkerboard", 120, 5)
    y = y.astype(float)
    C, gamma = 10.0, 2.0
    est = OnlineRampSVM(C=C, gamma=gamma)
    prev = None
    for t in range(len(y)):
        est.partial_fit(X[t:t + 1], y[t:t + 1], classes=[-1.0, 1.0])
        k = est.learners_[0].kept()
        Xk = np.asarray(k["X"], dtype=np.float64)
        K = rbf_kernel(Xk, gamma=gamma)
        yk, alpha = k["y"], k["alpha"]

        def objective(a, K=K, yk=yk):
            f = K @ (a * yk)
            return 0.5 * (a * yk) @ f + C * np.minimum(2.0, np.maximum(0, 1 - yk * f)).sum()

        if prev is not None and len(prev) == len(alpha) - 1:
            before = objective(np.append(prev, 0.0))
            assert objective(alpha) <= before + 1e-6 * max(1.0, abs(before))
        prev = alpha


def test_ramp_weights_are_per_point_boxes():
    """A row of weight w has the box 0 <= alpha <= C w; the KKT conditions hold with it
    (checked from an independent Gram matrix)."""
    X, y = make_arrays("noisy_checkerboard", 300, 3)
    y = y.astype(float)
    w = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    C, gamma = 2.0, 1.0
    est = OnlineRampSVM(C=C, gamma=gamma).fit(X, y, sample_weight=w)
    k = est.learners_[0].kept()
    np.testing.assert_allclose(np.sort(k["C"]), np.sort(C * w), rtol=1e-12)
    Xk = np.asarray(k["X"], dtype=np.float64)
    K = rbf_kernel(Xk, gamma=gamma)
    a, yk, box = k["alpha"], k["y"], k["C"]
    g = 1.0 - yk * (K @ (a * yk))
    inside = g <= 2.0
    viol = np.maximum.reduce([np.where(inside & (a < box), g, 0),
                              np.where(inside & (a > 0), -g, 0),
                              np.where(~inside & (a > 0), np.inf, 0)])
    assert viol.max() < 0.02  # the gain rule stops at violations ~sqrt(2 gain_tol Q_jj C w)
    assert est.learners_[0].kkt_violation() == pytest.approx(viol.max(), abs=1e-4)
    assert (a <= box * (1 + 1e-12)).all() and (a >= 0).all()
    assert np.any(np.isclose(a, box)) and np.any(a > C + 1e-9)  # some boxes above C


def test_one_gamma_rule():
    X = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    g = learner_gamma("scale", 4, [gamma_moments(X[:20]), gamma_moments(X[20:])])
    assert g == pytest.approx(1.0 / (4 * X.astype(np.float64).var()), rel=1e-6)
    assert learner_gamma("auto", 4) == 0.25
    assert learner_gamma(0.3, 4) == 0.3
    for key, cls in LEARNERS.items():
        kernel = {"kernel": "rbf"} if key != "bsgd" else {}
        est = cls(gamma="scale", random_state=0, **kernel).fit(X, np.arange(50) % 2)
        lr = est.learners_[0]
        got = lr.gamma if key == "bsgd" else est.kernel_.gamma if key == "ramp" \
            else lr.kernel.gamma
        assert got == pytest.approx(g, rel=1e-6)


def test_registry_and_no_dask_in_the_learners():
    assert set(LEARNERS) == {"streamsvm", "blurred_ball", "bsgd", "ramp"}
    assert {c.__name__ for c in LEARNERS.values()} <= set(MODEL_CLASSES)
    code = ("import sys, randsvm_dist; base = set(sys.modules); "
            "import randsvm_dist.streaming as s; "
            "bad = sorted(m for m in set(sys.modules) - base if m.split('.')[0] in "
            "('dask', 'distributed') or (m.startswith('randsvm_dist.') "
            "and m.split('.')[1] not in ('streaming', 'exceptions', 'core', 'numerics'))); "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_dask_input_is_refused_with_the_wrapper_named():
    da = pytest.importorskip("dask.array")
    from randsvm_dist.exceptions import ParameterError

    X = da.zeros((10, 2), chunks=5)
    with pytest.raises(ParameterError, match="DaskStreamingClassifier"):
        BudgetedSGD().fit(X, np.arange(10) % 2)
