"""Turning what a user passes to ``fit`` into partitions on the workers.

Accepted: a ``Dataset``, a path/URL of a Parquet data set, or arrays ``X, y``. Arrays are
cut into chunks that travel inside their loading tasks, so a dead worker's partitions are
rebuilt from the tasks themselves.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from .exceptions import ParameterError, SchemaError
from .randsvm.driver import PartitionSet
from .randsvm.partitions import (
    Partition,
    make_array_partition,
)
from .validation import check_classes, check_features, check_labels


def open_dataset(data, **kwargs):
    """A Dataset from a Dataset, a path or a URL (others: None).

    Args:
        data: Dataset, path/URL, or anything else (arrays: None is returned).
        kwargs: options of ``Dataset.open`` (label_column, feature_columns, n_features).

    Raises:
        ParameterError: kwargs given with something that is not a path/URL.
    """
    from .data import Dataset

    if isinstance(data, (str, os.PathLike)):
        return Dataset.open(data, **kwargs)
    if kwargs:
        raise ParameterError(f"dataset options {sorted(kwargs)} apply to a Parquet path/URL "
                             f"only; got {type(data).__name__}")
    return data if isinstance(data, Dataset) else None


def partition_moments(part: Partition) -> tuple[int, float, float]:
    """(number of feature values incl. implicit zeros, their sum, sum of squares)."""
    X = part.X
    if sp.issparse(X):
        d = X.data.astype(np.float64)
        return X.shape[0] * X.shape[1], float(d.sum()), float((d * d).sum())
    d = X.astype(np.float64, copy=False)
    return X.size, float(d.sum()), float(np.einsum("ij,ij->", d, d))


def feature_variance(client, parts: PartitionSet) -> float:
    """Variance of all feature values of the data set (for gamma='scale')."""
    got = client.gather([client.submit(partition_moments, parts.partition(client, i),
                                       pure=False, retries=2)
                         for i in range(parts.n_partitions)])
    n = sum(g[0] for g in got)
    s = sum(g[1] for g in got)
    ss = sum(g[2] for g in got)
    return max(ss / n - (s / n) ** 2, 0.0) if n else 0.0


def fits_in_memory(client, ds, share: float = 0.5) -> bool:
    """Whether a Dataset's rows take at most ``share`` of the workers' summed memory limit.

    Dense rows count 4 bytes a value, sparse ones their Parquet files' size x 3 (the
    files are compressed); workers without a limit count as unlimited.
    """
    workers = client.scheduler_info().get("workers", {}).values()
    limits = [int(w.get("memory_limit") or 0) for w in workers]
    if not limits or any(lim <= 0 for lim in limits):
        return True
    if ds.is_sparse:
        need = 3 * sum(ds.file_sizes) if hasattr(ds, "file_sizes") else 0
    else:
        need = 4 * (ds.n_features + 1) * ds.n_rows
    return need <= share * sum(limits)


def load_partitions(client, data, y=None, n_partitions: int | None = None,
                    cache="auto"):
    """Place the data on the workers.

    Args:
        client: distributed.Client.
        data: Dataset, path/URL, or X (then y is required).
        y: labels when data is X.
        n_partitions: chunks for array input (default: 2 per worker).
        cache: for a Dataset, keep its partitions in worker memory (True), re-read them
            from Parquet on every pass (False), or decide by ``fits_in_memory`` ('auto').
            Array input is always kept.

    Returns:
        (PartitionSet, classes ndarray).

    Raises:
        SchemaError: y missing/extra, one class, bad X.
    """
    ds = open_dataset(data)
    if ds is not None:
        if y is not None:
            raise SchemaError("y must not be given with a Dataset (labels are in its files)")
        classes = check_classes(ds.classes, where=f"the labels of {ds}")
        sizes = np.asarray(ds.partition_rows, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        parts = PartitionSet(None, offsets, sizes, ds.n_features, ds.is_sparse, ds, classes)
        if cache is True or (cache == "auto" and fits_in_memory(client, ds)):
            parts.futures = [parts.partition(client, i) for i in range(ds.n_partitions)]
        return parts, classes
    if y is None:
        raise SchemaError("y is required when fitting on arrays")
    X = check_features(data)
    y = check_labels(y, X.shape[0])
    classes = check_classes(np.unique(y), where="y")
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    n_chunks = max(1, min(n_partitions or 2 * workers, X.shape[0]))
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(np.int64)
    futures, offsets, sizes = [], [], []
    for a, b in zip(bounds[:-1], bounds[1:]):
        futures.append(client.submit(make_array_partition, X[a:b], y[a:b], int(a), classes,
                                     pure=False, retries=2))
        offsets.append(a)
        sizes.append(b - a)
    parts = PartitionSet(futures, np.asarray(offsets), np.asarray(sizes), X.shape[1],
                         sp.issparse(X))
    return parts, classes
