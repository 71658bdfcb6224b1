"""Classification on the shared real data sets (issue 20), skipped without them.

w8a (3% positives): ``class_weight='balanced'`` and the equivalent per-row
``sample_weight`` give scikit-learn's ``SVC`` model with the same weights (decision values
within the solvers' tolerance on held-out rows), certified.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from randsvm_dist.estimators import RandSVMClassifier

ROWS = 6000          # a stratified subset of w8a's 49,749 rows keeps the test short
TOL = 1e-5           # LIBSVM's -e, for both solvers
GAP_TOL = 1e-4
C = 1.0


@pytest.fixture(scope="module")
def w8a(shared_datasets):
    """(X, y, X_held, y_held): ROWS stratified rows of w8a split 2/3 : 1/3, stratified."""
    X, y = load_svmlight_file(str(shared_datasets / "w8a" / "w8a.train.svm.gz"),
                              n_features=300)
    keep, _ = train_test_split(np.arange(len(y)), train_size=ROWS, stratify=y,
                               random_state=0)
    X, y = X[np.sort(keep)].astype(np.float32), y[np.sort(keep)].astype(np.int64)
    a, b = train_test_split(np.arange(len(y)), test_size=1 / 3, stratify=y, random_state=0)
    return X[np.sort(a)], y[np.sort(a)], X[np.sort(b)], y[np.sort(b)]


def test_w8a_balanced_weights_are_svcs_model_certified(dask_client, w8a):
    X, y, Xh, yh = w8a
    assert 0.02 < np.mean(y > 0) < 0.04  # w8a's 3% positives
    X64 = X.astype(np.float64)
    gamma = 1.0 / (X.shape[1] * X64.toarray().var())  # 'scale', one number for all
    classes, idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    sw = (len(y) / (len(classes) * counts))[idx]        # what 'balanced' stands for
    assert sw.max() / sw.min() > 20

    def ours(**kw):
        return RandSVMClassifier(C=C, gamma=gamma, tol=TOL, gap_tol=GAP_TOL, random_state=0,
                                 client=dask_client, **kw)

    balanced = ours(class_weight="balanced").fit(X, y)
    weighted = ours().fit(X, y, sample_weight=sw)
    ref = SVC(C=C, gamma=gamma, tol=TOL, class_weight="balanced").fit(X64, y)
    ref_sw = SVC(C=C, gamma=gamma, tol=TOL).fit(X64, y, sample_weight=sw)
    plain = SVC(C=C, gamma=gamma, tol=TOL).fit(X64, y)

    Xh64 = Xh.astype(np.float64)
    f_ref = ref.decision_function(Xh64)
    np.testing.assert_allclose(ref_sw.decision_function(Xh64), f_ref, atol=1e-4)
    for est in (balanced, weighted):
        assert est.certified_ and est.relative_gap_ <= GAP_TOL
        np.testing.assert_allclose(est.decision_function(Xh), f_ref, atol=2e-3)
        # identical rows may be collapsed into one weighted row (w8a: ~27% copies): then
        # SVC's copies of one support vector are one support vector here
        dense = X[ref.support_].toarray()
        distinct = len(np.unique(np.column_stack([dense, y[ref.support_]]), axis=0))
        assert distinct - 5 <= int(est.n_support_.sum()) <= int(ref.n_support_.sum()) + 5
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=2e-3)
        # positives carry boxes of C x n / (2 n_pos), far above C: the weights took effect
        assert np.abs(est.dual_coef_).max() > 5 * C
    # the weights matter here: the unweighted model is far from the weighted one
    assert np.abs(plain.decision_function(Xh64) - f_ref).max() > 0.1
    clear = np.abs(f_ref) > 2e-3  # labels agree wherever the margin is not a tie
    np.testing.assert_array_equal(balanced.predict(Xh)[clear], ref.predict(Xh64)[clear])
