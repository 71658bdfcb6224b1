"""Fitted attributes and parameters as scikit-learn's SVC, SVR and OneClassSVM have them:
type, shape and dtype of every attribute on the same data; C=inf; feature names; clone
and cross-validation of an estimator holding a Client. Small data: in-process fits."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC, SVR, OneClassSVM  # noqa: F401

from randsvm_dist import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor

ATTRIBUTES = ["support_", "support_vectors_", "dual_coef_", "intercept_", "n_support_",
              "fit_status_", "shape_fit_", "n_features_in_"]
PAIRS = [(RandSVMClassifier, SVC, "y"), (RandSVMRegressor, SVR, "r"),
         (RandSVMOneClass, OneClassSVM, None)]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 5))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1, 0)
    r = X @ np.arange(1.0, 6.0) + 0.1 * rng.normal(size=80)
    return X, {"y": y, "r": r, None: None}


def _describe(value):
    if isinstance(value, (int, np.integer)):
        return ("int",)
    if isinstance(value, tuple):
        return ("tuple", len(value))
    kind = "sparse" if sp.issparse(value) else type(value).__name__
    return (kind, value.shape, value.dtype.kind)


def _no_counts(described, name):
    kind, shape = described[0], described[1]
    if name == "n_support_":
        return described
    kept = shape[:-1] if name == "dual_coef_" else shape[1:]
    return (kind, kept) + tuple(described[2:])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("ours, theirs, target", PAIRS)
def test_attributes_as_scikit_learn(ours, theirs, target, kernel):
    X, ys = _data()
    a = ours(kernel=kernel, random_state=0).fit(X, ys[target])
    b = theirs(kernel=kernel).fit(X, ys[target])
    for name in ATTRIBUTES + (["coef_"] if kernel == "linear" else []):
        got, want = _describe(getattr(a, name)), _describe(getattr(b, name))
        if name == "support_":  # row indices: int64 here (data sets beyond 2**31 rows)
            got, want = got[:2], want[:2]
        if name in ("support_", "support_vectors_", "dual_coef_", "n_support_"):
            # the counts of support vectors may differ within the solver's tolerance
            got, want = _no_counts(got, name), _no_counts(want, name)
        assert got == want, name
    assert a.support_vectors_.dtype == np.float64  # float64 in, float64 out
    assert a.shape_fit_ == X.shape
    # a linear one-class objective cancels to ~0 here: certified against the certificate's
    # floor (exact.certificate.certify), fit_status_ 0 as every other fit
    assert a.fit_status_ == 0
    if kernel == "linear":
        assert not a.coef_.flags.writeable
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=0.05, atol=0.02)
    else:
        with pytest.raises(AttributeError, match="linear kernel"):
            a.coef_  # noqa: B018
    if ours is RandSVMClassifier:
        np.testing.assert_array_equal(a.class_weight_, b.class_weight_)
        assert a.n_support_.sum() == len(a.support_)
    else:
        assert a.n_support_.tolist() == [len(a.support_)]


def test_sparse_looking_dense_input_gives_dense_attributes():
    rng = np.random.default_rng(1)
    X = np.zeros((80, 36))
    X[rng.integers(0, 80, 6), rng.integers(0, 36, 6)] = 1.0
    y = np.arange(80) % 2
    clf = RandSVMClassifier(kernel="linear").fit(X, y)
    assert isinstance(clf.support_vectors_, np.ndarray)
    assert isinstance(clf.coef_, np.ndarray)
    assert np.dot(X, clf.coef_.T).shape == (80, 1)
    sparse = RandSVMClassifier(kernel="linear").fit(sp.csr_matrix(X), y)
    assert sp.issparse(sparse.support_vectors_) and sp.issparse(sparse.dual_coef_)


def test_float32_input_keeps_float32_support_vectors():
    X, ys = _data()
    clf = RandSVMClassifier().fit(X.astype(np.float32), ys["y"])
    assert clf.support_vectors_.dtype == np.float32



@pytest.mark.parametrize("sparse", [False, True])
def test_float64_decision_values_are_the_rows_as_given_times_coef(sparse):
    """As SVC: X @ coef_.T + intercept_ is decision_function(X) to float64 precision, on
    float64 rows that a float32 would round (one-vs-one, three classes)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 4)) + 0.1
    y = np.arange(90) % 3
    X = sp.csr_matrix(X) if sparse else X
    clf = RandSVMClassifier(kernel="linear", C=0.1, decision_function_shape="ovo").fit(X, y)
    expected = np.asarray(X @ clf.coef_.T + clf.intercept_)
    np.testing.assert_allclose(clf.decision_function(X), expected, rtol=1e-9, atol=1e-12)

@pytest.mark.parametrize("ours, theirs, target", PAIRS[:2])
def test_infinite_C_is_a_hard_margin(ours, theirs, target):
    X, ys = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inf = ours(C=np.inf, kernel="linear").fit(X, ys[target])
        large = ours(C=1e10, kernel="linear").fit(X, ys[target])
    np.testing.assert_allclose(inf.predict(X), large.predict(X))


def test_feature_names_checked_as_scikit_learn():
    X, ys = _data()
    df = pd.DataFrame(X, columns=list("abcde"))
    clf = RandSVMClassifier(random_state=0).fit(df, ys["y"])
    np.testing.assert_array_equal(clf.feature_names_in_, list("abcde"))
    clf.predict(df)
    with pytest.raises(ValueError, match="feature names should match"):
        clf.predict(df[list("bacde")])
    with pytest.raises(ValueError, match="feature names should match"):
        clf.predict(df.rename(columns={"a": "z"}))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        clf.predict(X)
    plain = RandSVMClassifier(random_state=0).fit(X, ys["y"])
    assert not hasattr(plain, "feature_names_in_")
    with pytest.warns(UserWarning, match="fitted without feature names"):
        plain.predict(df)


def test_clone_and_cross_validate_with_a_client(dask_client):
    X, ys = _data()
    est = RandSVMClassifier(kernel="linear", client=dask_client, random_state=0)
    copy = clone(est)
    assert copy.client is dask_client and copy is not est
    scores = cross_val_score(est, X, ys["y"], cv=2)
    assert scores.shape == (2,) and scores.min() > 0.8
