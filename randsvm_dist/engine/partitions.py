"""Partitions held by the Dask workers, the handle the driver keeps of them, and fetching
their rows.

A partition is built by pure tasks from its source (a Parquet partition, a Dask block, or
an array chunk scattered to the workers once and named in the task by its key, never
embedded in the task graph; see ``chunk_store.ChunkStore``), so when a worker dies Dask
recomputes it on another worker from the same inputs: no data is lost and nothing differs.
How it is built (duplicates collapsed, layout chosen) is ``engine.partition_build``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.targets import LabelCoding
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.worker_memory import use_system_arrow_pool


@dataclass
class Partition:
    """One partition on a worker.

    Attributes:
        X: float32 ndarray or CSR (n_rows, n_features).
        y: coded labels (see ``LabelCoding``): int32 class indices or float64 targets.
        offset: global index of the first row.
        weight: per-row sample weights (float64), or None (all 1). A collapsed row's weight
            is the sum of its copies' positive weights (their number when unweighted).
        origin: the original global index of the first row before duplicates were
            collapsed (None: ``offset``, nothing was renumbered).
        kept: positions, among the partition's original rows, of the rows kept (the first
            copy of each; ascending), or None (all rows).
        count: copies of each row (int64), or None (all 1).
    """

    X: object
    y: np.ndarray
    offset: int
    weight: np.ndarray | None = None
    origin: int | None = None
    kept: np.ndarray | None = None
    count: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    def weights(self) -> np.ndarray:
        """Per-row sample weights (ones when none were given)."""
        return np.ones(self.n_rows) if self.weight is None else self.weight

    def counts(self) -> np.ndarray:
        """Copies of each row in the user's data (ones when nothing was collapsed)."""
        return np.ones(self.n_rows, np.int64) if self.count is None else self.count

    def original_rows(self, local: np.ndarray | None = None) -> np.ndarray:
        """The user's global row indices of the given local rows (default: all rows).

        Args:
            local: positions in this partition (int array), or None for every row.

        Returns:
            int64 array: the original index of each (its first copy's, when collapsed).
        """
        local = np.arange(self.n_rows) if local is None else np.asarray(local, np.int64)
        origin = self.offset if self.origin is None else self.origin
        pos = local if self.kept is None else self.kept[local]
        return origin + np.asarray(pos, np.int64)


def load_dataset_partition(dataset, i: int, offset: int, coding: LabelCoding,
                           transform=None) -> Partition:
    """Read partition i of a Dataset (and its weight column, if any) into a Partition
    (runs on a worker), then ``transform(partition)`` if given (a fitted scaling)."""
    use_system_arrow_pool()
    X, y, w = dataset.read_weighted_partition(i)
    part = Partition(X, coding.encode(y, f"partition {i} ({dataset.paths[i]})"), offset, w)
    return part if transform is None else transform(part)


def make_array_partition(X, y: np.ndarray, offset: int, coding: LabelCoding,
                         weight: np.ndarray | None = None) -> Partition:
    """Wrap an array chunk as a Partition (runs on a worker)."""
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
    n_collapsed: int = 0     # duplicate rows removed (collapsed into weighted rows)
    n_collapsed_across: int = 0  # of those, rows whose copies were in other partitions only
    exchanged: bool = False  # duplicates were looked for across partitions too
    source: object = None    # keeps the partitions' sources alive (``chunk_store.ChunkStore``)
    transform: object = None  # re-read partitions: applied to each after its read (scaling)

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
                             self.coding, self.transform, pure=False, retries=2,
                             **placed(where))

    def all(self, client) -> list:
        """Futures of every partition, in order."""
        return [self.partition(client, i) for i in range(self.n_partitions)]

    def names(self) -> list[str]:
        """'partition i' for every partition (for error messages of gathers)."""
        return [f"partition {i}" for i in range(self.n_partitions)]


def per_owner(client, parts: PartitionSet, rows: np.ndarray, fn, what: str) -> list:
    """``fn(partition, its rows)`` on the workers for every partition owning some of the
    sorted global ``rows``, gathered in partition order (``what`` names them in errors)."""
    owner = np.searchsorted(parts.offsets, rows, side="right") - 1
    owners = np.unique(owner)
    futures = [client.submit(fn, parts.partition(client, p), rows[owner == p], pure=False,
                             retries=2) for p in owners]
    return gather(client, futures, what, [f"partition {p}" for p in owners])


def fetch_rows(client, parts: PartitionSet, rows: np.ndarray):
    """(rows, X, y, weight) at sorted global indices, fetched from the workers."""
    rows = np.unique(np.asarray(rows, np.int64))
    got = per_owner(client, parts, rows, take_rows, "rows of the next working set")
    X = vstack_rows([g[0] for g in got], parts.is_sparse)
    if X is None:
        X = empty_rows(parts.n_features, parts.is_sparse)
    y = np.concatenate([g[1] for g in got]) if got else np.empty(0)
    w = np.concatenate([g[2] for g in got]) if got else np.empty(0)
    return rows, X, y, w


def _original_of(part: Partition, global_rows: np.ndarray) -> np.ndarray:
    return part.original_rows(np.asarray(global_rows, np.int64) - part.offset)


def original_rows(client, parts: PartitionSet, rows: np.ndarray) -> np.ndarray:
    """The user's row indices of global rows of a (possibly collapsed) PartitionSet.

    Args:
        client: distributed.Client.
        parts: the PartitionSet the rows index.
        rows: global row indices (any order; repeats allowed).

    Returns:
        int64 array aligned with ``rows``: each row's index in the data the user passed
        (a collapsed row's first copy). The same array when nothing was collapsed.
    """
    rows = np.asarray(rows, np.int64)
    if not parts.n_collapsed or not len(rows):
        return rows
    uniq, inverse = np.unique(rows, return_inverse=True)
    got = per_owner(client, parts, uniq, _original_of, "the original row indices")
    return np.concatenate(got)[inverse]
