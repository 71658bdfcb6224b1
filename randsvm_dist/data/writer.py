"""Write partitioned Parquet data sets: one file per partition, published atomically.

Layouts (see :mod:`randsvm_dist.data.dataset`):

* dense: one float32 column per feature (``f0`` .. ``f{d-1}``) and the label column;
* sparse: ``indices`` list<int32> (0-based, ascending), ``values`` list<float32>, label.

Each file carries key-value metadata under ``randsvm_dist`` (JSON): layout, n_features, the
label column, and the partition's label values and counts, so a reader gets row counts,
classes and class counts without reading any data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from randsvm_dist.core.validation import check_features, check_labels
from randsvm_dist.data.dataset import Dataset
from randsvm_dist.data.publish import AtomicDir
from randsvm_dist.data.schema import FORMAT_VERSION, INDICES, LABEL, META_KEY, VALUES
from randsvm_dist.exceptions import ParameterError, SchemaError

DEFAULT_ROWS_PER_PARTITION = 1_000_000
ROW_GROUP_ROWS = 1 << 18  # bounds the Parquet writer's buffers


def feature_names(n_features: int) -> list[str]:
    """The dense layout's column names ``f0`` .. ``f{n_features-1}``."""
    return [f"f{j}" for j in range(n_features)]


def partition_sizes(n_rows: int, partitions: int | None = None,
                    rows_per_partition: int | None = None) -> list[int]:
    """Split ``n_rows`` into partition sizes.

    Args:
        n_rows: total rows.
        partitions: number of partitions (sizes differ by at most one row), or
        rows_per_partition: rows in every partition but the last. Give at most one;
            with neither, partitions hold ``DEFAULT_ROWS_PER_PARTITION`` rows.

    Returns:
        list of positive ints summing to n_rows (one empty partition when n_rows == 0).

    Raises:
        ParameterError: both are given, or one is not a positive integer.
    """
    if partitions is not None and rows_per_partition is not None:
        raise ParameterError("give either partitions or rows_per_partition, not both")
    if n_rows <= 0:
        return [0]
    if partitions is not None:
        p = _positive_int(partitions, "partitions")
        p = min(p, n_rows)
        base, extra = divmod(n_rows, p)
        return [base + (1 if i < extra else 0) for i in range(p)]
    r = _positive_int(rows_per_partition or DEFAULT_ROWS_PER_PARTITION, "rows_per_partition")
    sizes = [r] * (n_rows // r)
    if n_rows % r:
        sizes.append(n_rows % r)
    return sizes


def _positive_int(v, name: str) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a positive integer; got {v!r}") from None
    if i != v or i < 1:
        raise ParameterError(f"{name} must be a positive integer; got {v!r}")
    return i


def label_array(y: np.ndarray) -> pa.Array:
    """Labels as an Arrow array, keeping their type (ints stay ints, floats stay floats)."""
    y = np.asarray(y)
    if y.dtype == object:
        return pa.array(y.tolist())
    return pa.array(y)


def _real_valued(y: np.ndarray) -> bool:
    """Whether labels are real-valued targets (floats, not all integral)."""
    y = np.asarray(y)
    return y.dtype.kind == "f" and bool(np.any(y != np.round(y)))


def _class_stats(y: np.ndarray) -> tuple[list, list[int]]:
    values, counts = np.unique(np.asarray(y), return_counts=True)
    return values.tolist(), counts.astype(int).tolist()


def partition_table(X, y, *, n_features: int | None = None,
                    label_column: str = LABEL,
                    extra_meta: dict | None = None) -> pa.Table:
    """One partition as an Arrow table with the package's metadata attached.

    Args:
        X: float32 ndarray (dense layout) or CSR matrix (sparse layout), already checked.
        y: 1-D labels, same length.
        n_features: feature count to record (defaults to X.shape[1]).
        label_column: name of the label column.
        extra_meta: more JSON-able facts to store (e.g. the generator's name).

    Returns:
        pyarrow.Table ready for :func:`write_table`.
    """
    d = int(n_features if n_features is not None else X.shape[1])
    y_arr = label_array(y)
    if sp.issparse(X):
        X = X.tocsr()
        indptr = X.indptr.astype(np.int32, copy=False)
        idx = pa.ListArray.from_arrays(pa.array(indptr),
                                       pa.array(X.indices.astype(np.int32, copy=False)))
        val = pa.ListArray.from_arrays(pa.array(indptr),
                                       pa.array(X.data.astype(np.float32, copy=False)))
        table = pa.table({INDICES: idx, VALUES: val, label_column: y_arr})
        layout = "sparse"
        nnz = int(X.nnz)
    else:
        cols = {name: pa.array(X[:, j]) for j, name in enumerate(feature_names(X.shape[1]))}
        cols[label_column] = y_arr
        table = pa.table(cols)
        layout = "dense"
        nnz = None
    meta = {
        "version": FORMAT_VERSION,
        "layout": layout,
        "n_features": d,
        "label_column": label_column,
    }
    if _real_valued(y):  # regression targets: no per-value class statistics
        meta["label_kind"] = "real"
    else:
        meta["classes"], meta["class_counts"] = _class_stats(y)
    if nnz is not None:
        meta["nnz"] = nnz
    if extra_meta:
        meta.update(extra_meta)
    return table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})


def write_table(table: pa.Table, path: str, filesystem=None) -> None:
    """Write one partition file (snappy, no dictionary encoding: floats do not repeat)."""
    pq.write_table(table, path, filesystem=filesystem, use_dictionary=False,
                   compression="snappy", row_group_size=ROW_GROUP_ROWS)


class PartitionWriter:
    """Write partitions one at a time into a temporary directory; ``close()`` publishes it.

    Use as a context manager: an exception inside the block deletes everything written.

    Args:
        dst: output directory (local path or fsspec URL).
        overwrite: replace an existing ``dst``.
    """

    def __init__(self, dst: str | os.PathLike, overwrite: bool = False):
        self.dst = dst
        self.out = AtomicDir(dst, overwrite=overwrite)
        self.paths: list[str] = []
        self.label_column = LABEL

    @property
    def filesystem(self):
        """The filesystem the temporary directory lives on."""
        return self.out.fs

    def next_path(self) -> str:
        """Path of the next partition file (``part-00000.parquet``, ...)."""
        return self.out.path(f"part-{len(self.paths):05d}.parquet")

    def write(self, X, y, **kwargs) -> str:
        """Write one partition (see :func:`partition_table` for the arguments)."""
        path = self.next_path()
        self.label_column = kwargs.get("label_column", LABEL)
        write_table(partition_table(X, y, **kwargs), path, filesystem=self.out.fs)
        self.paths.append(path)
        return path

    def close(self):
        """Publish the directory at ``dst`` and return its Dataset."""
        self.out.commit()
        return Dataset.open(self.dst, label_column=self.label_column)

    def abort(self) -> None:
        """Delete everything written so far."""
        self.out.abort()

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def _row_bounds(sizes: Iterable[int]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for s in sizes:
        bounds.append((start, start + s))
        start += s
    return bounds


def write_arrays(X, y, dst: str | os.PathLike, partitions: int | None = None,
                 rows_per_partition: int | None = None, *, overwrite: bool = False,
                 label_column: str = LABEL):
    """Write in-memory arrays as a partitioned Parquet data set.

    Args:
        X: (n_rows, n_features) numpy array (dense layout) or scipy sparse matrix (sparse
            layout); converted to float32.
        y: n_rows labels, kept as they are (ints stay ints).
        dst: output directory (local path or fsspec URL); must not exist unless overwrite.
        partitions / rows_per_partition: how to split the rows (see :func:`partition_sizes`).
        overwrite: replace an existing ``dst``.
        label_column: name of the label column.

    Returns:
        The written :class:`~randsvm_dist.data.Dataset`.

    Raises:
        SchemaError: X is not 2-D numeric, holds NaN/inf, or y has the wrong length / NaN.
        ParameterError: bad partitioning arguments.
        DataFormatError: ``dst`` exists.
    """
    X = check_features(X)
    y = check_labels(y, X.shape[0])
    if X.shape[1] == 0:
        raise SchemaError("X has no feature columns")
    sizes = partition_sizes(X.shape[0], partitions, rows_per_partition)
    with PartitionWriter(dst, overwrite=overwrite) as w:
        for a, b in _row_bounds(sizes):
            w.write(X[a:b], y[a:b], n_features=X.shape[1], label_column=label_column)
        return w.close()
