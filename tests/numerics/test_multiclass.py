"""One-vs-one voting, break_ties and the ovr-shaped decision function against scikit-learn's
SVC on iris (the same pairwise values in, the same predictions and ovr values out), and
LIBSVM's tie rules on constructed values."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.svm import SVC

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.multiclass import (
    decision_function,
    n_classes_of,
    ovo_pairs,
    ovo_predict,
    ovo_votes,
    ovr_decision_function,
    predict,
)


@pytest.fixture(scope="module")
def iris():
    """SVC on iris, scored on iris plus random points around it (where the three pairwise
    classifiers often disagree cyclically: 1-1-1 votes)."""
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    Z = np.vstack([X, rng.uniform(X.min(0) - 1, X.max(0) + 1, size=(3000, 4))])
    svc = SVC(C=10, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    return Z, y, svc


def test_pairs_in_libsvm_order():
    assert ovo_pairs(4) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert n_classes_of(6) == 4 and n_classes_of(1) == 2
    with pytest.raises(ParameterError):
        n_classes_of(4)


def test_votes_and_ovr_values_match_svc(iris):
    Z, y, svc = iris
    X = load_iris().data
    dec = svc.decision_function(Z)
    np.testing.assert_array_equal(ovo_predict(dec, 3), svc.predict(Z))
    np.testing.assert_array_equal(ovo_predict(dec, 3), svc.predict(Z))
    ovr = SVC(C=10, gamma=0.5, decision_function_shape="ovr").fit(X, y)
    np.testing.assert_allclose(ovr_decision_function(dec, 3), ovr.decision_function(Z),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(decision_function(dec, 3, "ovr"), ovr.decision_function(Z),
                               atol=1e-12)
    np.testing.assert_array_equal(decision_function(dec, 3, "ovo"), dec)
    assert ovo_votes(dec, 3).sum(axis=1).tolist() == [3] * len(Z)


def test_break_ties_matches_svc(iris):
    Z, y, svc = iris
    X = load_iris().data
    dec = svc.decision_function(Z)
    tied = (ovo_votes(dec, 3) == 1).all(axis=1)
    assert tied.any()  # the fixture has three-way ties
    bt = SVC(C=10, gamma=0.5, break_ties=True).fit(X, y)
    got = predict(dec, 3, break_ties=True)
    np.testing.assert_array_equal(got, bt.predict(Z))
    assert (got[tied] != predict(dec, 3)[tied]).any()  # break_ties changes some
    with pytest.raises(ParameterError, match="break_ties"):
        predict(dec, 3, break_ties=True, decision_function_shape="ovo")


def test_binary_decision_function_is_svc_sign():
    X, y = load_iris(return_X_y=True)
    keep = y > 0
    svc = SVC(gamma=0.5).fit(X[keep], y[keep])
    libsvm_dec = -svc.decision_function(X[keep])  # LIBSVM's: positive towards classes_[0]
    np.testing.assert_allclose(decision_function(libsvm_dec, 2), svc.decision_function(
        X[keep]))
    np.testing.assert_array_equal(svc.classes_[predict(libsvm_dec, 2)], svc.predict(X[keep]))


def test_libsvm_tie_rules_on_constructed_values():
    # 3 classes, each wins one pair: LIBSVM picks the lowest index
    dec = np.array([[1.0, -1.0, 1.0]])  # (0,1)->0, (0,2)->2, (1,2)->1
    assert ovo_votes(dec, 3).tolist() == [[1, 1, 1]]
    assert ovo_predict(dec, 3).tolist() == [0]
    # an exact 0: LIBSVM votes for j, scikit-learn's ovr transform counts it for i
    zero = np.array([[0.0]])
    assert ovo_predict(zero, 2).tolist() == [1]
    z3 = np.array([[0.0, 1.0, 1.0]])
    assert ovo_votes(z3, 3).tolist() == [[1, 2, 0]]
    assert np.round(ovr_decision_function(z3, 3)).tolist() == [[2, 1, 0]]
    with pytest.raises(ParameterError, match="pairwise"):
        ovo_votes(np.zeros((2, 2)), 3)
