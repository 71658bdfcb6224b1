"""Dask arrays and DataFrames as input to fit, predict and score (dask-ml's convention), and
``fit(path, dataset_kwargs=)``."""

from __future__ import annotations

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.distributed.streaming import DaskStreamingClassifier
from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.streaming import BudgetedSGD, StreamSVM


def _on_worker_only(block):
    """Identity on a Dask worker; raises when a block is computed in the client process."""
    from distributed import get_worker

    get_worker()  # ValueError outside a worker
    return block


@pytest.fixture(scope="module")
def arrays():
    X, y = make_arrays("twonorm", 600, seed=4)
    return X.astype(np.float32), np.where(y > 0, 1, 0)


def _dask(X, y, chunks=150):
    dX = da.from_array(X, chunks=(chunks, X.shape[1])).map_blocks(_on_worker_only,
                                                                  dtype=X.dtype)
    dy = da.from_array(y, chunks=chunks).map_blocks(_on_worker_only, dtype=y.dtype)
    return dX, dy


def test_randsvm_dask_array_equals_numpy_and_stays_on_workers(dask_client, arrays):
    X, y = arrays
    dX, dy = _dask(X[:400], y[:400])
    est = RandSVMClassifier(random_state=3, client=dask_client).fit(dX, dy)
    ref = RandSVMClassifier(random_state=3, client=dask_client).fit(X[:400], y[:400])
    np.testing.assert_array_equal(est.support_, ref.support_)
    np.testing.assert_allclose(est.dual_coef_, ref.dual_coef_, rtol=1e-5, atol=1e-7)
    tX, ty = _dask(X[400:], y[400:], chunks=70)
    pred = est.predict(tX)
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(dask_client.compute(pred).result(), ref.predict(X[400:]))
    f = est.decision_function(tX)
    assert isinstance(f, da.Array) and f.shape == (200,)
    assert est.score(tX, ty) == pytest.approx(ref.score(X[400:], y[400:]))


def test_randsvm_dask_dataframe(dask_client, arrays):
    X, y = arrays
    df = dd.from_pandas(pd.DataFrame(X[:400], columns=[f"f{j}" for j in range(X.shape[1])]),
                        npartitions=3)
    ys = dd.from_pandas(pd.Series(y[:400]), npartitions=3)
    est = RandSVMClassifier(random_state=3, client=dask_client,
                            class_weight="balanced").fit(df, ys)
    ref = RandSVMClassifier(random_state=3, client=dask_client,
                            class_weight="balanced").fit(X[:400], y[:400])
    np.testing.assert_array_equal(est.support_, ref.support_)
    tdf = dd.from_pandas(pd.DataFrame(X[400:], columns=df.columns), npartitions=2)
    assert est.score(tdf, dd.from_pandas(pd.Series(y[400:]), npartitions=2)) > 0.9


def test_dask_input_errors_name_the_rows(dask_client, arrays):
    X, y = arrays
    bad = X[:300].copy()
    bad[200, 3] = np.nan
    with pytest.raises(SchemaError, match=r"rows from 150.*row 50, feature 3"):
        RandSVMClassifier(client=dask_client).fit(da.from_array(bad, chunks=(150, 20)),
                                                  da.from_array(y[:300], chunks=150))
    text = dd.from_pandas(pd.DataFrame({"a": ["x"] * 10, "b": np.ones(10)}), npartitions=1)
    with pytest.raises(SchemaError, match="not numeric"):
        RandSVMClassifier(client=dask_client).fit(text, np.arange(10) % 2)


def test_streaming_dask_array(current_dask_client, arrays):
    X, y = arrays
    dX, dy = _dask(X[:400], y[:400], chunks=97)
    est = DaskStreamingClassifier(StreamSVM(kernel="linear", lookahead=10, random_state=0))
    est.fit(dX, dy)
    ref = StreamSVM(kernel="linear", lookahead=10, random_state=0).fit(X[:400], y[:400])
    np.testing.assert_allclose(est.decision_function(X[400:]), ref.decision_function(X[400:]),
                               rtol=1e-9, atol=1e-12)  # one pass, batches do not matter
    tX, ty = _dask(X[400:], y[400:], chunks=64)
    assert isinstance(est.predict(tX), da.Array)
    assert est.score(tX, ty) == pytest.approx(ref.score(X[400:], y[400:]))
    b = DaskStreamingClassifier(BudgetedSGD(budget=30, random_state=0)).fit(dX, dy)
    assert b.score(tX, ty) > 0.9


def test_fit_dataset_kwargs_take_effect(dask_client, arrays, tmp_path):
    X, y = arrays
    write_arrays(X[:300], y[:300], tmp_path / "ds", partitions=2, label_column="target")
    with pytest.raises(SchemaError):
        RandSVMClassifier(client=dask_client).fit(str(tmp_path / "ds"))
    est = RandSVMClassifier(random_state=0, client=dask_client).fit(
        str(tmp_path / "ds"), dataset_kwargs={"label_column": "target"})
    assert est.n_features_in_ == X.shape[1] and est.score(X[300:], y[300:]) > 0.9
    cols = Dataset.open(tmp_path / "ds", label_column="target").feature_columns[:5]
    five = RandSVMClassifier(random_state=0, client=dask_client).fit(
        tmp_path / "ds", dataset_kwargs={"label_column": "target", "feature_columns": cols})
    assert five.n_features_in_ == 5
    with pytest.raises(ParameterError, match="path/URL"):
        RandSVMClassifier(client=dask_client).fit(X, y, dataset_kwargs={"n_features": 3})
