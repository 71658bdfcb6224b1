"""Probabilities as LIBSVM computes them: Platt scaling on 5-fold cross-validated decision
values with SVC's fold assignment for the same random_state, compared with SVC's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import datasets
from sklearn.svm import SVC

from randsvm_dist import RandSVMClassifier
from randsvm_dist.estimators.cross_val_probability import LibsvmRandom, fold_permutation

TOY_X = [[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]]
TOY_Y = [1, 1, 1, 2, 2, 2]


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandSVMClassifier(probability=True, random_state=0, **kw).fit(X, y)


def test_small_data_always_works():
    clf = _fit(TOY_X, TOY_Y)
    assert clf.probability_method_ == "libsvm_cv5"
    p = clf.predict_proba([[-1, -1], [2, 2]])
    q = SVC(probability=True, random_state=0).fit(TOY_X, TOY_Y).predict_proba(
        [[-1, -1], [2, 2]])
    np.testing.assert_allclose(p, q, atol=1e-3)
    X, y = datasets.load_digits(return_X_y=True)
    p = _fit(X[:50], y[:50]).predict_proba(X[:50])
    assert p.shape == (50, 10) and np.allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize("name, tol", [("iris", 0.03), ("breast_cancer", 0.03)])
def test_probabilities_as_svc(name, tol):
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    ours = _fit(X, y)
    svc = SVC(probability=True, random_state=0).fit(X, y)
    p, q = ours.predict_proba(X), svc.predict_proba(X)
    assert np.abs(p - q).max() <= tol
    assert (p.argmax(1) == q.argmax(1)).mean() >= 0.99
    np.testing.assert_allclose(ours.probA_, svc.probA_, rtol=0.05)


def test_fold_assignment_is_libsvm_s():
    # std::mt19937 seeded 5489 (its default) gives 3499211612 first
    assert LibsvmRandom(5489)._next() == 3499211612
    perm = fold_permutation(10, LibsvmRandom(1))
    assert sorted(perm.tolist()) == list(range(10))
    assert perm.tolist() == fold_permutation(10, LibsvmRandom(1)).tolist()
    assert perm.tolist() != fold_permutation(10, LibsvmRandom(2)).tolist()


def test_same_random_state_same_folds():
    X, y = datasets.load_iris(return_X_y=True)
    a, b = _fit(X, y), _fit(X, y)
    np.testing.assert_array_equal(a.probA_, b.probA_)
    c = RandSVMClassifier(probability=True, random_state=1).fit(X, y)
    assert not np.array_equal(a.probA_, c.probA_)
