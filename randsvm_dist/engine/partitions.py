"""Partitions held by the Dask workers: rows, class indices and global row offsets.

A partition is loaded by a pure task (read from Parquet, or built from an array chunk that
travels inside the task), so when a worker dies Dask recomputes it on another worker from
the same inputs: no data is lost and nothing differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.validation import class_index


@dataclass
class Partition:
    """One partition on a worker.

    Attributes:
        X: float32 ndarray or CSR (n_rows, n_features).
        cls: int32 class index of each row (into the data set's sorted classes).
        offset: global index of the first row.
    """

    X: object
    cls: np.ndarray
    offset: int

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])


def load_dataset_partition(dataset, i: int, offset: int, classes: np.ndarray) -> Partition:
    """Read partition i of a Dataset into a Partition (runs on a worker)."""
    X, y = dataset.read_partition(i)
    return Partition(X, class_index(np.asarray(y), classes, where=f"partition {i}"), offset)


def make_array_partition(X, y: np.ndarray, offset: int, classes: np.ndarray) -> Partition:
    """Wrap an array chunk as a Partition (runs on a worker; the chunk is the task's input)."""
    return Partition(X, class_index(np.asarray(y), classes, where=f"rows from {offset}"), offset)


def take_rows(part: Partition, global_rows: np.ndarray):
    """The rows (X, class index) of a partition at the given global indices (ascending)."""
    local = np.asarray(global_rows, dtype=np.int64) - part.offset
    return part.X[local], part.cls[local]
