"""The variance of all feature values of a data set on the workers (gamma='scale'), each
row counted as often as it occurs in the user's data."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, PartitionSet
from randsvm_dist.numerics.kernels import moments_variance, value_moments


def partition_moments(part: Partition) -> tuple[int, float, float]:
    """``numerics.kernels.value_moments`` of a partition's rows, each counted as often as it occurs
    in the user's data (collapsed duplicates; runs on a worker)."""
    if part.count is None:
        return value_moments(part.X)
    X, c = part.X, part.count.astype(np.float64)
    if sp.issparse(X):
        sums = np.asarray(X.sum(axis=1), np.float64).ravel()
        sq = np.asarray(X.multiply(X).sum(axis=1), np.float64).ravel()
    else:
        X64 = np.asarray(X, np.float64)
        sums, sq = X64.sum(axis=1), np.einsum("ij,ij->i", X64, X64)
    return int(c.sum()) * X.shape[1], float(c @ sums), float(c @ sq)


def feature_variance(client, parts: PartitionSet) -> float:
    """Variance of all feature values of the data set (for gamma='scale')."""
    got = gather(client, [client.submit(partition_moments, parts.partition(client, i),
                                        pure=False, retries=2)
                          for i in range(parts.n_partitions)],
                 "the feature moments (gamma='scale')",
                 [f"partition {i}" for i in range(parts.n_partitions)])
    return moments_variance(got)
