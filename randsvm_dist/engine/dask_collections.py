"""Dask collections as input (dask arrays, DataFrames and Series, as in dask-ml): recognised,
turned into dask arrays, their blocks aligned (X one chunk over the features, y chunked like
X's rows)."""

from __future__ import annotations

import numpy as np

from randsvm_dist.exceptions import SchemaError


def is_dask_collection(obj) -> bool:
    """Whether obj is a Dask collection (dask array, DataFrame, Series, ...)."""
    from dask import is_dask_collection as _is

    return _is(obj)


def as_dask_array(obj, name: str):
    """A dask array from a dask array, DataFrame or Series (row lengths computed on the
    cluster if unknown); an in-memory array becomes one-chunk dask array.

    Raises:
        SchemaError: a DataFrame with non-numeric columns.
    """
    import dask.array as da

    if isinstance(obj, da.Array):
        return obj
    if is_dask_collection(obj) and hasattr(obj, "to_dask_array"):
        if hasattr(obj.dtypes, "items"):  # a DataFrame (pandas is there with dask.dataframe)
            from pandas.api.types import is_bool_dtype, is_numeric_dtype

            bad = [c for c, t in obj.dtypes.items()
                   if not (is_numeric_dtype(t) or is_bool_dtype(t))]
            if bad:
                raise SchemaError(f"{name}: columns {bad[:5]} are not numeric")
        return obj.to_dask_array(lengths=True)
    return da.from_array(np.asarray(obj))


def aligned_blocks(X, y):
    """X with one chunk over the features, y chunked like X's rows (known lengths)."""
    if X.ndim != 2:
        raise SchemaError(f"X must be 2-D (n_rows, n_features); got {X.ndim}-D. Reshape your "
                          "data")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.rechunk({1: -1})
    if y is not None:
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if any(np.isnan(c) for c in y.chunks[0]):
            y = y.compute_chunk_sizes()
        if y.shape[0] != X.shape[0]:
            raise SchemaError(f"y has {y.shape[0]} labels for {X.shape[0]} rows of X")
        y = y.rechunk((X.chunks[0],))
    return X, y
