"""Totals over a data set's partitions, counted on the workers: rows of each class, rows
of positive weight of each class, the sum of the positive weights; ``RowTotals``, what a
fit's problems are built from, and ``WorkerTotals``, those totals of partitions on the
workers; and the moments of all feature values (their variance: gamma='scale'), each row
counted as often as it occurs in the user's data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, PartitionSet
from randsvm_dist.numerics.kernels import moments_variance, value_moments


def _partition_class_counts(part: Partition, n_classes: int) -> np.ndarray:
    if part.count is None:
        return np.bincount(part.y, minlength=n_classes)
    return np.bincount(part.y, weights=part.count, minlength=n_classes).astype(np.int64)


def class_counts(client, parts: PartitionSet, n_classes: int) -> np.ndarray:
    """Rows of each class (in the sorted classes' order): from a Dataset's metadata when
    the partitions are not cached, else counted on the workers."""
    if parts.futures is None and parts.dataset is not None:
        return np.asarray(parts.dataset.class_counts, dtype=np.int64)
    got = gather(client, [client.submit(_partition_class_counts, f, n_classes, pure=False,
                                        retries=2) for f in parts.all(client)],
                 "the class counts", parts.names())
    return np.sum(got, axis=0).astype(np.int64)


def _positive_weight(part: Partition) -> float:
    return float(np.maximum(part.weights(), 0.0).sum())


def weight_total(client, parts: PartitionSet) -> float:
    """The sum of the sample weights of the rows that take part (weights > 0)."""
    if not parts.weighted:
        return float(parts.n_rows)
    return float(sum(gather(client, [client.submit(_positive_weight, f, pure=False, retries=2)
                                     for f in parts.all(client)],
                            "the sample weights", parts.names())))


def _positive_rows_per_class(part: Partition, n_classes: int) -> np.ndarray:
    return np.bincount(part.y[part.weights() > 0], minlength=n_classes).astype(np.int64)


def positive_class_counts(client, parts: PartitionSet, n_classes: int) -> np.ndarray:
    """Rows of positive weight of each class, counted on the workers (rows of weight <= 0
    take no part in the problem)."""
    got = gather(client, [client.submit(_positive_rows_per_class, f, n_classes,
                                        pure=False, retries=2) for f in parts.all(client)],
                 "the sample weights", parts.names())
    return np.sum(got, axis=0)


class RowTotals(Protocol):
    """What the problems are built from: the data's rows, classes and weights, counted on
    the workers (``WorkerTotals``) or in the client (``exact.in_process.InMemoryRows``)."""

    @property
    def n_rows(self) -> int: ...

    @property
    def n_features(self) -> int: ...

    def class_counts(self, n_classes: int) -> np.ndarray:
        """Rows of each class (the user's rows, collapsed copies counted)."""

    def positive_class_counts(self, n_classes: int) -> np.ndarray | None:
        """Rows of positive weight of each class; None when no row carries a weight."""

    def weight_total(self) -> float:
        """The sum of the positive sample weights."""


@dataclass
class WorkerTotals:
    """RowTotals of partitions on the workers."""

    client: object
    parts: object

    @property
    def n_rows(self) -> int:
        return self.parts.n_rows

    @property
    def n_features(self) -> int:
        return self.parts.n_features

    def class_counts(self, n_classes: int) -> np.ndarray:
        return class_counts(self.client, self.parts, n_classes)

    def positive_class_counts(self, n_classes: int) -> np.ndarray | None:
        if not self.parts.weighted:
            return None
        return positive_class_counts(self.client, self.parts, n_classes)

    def weight_total(self) -> float:
        return weight_total(self.client, self.parts)


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
