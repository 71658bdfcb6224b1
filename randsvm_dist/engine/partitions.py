"""Partitions held by the Dask workers and the handle the driver keeps of them.

A partition is loaded by a pure task (read from Parquet, or built from an array chunk that
travels inside the task), so when a worker dies Dask recomputes it on another worker from
the same inputs: no data is lost and nothing differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.exceptions import SchemaError
from randsvm_dist.validation import class_index


@dataclass(frozen=True)
class LabelCoding:
    """How a partition's labels become the numbers the solvers see.

    Attributes:
        classes: sorted classes: labels become their class index (int32). None: labels are
            real-valued targets (float64; regression), or ignored when ``use_labels`` is
            False (one-class training).
        use_labels: False: the labels are not needed (zeros are kept).
    """

    classes: np.ndarray | None = None
    use_labels: bool = True

    def encode(self, y, where: str) -> np.ndarray:
        """The coded labels of raw labels ``y``.

        Raises:
            SchemaError: a label not among the classes, or a target that is missing, not a
                number, or not finite (naming ``where`` and the row).
        """
        y = np.asarray(y)
        if not self.use_labels:
            return np.zeros(len(y), np.float64)
        if self.classes is not None:
            return class_index(y, self.classes, where=where)
        return real_targets(y, where)


def real_targets(y, where: str) -> np.ndarray:
    """y as float64 regression targets.

    Raises:
        SchemaError: a missing, non-numeric or non-finite target (naming ``where`` and row).
    """
    y = np.asarray(y)
    if y.dtype == object or not (np.issubdtype(y.dtype, np.number)
                                 or np.issubdtype(y.dtype, np.bool_)):
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            bad = next(i for i, v in enumerate(y.tolist()) if not _is_number(v))
            raise SchemaError(f"{where}, row {bad}: target {y[bad]!r} is not a number "
                              "(regression needs real-valued targets)") from None
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise SchemaError(f"{where}, row {bad}: target {y[bad]!r} is missing or not finite; "
                          "drop such rows before training")
    return y


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return v is not None


@dataclass
class Partition:
    """One partition on a worker.

    Attributes:
        X: float32 ndarray or CSR (n_rows, n_features).
        y: coded labels (see ``LabelCoding``): int32 class indices or float64 targets.
        offset: global index of the first row.
        weight: per-row sample weights (float64), or None (all 1).
    """

    X: object
    y: np.ndarray
    offset: int
    weight: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    def weights(self) -> np.ndarray:
        """Per-row sample weights (ones when none were given)."""
        return np.ones(self.n_rows) if self.weight is None else self.weight


def load_dataset_partition(dataset, i: int, offset: int, coding: LabelCoding) -> Partition:
    """Read partition i of a Dataset (and its weight column, if any) into a Partition
    (runs on a worker)."""
    X, y, w = dataset.read_weighted_partition(i)
    return Partition(X, coding.encode(y, f"partition {i} ({dataset.paths[i]})"), offset, w)


def make_array_partition(X, y: np.ndarray, offset: int, coding: LabelCoding,
                         weight: np.ndarray | None = None) -> Partition:
    """Wrap an array chunk as a Partition (runs on a worker; the chunk is the task's input)."""
    return Partition(X, coding.encode(y, f"rows from {offset}"), offset,
                     None if weight is None else np.asarray(weight, np.float64))


def take_rows(part: Partition, global_rows: np.ndarray):
    """(X, y, weight) of a partition's rows at the given global indices (ascending)."""
    local = np.asarray(global_rows, dtype=np.int64) - part.offset
    return part.X[local], part.y[local], part.weights()[local]


def vstack_rows(blocks, sparse: bool):
    """Rows of several matrices stacked (CSR when sparse); None when there are none."""
    blocks = [b for b in blocks if b is not None and b.shape[0]]
    if not blocks:
        return None
    return sp.vstack(blocks, format="csr") if sparse else np.vstack(blocks)


def empty_rows(n_features: int, sparse: bool):
    """A float32 matrix of zero rows (CSR when sparse)."""
    return (sp.csr_matrix((0, n_features), dtype=np.float32) if sparse
            else np.zeros((0, n_features), np.float32))


def placed(worker: str | None) -> dict:
    """``client.submit`` keywords asking for ``worker`` (any other may run the task)."""
    return {"workers": [worker], "allow_other_workers": True} if worker else {}


@dataclass
class PartitionSet:
    """The data set as partitions on the workers.

    With ``futures`` the partitions stay in worker memory (futures of ``Partition``);
    without (``futures=None``), every pass re-reads them from the ``dataset``'s Parquet
    files, so data larger than the workers' memory can be trained on.
    """

    futures: list | None
    offsets: np.ndarray   # global index of each partition's first row
    sizes: np.ndarray
    n_features: int
    is_sparse: bool
    dataset: object = None
    coding: LabelCoding = LabelCoding()
    weighted: bool = False   # rows carry sample weights

    @property
    def n_rows(self) -> int:
        return int(self.sizes.sum())

    @property
    def n_partitions(self) -> int:
        return len(self.sizes)

    def partition(self, client, i: int, where: str | None = None):
        """A future of partition i: the cached one, or a fresh read from Parquet (on worker
        ``where`` if given and still there)."""
        if self.futures is not None:
            return self.futures[i]
        return client.submit(load_dataset_partition, self.dataset, i, int(self.offsets[i]),
                             self.coding, pure=False, retries=2, **placed(where))

    def all(self, client) -> list:
        """Futures of every partition, in order."""
        return [self.partition(client, i) for i in range(self.n_partitions)]

    def names(self) -> list[str]:
        """'partition i' for every partition (for error messages of gathers)."""
        return [f"partition {i}" for i in range(self.n_partitions)]


def fetch_rows(client, parts: PartitionSet, rows: np.ndarray):
    """(rows, X, y, weight) at sorted global indices, fetched from the workers."""
    rows = np.unique(np.asarray(rows, np.int64))
    owner = np.searchsorted(parts.offsets, rows, side="right") - 1
    owners = np.unique(owner)
    futures = [client.submit(take_rows, parts.partition(client, p), rows[owner == p],
                             pure=False, retries=2) for p in owners]
    got = gather(client, futures, "rows of the next working set",
                 [f"partition {p}" for p in owners])
    X = vstack_rows([g[0] for g in got], parts.is_sparse)
    if X is None:
        X = empty_rows(parts.n_features, parts.is_sparse)
    y = np.concatenate([g[1] for g in got]) if got else np.empty(0)
    w = np.concatenate([g[2] for g in got]) if got else np.empty(0)
    return rows, X, y, w
