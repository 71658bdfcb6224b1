"""Partitions held by the Dask workers and the handle the driver keeps of them.

A partition is built by pure tasks from its source (a Parquet partition, a Dask block, or
an array chunk scattered to the workers once and named in the task by its key, never
embedded in the task graph; see ``chunk_store.ChunkStore``), so when a worker dies Dask
recomputes it on another worker from the same inputs: no data is lost and nothing differs.

Building takes two steps: ``loaded`` (read and code the rows, find the duplicates) and
``finish`` (collapse duplicates, choose the layout, number the rows). Between them the
driver gathers a few numbers per partition (``survey``) and decides, for the whole data set:

- **duplicates**: identical rows (same features, same label) become one row whose weight is
  their number (their summed sample weights when weighted) and whose box is C x that
  weight: the same optimum (the duals of identical rows act as one variable of the summed
  box), fewer rows. Done when ``collapse_pays``.
- **layout**: CSR or dense, by density (``preferred_layout``).

Rows are then numbered in the collapsed set (``PartitionSet.offsets``); each partition
keeps the original index of its rows (``Partition.original_rows``), so what a fit exposes
(``support_``) names the user's rows (``original_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.validation import class_index
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.exceptions import SchemaError


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


def load_dataset_partition(dataset, i: int, offset: int, coding: LabelCoding) -> Partition:
    """Read partition i of a Dataset (and its weight column, if any) into a Partition
    (runs on a worker)."""
    X, y, w = dataset.read_weighted_partition(i)
    return Partition(X, coding.encode(y, f"partition {i} ({dataset.paths[i]})"), offset, w)


def make_array_partition(X, y: np.ndarray, offset: int, coding: LabelCoding,
                         weight: np.ndarray | None = None) -> Partition:
    """Wrap an array chunk as a Partition (runs on a worker)."""
    return Partition(X, coding.encode(y, f"rows from {offset}"), offset,
                     None if weight is None else np.asarray(weight, np.float64))


# -- duplicates ---------------------------------------------------------------------------
# Collapse duplicates when at least this share of the rows goes (or at once when the rows
# already carry weights, so solves are weighted anyway). A collapsed set solves through
# scikit-learn's LIBSVM with per-row boxes (``solvers.weighted``), 1.0-1.6x slower than
# libsvm-official on the same rows and without its OpenMP threads (DESIGN.md), while a
# solve's cost grows ~ n^2 and a scan's ~ n: removing 25% of the rows cuts a solve to
# 0.75^2 = 0.56 of its work, which covers the weighted solver's 1.6x; less does not.
DUPLICATE_SHARE = 0.25
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)
HASH_BLOCK = 8192


def _row_hashes(X, y: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bytes and label (identical rows, identical hashes)."""
    n = X.shape[0]
    with np.errstate(over="ignore"):
        y = np.ascontiguousarray(y)
        if y.dtype.itemsize not in (4, 8):
            y = y.astype(np.float64)
        h = y.view(np.uint64 if y.dtype.itemsize == 8 else np.uint32).astype(np.uint64)
        h = h * _HASH_MULT
        if sp.issparse(X):
            if X.nnz:
                bits = np.asarray(X.data, np.float32).view(np.uint32).astype(np.uint64)
                e = (bits + np.uint64(0x632BE59BD9B4E019)) * (
                    X.indices.astype(np.uint64) * np.uint64(2) + np.uint64(0xD6E8FEB86659FD93))
                e ^= e >> np.uint64(29)
                per_row = np.zeros(n, np.uint64)
                nz = np.diff(X.indptr) > 0
                per_row[nz] = np.add.reduceat(e, X.indptr[:-1][nz])
                h = (h ^ per_row) * _HASH_MULT
            h ^= np.diff(X.indptr).astype(np.uint64)
        else:
            X = np.ascontiguousarray(X, dtype=np.float32)
            if X.shape[1] % 2:  # pairs of float32 as one uint64: half the passes
                X = np.hstack([X, np.zeros((n, 1), np.float32)])
            bits = X.view(np.uint64)
            for s in range(0, n, HASH_BLOCK):  # row blocks stay in cache across columns
                hb = h[s:s + HASH_BLOCK]
                for j in range(bits.shape[1]):
                    hb ^= bits[s:s + HASH_BLOCK, j]
                    hb *= _HASH_MULT
                    hb ^= hb >> np.uint64(31)
    return h


def _rows_equal(X, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether rows a[i] and b[i] have the same features and label (exactly)."""
    same = y[a] == y[b]
    if sp.issparse(X):
        diff = (X[a] - X[b]).tocsr()
        diff.eliminate_zeros()
        return same & (diff.getnnz(axis=1) == 0)
    return same & np.all(X[a] == X[b], axis=1)


def duplicate_representatives(X, y: np.ndarray) -> np.ndarray | None:
    """For every row, the position of the first row identical to it (same features, same
    label): an exact grouping (hashes find candidates, each is then compared in full).

    Args:
        X: float32 ndarray or CSR with canonical rows (sorted indices, no explicit zeros).
        y: coded labels (zeros when labels are ignored).

    Returns:
        int64 array (n_rows,), or None when no two rows are identical or a hash collision
        was met (never seen; the partition then stays as it is, which is exact too).
    """
    n = X.shape[0]
    if n < 2:
        return None
    h = _row_hashes(X, y)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    starts = np.ones(n, bool)
    starts[1:] = hs[1:] != hs[:-1]
    if starts.all():
        return None
    run_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    first = order[run_start]   # stable sort: the run's first row is its first occurrence
    cand = np.flatnonzero(~starts)
    if not _rows_equal(X, y, order[cand], first[cand]).all():
        return None
    rep = np.empty(n, np.int64)
    rep[order] = first
    return rep


def canonical_rows(X):
    """X with sorted column indices and no stored zeros (CSR), so that identical rows are
    identical bytes; dense X unchanged."""
    if sp.issparse(X) and (not X.has_canonical_format or
                           (X.nnz and not np.all(X.data))):
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
    return X


def collapse_pays(n_rows: int, n_unique: int, weighted: bool) -> bool:
    """The rule for collapsing duplicates: some rows go and either the rows already carry
    weights or at least DUPLICATE_SHARE of them go (see DUPLICATE_SHARE)."""
    removed = n_rows - n_unique
    return removed > 0 and (weighted or removed >= DUPLICATE_SHARE * n_rows)


# -- layout -------------------------------------------------------------------------------
# Rows are kept as CSR below these densities (share of non-zeros), dense above. Measured
# under load (2 cores shared with other runs, 2026-11-25; best of 3): a scan's kernel block
# (``kernels.decision_values``, RBF, 20,000 rows x 1,000 dense support vectors), CSR time
# over dense time:
#
#   features \ density   0.02  0.05  0.10  0.20  0.30  0.50  0.70  1.00
#   120                  0.31  0.34  0.38  0.51  0.66  0.77  1.59  1.42
#   300                              0.43  1.06  1.16  2.01
#   800                  0.20  0.28  0.72  0.88  1.97  1.96
#
# Solves: libsvm-official turns every input into sparse nodes (cost ~ nnz, the same for
# both layouts, within noise: 3,000 rows, d = 120 and 800, densities 0.02-0.4); weighted
# solves (scikit-learn's LIBSVM, dense or sparse kernels) at d = 800: CSR 0.8x dense time at
# density 0.02, 0.7x at 0.2, 1.4x at 0.4; at d = 120 within 10% either way up to 0.4.
# So CSR below 0.2 everywhere, and up to 0.5 when there are few features (the exp of the
# kernel, the same in both layouts, dominates there and the sparse product is cheap).
SPARSE_DENSITY = 0.2
SPARSE_DENSITY_FEW = 0.5
FEW_FEATURES = 200


def preferred_layout(nnz: int, n_rows: int, n_features: int) -> str:
    """'csr' or 'dense': the layout scans and solves run fastest on, by density.

    LIBSVM (libsvm-official) stores rows as sparse nodes whatever the input, so its solves
    cost ~ nnz either way; the scan's kernel blocks run on BLAS for dense rows and on a
    sparse product for CSR, which wins below a density that falls with the feature count;
    weighted solves (scikit-learn's LIBSVM) follow the same trend. The measurements are
    above SPARSE_DENSITY.

    Args:
        nnz: non-zero feature values of the rows.
        n_rows, n_features: the rows' shape.

    Returns:
        'csr' when the density nnz / (n_rows x n_features) is below SPARSE_DENSITY_FEW
        (at most FEW_FEATURES features) or SPARSE_DENSITY (more), else 'dense'.
    """
    cells = max(1, int(n_rows) * int(n_features))
    limit = SPARSE_DENSITY_FEW if n_features <= FEW_FEATURES else SPARSE_DENSITY
    return "csr" if nnz < limit * cells else "dense"


def as_layout(X, layout: str):
    """X as float32 CSR ('csr') or C-ordered dense ('dense'); unchanged if already so."""
    if layout == "csr" and not sp.issparse(X):
        out = sp.csr_matrix(np.asarray(X, np.float32))
        out.sort_indices()
        return out
    if layout == "dense" and sp.issparse(X):
        return np.ascontiguousarray(X.toarray(), dtype=np.float32)
    return X


@dataclass
class Loaded:
    """A partition as loaded, before ``finish``: its rows and how they group.

    Attributes:
        part: the Partition (original rows, original offset).
        rep: each row's first identical row (``duplicate_representatives``), or None.
    """

    part: Partition
    rep: np.ndarray | None = None


def load_rows(part: Partition, find_duplicates: bool) -> Loaded:
    """A loaded Partition, with its duplicates found when asked (runs on a worker)."""
    if not find_duplicates:
        return Loaded(part)
    X = canonical_rows(part.X)
    part = replace(part, X=X) if X is not part.X else part
    return Loaded(part, duplicate_representatives(X, part.y))


def loaded_dataset_partition(dataset, i: int, offset: int, coding: LabelCoding,
                             find_duplicates: bool) -> Loaded:
    """``load_rows`` of partition i of a Dataset (runs on a worker)."""
    return load_rows(load_dataset_partition(dataset, i, offset, coding), find_duplicates)


def survey(loaded: Loaded) -> tuple[int, int, int, int]:
    """(rows, distinct rows, non-zeros of all rows, non-zeros of the distinct rows) of a
    loaded partition (runs on a worker)."""
    X, n = loaded.part.X, loaded.part.n_rows
    per_row = (np.diff(X.indptr) if sp.issparse(X) else np.count_nonzero(X, axis=1))
    nnz = int(per_row.sum())
    if loaded.rep is None:
        return n, n, nnz, nnz
    firsts = loaded.rep == np.arange(n)
    return n, int(firsts.sum()), nnz, int(per_row[firsts].sum())


def finish(loaded: Loaded, offset: int, collapse: bool, layout: str) -> Partition:
    """The final Partition: duplicates collapsed (when ``collapse`` and there are any),
    rows in ``layout`` ('csr', 'dense' or 'keep'), numbered from ``offset`` (runs on a
    worker; pure)."""
    part = loaded.part
    origin = part.offset if part.origin is None else part.origin
    if collapse and loaded.rep is not None:
        rep = loaded.rep
        kept = np.flatnonzero(rep == np.arange(len(rep)))
        group = np.searchsorted(kept, rep)
        count = np.bincount(group, minlength=len(kept)).astype(np.int64)
        w = (count.astype(np.float64) if part.weight is None else
             np.bincount(group, weights=np.maximum(part.weight, 0.0), minlength=len(kept)))
        part = Partition(part.X[kept], part.y[kept], offset, w, origin, kept, count)
    elif offset != part.offset or collapse:
        part = replace(part, offset=offset, origin=origin,
                       weight=part.weights() if collapse else part.weight)
    if layout != "keep":
        X = as_layout(part.X, layout)
        part = replace(part, X=X) if X is not part.X else part
    return part


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
    source: object = None    # keeps the partitions' sources alive (``chunk_store.ChunkStore``)

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
