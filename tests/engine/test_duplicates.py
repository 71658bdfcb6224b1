"""Identical rows collapsed into one weighted row: the same optimum, fewer rows, and
``support_`` still names the user's rows (``engine.duplicates``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor
from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.engine.duplicates import collapse_pays, duplicate_representatives
from randsvm_dist.engine.inputs import load_partitions
from randsvm_dist.engine.partition_build import Loaded, finish
from randsvm_dist.engine.partitions import Partition, fetch_rows, original_rows
from randsvm_dist.engine.row_totals import class_counts

EXACT = {"gap_tol": 1e-5, "tol": 1e-6, "random_state": 0}


def _with_copies(X, y, copies: int = 4, seed: int = 0):
    """Rows of X, y repeated in a shuffled order (each row ``copies`` times on average)."""
    idx = np.random.default_rng(seed).integers(0, len(X), copies * len(X))
    return X[idx], y[idx]


# -- the grouping ----------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
def test_representatives_are_exact_and_keep_conflicting_labels_apart(sparse):
    X = np.array([[1, 0, 2], [0, 0, 0], [1, 0, 2], [1, 0, 2], [0, 0, 0], [1, 0, 2.5]],
                 np.float32)
    y = np.array([0, 1, 0, 1, 1, 0], np.int32)  # row 3 repeats row 0's features, not label
    rep = duplicate_representatives(sp.csr_matrix(X) if sparse else X, y)
    np.testing.assert_array_equal(rep, [0, 1, 0, 3, 1, 5])
    assert duplicate_representatives(X[[0, 1, 5]], y[[0, 1, 5]]) is None


def test_finish_adds_counts_and_positive_weights_and_keeps_original_rows():
    X = np.array([[1, 1], [2, 2], [1, 1], [1, 1]], np.float32)
    y = np.zeros(4, np.int32)
    part = Partition(X, y, offset=10, weight=np.array([0.5, 1.0, 2.0, -3.0]))
    out = finish(Loaded(part, duplicate_representatives(X, y)), 7, True, "keep")
    np.testing.assert_array_equal(out.X, [[1, 1], [2, 2]])
    np.testing.assert_array_equal(out.weight, [2.5, 1.0])  # a weight <= 0 takes no part
    np.testing.assert_array_equal(out.counts(), [3, 1])
    assert out.offset == 7
    np.testing.assert_array_equal(out.original_rows(), [10, 11])
    same = finish(Loaded(part, None), 3, False, "csr")
    assert sp.issparse(same.X) and same.offset == 3
    np.testing.assert_array_equal(same.original_rows(), [10, 11, 12, 13])


def test_collapse_rule():
    assert not collapse_pays(100, 100, True)
    assert collapse_pays(100, 99, True)          # weighted already: any removal pays
    assert not collapse_pays(100, 80, False)     # 20% < DUPLICATE_SHARE
    assert collapse_pays(100, 70, False)
    # where oneDAL solves the rows weighted or not, ONEDAL_DUPLICATE_SHARE
    assert collapse_pays(100, 90, False, onedal=True)
    assert not collapse_pays(100, 97, False, onedal=True)


# -- placed partitions -------------------------------------------------------------------------
def test_collapsed_partitions_renumber_rows_and_map_back(dask_client):
    X, y = make_arrays("twonorm", 100, seed=2)
    Xd, yd = _with_copies(X.astype(np.float32), np.where(y > 0, 1, 0), 5)
    parts, _ = load_partitions(dask_client, Xd, yd, n_partitions=3, collapse=True)
    assert parts.weighted and parts.n_collapsed == len(Xd) - parts.n_rows > 0
    assert parts.sizes.sum() == parts.n_rows
    np.testing.assert_array_equal(class_counts(dask_client, parts, 2), np.bincount(yd))
    rows = np.arange(parts.n_rows)
    _, Xc, yc, w = fetch_rows(dask_client, parts, rows)
    orig = original_rows(dask_client, parts, rows)
    np.testing.assert_array_equal(Xc, Xd[orig])
    np.testing.assert_array_equal(yc, yd[orig])
    assert w.sum() == len(Xd)
    off, _ = load_partitions(dask_client, Xd, yd, n_partitions=3, collapse=False)
    assert off.n_collapsed == 0 and off.n_rows == len(Xd) and not off.weighted


def test_cached_parquet_partitions_collapse_too(dask_client, tmp_path):
    X, y = make_arrays("twonorm", 80, seed=3)
    Xd, yd = _with_copies(X.astype(np.float32), np.where(y > 0, 1, -1), 4)
    ds = write_arrays(Xd, yd, tmp_path / "dup", partitions=2)
    parts, _ = load_partitions(dask_client, ds, cache=True, collapse=True)
    assert parts.n_collapsed > 0 and parts.n_rows + parts.n_collapsed == len(Xd)


# -- same model ------------------------------------------------------------------------------
def _fit_both(est_cls, X, y, sample_weight=None, **params):
    fits = []
    for collapse in (False, True):
        est = est_cls(**params)
        est._may_collapse = lambda c=collapse: c  # the rule under test, forced
        est.fit(X, y, sample_weight=sample_weight) if y is not None else \
            est.fit(X, sample_weight=sample_weight)
        fits.append(est)
    return fits


def _assert_same_function(a, b, X, atol):
    f = "decision_function" if hasattr(a, "decision_function") else "predict"
    np.testing.assert_allclose(getattr(a, f)(X), getattr(b, f)(X), atol=atol)
    for est in (a, b):  # support_ names rows of the user's X holding the support vectors
        np.testing.assert_array_equal(X[est.support_], est.support_vectors_)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_collapsed_equals_uncollapsed(dask_client, weighted, n_classes):
    X, y = make_arrays("twonorm", 150, seed=5)
    X = X.astype(np.float32)
    y = np.where(y > 0, 1, 0) if n_classes == 2 else np.arange(len(y)) % 3
    Xd, yd = _with_copies(X, y, 4)
    Xd = np.vstack([Xd, Xd[:20]])  # conflicting labels: the same features, another class
    yd = np.concatenate([yd, (yd[:20] + 1) % n_classes])
    sw = np.random.default_rng(1).uniform(0.5, 2.0, len(yd)) if weighted else None
    a, b = _fit_both(RandSVMClassifier, Xd, yd, sw, C=2.0, client=dask_client, **EXACT)
    _assert_same_function(a, b, Xd, 2e-3)


@pytest.mark.parametrize("weighted", [False, True])
def test_regressor_and_one_class_collapsed_equal_uncollapsed(dask_client, weighted):
    X, y = make_arrays("twonorm", 150, seed=6)
    Xd, yd = _with_copies(X.astype(np.float32), y.astype(np.float64) * 0.5, 4)
    sw = np.random.default_rng(2).uniform(0.5, 2.0, len(yd)) if weighted else None
    a, b = _fit_both(RandSVMRegressor, Xd, yd, sw, C=1.0, client=dask_client, **EXACT)
    _assert_same_function(a, b, Xd, 2e-3)
    a, b = _fit_both(RandSVMOneClass, Xd, None, sw, nu=0.3, client=dask_client, **EXACT)
    _assert_same_function(a, b, Xd, 2e-3)


def test_collapse_while_sampling_and_the_default_rule(dask_client):
    """The sampling route (scans, draws) on collapsed rows finds the same optimum; the
    estimators collapse by default when enough rows are copies."""
    X, y = make_arrays("twonorm", 400, seed=7)
    Xd, yd = _with_copies(X.astype(np.float32), np.where(y > 0, 1, 0), 5)
    params = dict(C=1.0, client=dask_client, sample_size=100, route="sample", **EXACT)
    a, b = _fit_both(RandSVMClassifier, Xd, yd, **params)
    _assert_same_function(a, b, Xd, 2e-3)
    default = RandSVMClassifier(**params).fit(Xd, yd)
    np.testing.assert_array_equal(default.support_, b.support_)
    collapsed = {h["duplicates_collapsed"] for h in default.history_}
    copies = len(yd) - len(np.unique(np.column_stack([Xd, yd]), axis=0))
    assert collapsed == {copies}  # across partitions too (the exchange)
