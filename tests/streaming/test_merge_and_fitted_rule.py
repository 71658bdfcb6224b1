"""Issue 40 items 1 and 2: one merge-compatibility check and one "fitted?" rule shared by
every streaming learner."""

import numpy as np
import pytest

from randsvm_dist.exceptions import NotFittedError, ParameterError
from randsvm_dist.streaming import LEARNERS

CLASSES = sorted(LEARNERS.items())


def _checkerboard(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = np.where((np.floor(X[:, 0] * 2) + np.floor(X[:, 1] * 2)) % 2 == 0, 1, -1)
    return X, y


@pytest.mark.parametrize("name,cls", CLASSES)
def test_merge_of_different_gammas_refused_both_ways(name, cls):
    X, y = _checkerboard()
    a = cls(gamma=2.0).partial_fit(X[:300], y[:300], classes=[-1, 1])
    b = cls(gamma=0.1).partial_fit(X[300:], y[300:], classes=[-1, 1])
    with pytest.raises(ParameterError, match=r"cannot merge .* gamma 2\.0 and 0\.1"):
        a.merge(b)
    with pytest.raises(ParameterError, match=r"gamma 0\.1 and 2\.0"):
        b.merge(a)
    a.merge(cls(gamma=2.0).partial_fit(X[300:], y[300:], classes=[-1, 1]))  # same: merges


@pytest.mark.parametrize("name", ["streamsvm", "blurred_ball", "ramp"])
def test_merge_of_different_kernels_refused(name):
    X, y = _checkerboard()
    cls = LEARNERS[name]
    a = cls(kernel="linear").partial_fit(X[:300], y[:300], classes=[-1, 1])
    b = cls(kernel="rbf", gamma=1.0).partial_fit(X[300:], y[300:], classes=[-1, 1])
    with pytest.raises(ParameterError, match="kernel 'rbf' and 'linear'"):
        b.merge(a)
    c = cls(kernel="poly", gamma=1.0, degree=2).partial_fit(X[:300], y[:300],
                                                            classes=[-1, 1])
    d = cls(kernel="poly", gamma=1.0, degree=3).partial_fit(X[300:], y[300:],
                                                            classes=[-1, 1])
    with pytest.raises(ParameterError, match="degree 2 and 3"):
        c.merge(d)


def test_merge_of_different_budgets_refused():
    X, y = _checkerboard()
    cls = LEARNERS["bsgd"]
    a = cls(gamma=1.0, budget=50).partial_fit(X[:300], y[:300], classes=[-1, 1])
    b = cls(gamma=1.0, budget=80).partial_fit(X[300:], y[300:], classes=[-1, 1])
    with pytest.raises(ParameterError, match="budget 50 and 80"):
        a.merge(b)


@pytest.mark.parametrize("name,cls", CLASSES)
def test_empty_batch_does_not_fit(name, cls):
    X, y = _checkerboard()
    est = cls(gamma=2.0).partial_fit(np.zeros((0, 2)), np.zeros(0, int), classes=[-1, 1])
    for call in (est.predict, est.decision_function):
        with pytest.raises(NotFittedError, match="learnt no row"):
            call(X)
    # an empty learner (an empty partition) adds nothing to a merge, either side
    full = cls(gamma=2.0).partial_fit(X, y, classes=[-1, 1])
    for merged in (est.merge(full), full.merge(est)):
        np.testing.assert_array_equal(merged.predict(X), full.predict(X))
    est.partial_fit(X, y)  # the first row fits it
    assert est.predict(X).shape == (len(X),)


@pytest.mark.parametrize("name,cls", CLASSES)
def test_all_weights_zero_batch_does_not_fit(name, cls):
    X, y = _checkerboard(50)
    est = cls(gamma=2.0).partial_fit(X, y, classes=[-1, 1], sample_weight=np.zeros(50))
    with pytest.raises(NotFittedError):
        est.predict(X)
