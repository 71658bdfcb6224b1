"""Sample and class weights on every streaming learner (issue 20, item 1, streaming part)."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.streaming import LEARNERS, BudgetedSGD, OnlineRampSVM, StreamSVM
from randsvm_dist.streaming.base import resolve_class_weight

# small, quick settings per learner (the weighting rule is what is tested, not accuracy)
FAST = {
    "streamsvm": dict(C=1.0, lookahead=50),
    "blurred_ball": dict(C=1.0, lookahead=50),
    "bsgd": dict(C=10.0, gamma=1.0, budget=60),
    "ramp": dict(C=1.0, gamma=1.0, max_non_sv=50),
}


def _imbalanced(n: int, seed: int, share: float = 0.1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < share).astype(int)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    X[y == 1] += 1.5
    return X, y


def _recall(model, X, y) -> float:
    p = model.predict(X)
    return float(((p == 1) & (y == 1)).sum() / (y == 1).sum())


@pytest.mark.parametrize("key", list(LEARNERS))
def test_balanced_class_weight_raises_minority_recall(key):
    X, y = _imbalanced(2000, 0)
    Xt, yt = _imbalanced(2000, 1)
    cls = LEARNERS[key]
    plain = cls(random_state=0, **FAST[key]).fit(X, y)
    bal = cls(random_state=0, class_weight="balanced", **FAST[key]).fit(X, y)
    assert _recall(bal, Xt, yt) >= _recall(plain, Xt, yt) + 0.1
    np.testing.assert_allclose(bal.class_weight_, 2000 / (2 * np.bincount(y)))
    # a dict with the same weights is the same model
    d = cls(random_state=0, class_weight=dict(zip([0, 1], bal.class_weight_)),
            **FAST[key]).fit(X, y)
    np.testing.assert_allclose(d.decision_function(Xt), bal.decision_function(Xt),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("key", list(LEARNERS))
def test_class_weight_equals_the_same_sample_weight(key):
    X, y = _imbalanced(800, 2, share=0.3)
    cls = LEARNERS[key]
    a = cls(random_state=0, class_weight={1: 3.0}, **FAST[key]).fit(X, y)
    b = cls(random_state=0, **FAST[key]).fit(X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("key", list(LEARNERS))
def test_zero_and_negative_weights_drop_rows_as_svc(key):
    X, y = _imbalanced(600, 3, share=0.4)
    cls = LEARNERS[key]
    w = np.ones(len(y))
    w[::3] = 0.0
    w[1::7] = -2.0
    keep = w > 0
    a = cls(random_state=0, **FAST[key]).fit(X, y, sample_weight=w)
    b = cls(random_state=0, **FAST[key]).fit(X[keep], y[keep])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                               rtol=1e-6, atol=1e-8)
    assert a.n_seen_ == keep.sum()
    with pytest.raises(ParameterError, match="zero or negative"):
        cls(**FAST[key]).fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(SchemaError, match="one class"):
        cls(**FAST[key]).fit(X, y, sample_weight=np.where(y == 1, 1.0, 0.0))
    with pytest.raises(SchemaError, match="sample_weight"):
        cls(**FAST[key]).fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ParameterError, match="finite"):
        cls(**FAST[key]).fit(X, y, sample_weight=np.full(len(y), np.nan))


def test_unit_weights_are_the_unweighted_model():
    X, y = _imbalanced(500, 4, share=0.4)
    for key, cls in LEARNERS.items():
        a = cls(random_state=0, **FAST[key]).fit(X, y)
        b = cls(random_state=0, **FAST[key]).fit(X, y, sample_weight=np.ones(len(y)))
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_meb_weights_equal_repeated_rows_exactly_with_a_full_lookahead():
    """With a lookahead longer than the stream the ball is the exact MEB: w copies of a row
    (each its own e_n) and one row of weight w give the same weighted l2-SVM."""
    X, y = _imbalanced(300, 5, share=0.4)
    w = np.random.default_rng(0).integers(1, 4, len(y))
    rep = np.repeat(np.arange(len(y)), w)
    for kernel in ("linear", "rbf"):  # a numeric gamma: 'scale' sees the repeated moments
        a = StreamSVM(kernel=kernel, gamma=0.5, lookahead=2000).fit(X, y, sample_weight=w)
        b = StreamSVM(kernel=kernel, gamma=0.5, lookahead=2000).fit(X[rep], y[rep])
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a.radius_, b.radius_, rtol=1e-6)


@pytest.mark.parametrize("key", list(LEARNERS))
def test_sample_weight_is_repeating_rows_in_distribution(key):
    """Integer weights (3 on the minority class) against the rows repeated that many times,
    each fitted over 6 random stream orders: the share of test rows predicted positive is
    the same in distribution (means within 0.06; a stream learner's single fits vary by
    0.02-0.11 between orders), and the weights matter: unweighted fits predict positive
    markedly less often than both."""
    X, y = _imbalanced(900, 6, share=0.3)
    Xt, _ = _imbalanced(1500, 7, share=0.3)
    w = np.where(y == 1, 3, 1)
    cls = LEARNERS[key]
    rate_w, rate_rep, rate_plain = [], [], []
    for s in range(6):
        rng = np.random.default_rng(s)
        p = rng.permutation(len(y))
        rep = np.repeat(p, w[p])
        rep = rep[rng.permutation(len(rep))]
        weighted = cls(random_state=s, **FAST[key]).fit(X[p], y[p], sample_weight=w[p])
        repeated = cls(random_state=s, **FAST[key]).fit(X[rep], y[rep])
        plain = cls(random_state=s, **FAST[key]).fit(X[p], y[p])
        rate_w.append(weighted.predict(Xt).mean())
        rate_rep.append(repeated.predict(Xt).mean())
        rate_plain.append(plain.predict(Xt).mean())
    gap = abs(np.mean(rate_w) - np.mean(rate_rep))
    assert gap < 0.06
    assert np.mean(rate_plain) < min(np.mean(rate_w), np.mean(rate_rep)) - 0.05
    assert gap < 0.5 * abs(np.mean(rate_plain) - np.mean(rate_rep))


def test_balanced_on_a_stream_is_fixed_by_the_first_batch():
    X, y = _imbalanced(1000, 8, share=0.2)
    est = BudgetedSGD(class_weight="balanced", **FAST["bsgd"])
    est.partial_fit(X[:100], y[:100], classes=[0, 1])
    first = est.class_weight_.copy()
    np.testing.assert_allclose(first, 100 / (2 * np.bincount(y[:100])))
    est.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(est.class_weight_, first)
    # a class absent from the first batch weighs 1
    only0 = np.flatnonzero(y == 0)[:50]
    est2 = OnlineRampSVM(class_weight="balanced", **FAST["ramp"])
    est2.partial_fit(X[only0], y[only0], classes=[0, 1])
    np.testing.assert_allclose(est2.class_weight_, [50 / (2 * 50), 1.0])


def test_bad_class_weight():
    classes = np.array([0, 1])
    with pytest.raises(ParameterError, match="not among"):
        resolve_class_weight({5: 2.0}, classes, np.array([0, 1]))
    with pytest.raises(ParameterError, match="'balanced'"):
        resolve_class_weight("auto", classes, np.array([0, 1]))
    with pytest.raises(ParameterError, match=">= 0"):
        resolve_class_weight({1: -1.0}, classes, np.array([0, 1]))
    X, y = _imbalanced(100, 9, share=0.5)
    with pytest.raises(ParameterError, match="not among"):
        StreamSVM(class_weight={7: 1.0}).fit(X, y)


def test_one_sample_weight_check_and_its_error_types():
    """A sample_weight array's values are a setting (ParameterError); its length is the
    data's shape (SchemaError): one rule for the streaming learners and the RandSVM fit."""
    from randsvm_dist.core.validation import check_sample_weight

    assert check_sample_weight(None, 3) is None
    np.testing.assert_array_equal(check_sample_weight(2, 3), [2.0, 2.0, 2.0])
    with pytest.raises(SchemaError, match=r"shape \(2,\); expected \(3,\)"):
        check_sample_weight([1, 2], 3)
    with pytest.raises(ParameterError, match="row 1: nan is not a finite number"):
        check_sample_weight([1, np.nan, 1], 3)
    with pytest.raises(ParameterError, match="row 2: inf"):
        check_sample_weight([1, 1, np.inf], 3)


def test_randsvm_fit_refuses_a_nan_weight_as_a_parameter(dask_client):
    from randsvm_dist.estimators import RandSVMClassifier

    X, y = _imbalanced(60, 3, share=0.4)
    w = np.ones(len(y))
    w[5] = np.nan
    with pytest.raises(ParameterError, match="sample_weight, row 5"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=w)
    with pytest.raises(SchemaError, match="sample_weight has shape"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=w[:10])


def test_balanced_is_one_rule_for_randsvm_and_the_streams():
    """'balanced' is scikit-learn's n / (n_classes x count) in both, from the same code."""
    from sklearn.utils.class_weight import compute_class_weight

    from randsvm_dist.core.validation import balanced_class_weight

    y = np.array([0, 0, 0, 1, 2, 2])
    classes = np.array([0, 1, 2])
    expected = compute_class_weight("balanced", classes=classes, y=y)
    np.testing.assert_allclose(balanced_class_weight(np.bincount(y)), expected)
    np.testing.assert_allclose(resolve_class_weight("balanced", classes, y), expected)
    np.testing.assert_allclose(balanced_class_weight(np.array([4, 0])), [0.5, 1.0])
