"""Duplicate rows: finding identical rows (same features, same label) in a partition, and
the rule for collapsing them into one weighted row.

Identical rows become one row whose weight is their number (their summed sample weights
when weighted) and whose box is C x that weight: the same optimum (the duals of identical
rows act as one variable of the summed box), fewer rows. Within a partition the grouping
is exact: 64-bit row hashes find candidates, each candidate is then compared in full.
Copies in different partitions are found by ``engine.duplicate_exchange`` from the same
hashes and a second, independent one (``row_hashes``' seed).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# Collapse duplicates when at least this share of the rows goes (or at once when the rows
# already carry weights, so solves are weighted anyway). A collapsed set solves through
# scikit-learn's LIBSVM with per-row boxes (``solvers.weighted``), up to 1.6x slower than
# libsvm-official on the same rows and without its OpenMP threads (a one-off measurement;
# no script in benchmarks/ repeats it), while a solve's cost grows ~ n^2 and a scan's ~ n:
# removing 25% of the rows cuts a solve to 0.75^2 = 0.56 of its work, which covers the
# weighted solver's 1.6x; less does not.
DUPLICATE_SHARE = 0.25
# oneDAL takes per-row boxes as sample weights at the cost of none (a9a's 26,008 distinct
# rows: 3.1 s weighted or not), so where oneDAL solves the rows either way a smaller share
# pays (a9a's 20% of copies: the in-process solve 3.9 -> 3.0 s, its scan 0.70 -> 0.50 s).
ONEDAL_DUPLICATE_SHARE = 0.05
# Two independent row hashes (``row_hashes``' seed picks one): the multiplier that mixes
# each step, the start mixed into the label, and the two constants of a sparse entry.
_HASH_PARAMS = (
    (0x9E3779B97F4A7C15, 0, 0x632BE59BD9B4E019, 0xD6E8FEB86659FD93),
    (0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x2545F4914F6CDD1D, 0xFF51AFD7ED558CCD),
)
HASH_SEEDS = len(_HASH_PARAMS)
HASH_BLOCK = 8192


def row_hashes(X, y: np.ndarray, seed: int = 0) -> np.ndarray:
    """A 64-bit hash of each row's bytes and label (identical rows, identical hashes).

    Args:
        X: float32 ndarray or CSR with canonical rows (``canonical_rows``).
        y: coded labels (zeros when labels are ignored).
        seed: which of the HASH_SEEDS independent hash functions (0 or 1).

    Returns:
        uint64 array (n_rows,).
    """
    mult, start, c_value, c_index = (np.uint64(c) for c in _HASH_PARAMS[seed])
    n = X.shape[0]
    with np.errstate(over="ignore"):
        y = np.ascontiguousarray(y)
        if y.dtype.itemsize not in (4, 8):
            y = y.astype(np.float64)
        h = y.view(np.uint64 if y.dtype.itemsize == 8 else np.uint32).astype(np.uint64)
        h = (h ^ start) * mult
        if sp.issparse(X):
            if X.nnz:
                bits = np.asarray(X.data, np.float32).view(np.uint32).astype(np.uint64)
                e = (bits + c_value) * (X.indices.astype(np.uint64) * np.uint64(2) + c_index)
                e ^= e >> np.uint64(29)
                per_row = np.zeros(n, np.uint64)
                nz = np.diff(X.indptr) > 0
                per_row[nz] = np.add.reduceat(e, X.indptr[:-1][nz])
                h = (h ^ per_row) * mult
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
                    hb *= mult
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


def duplicate_representatives(X, y: np.ndarray, h: np.ndarray | None = None
                              ) -> np.ndarray | None:
    """For every row, the position of the first row identical to it (same features, same
    label): an exact grouping (hashes find candidates, each is then compared in full).

    Args:
        X: float32 ndarray or CSR with canonical rows (sorted indices, no explicit zeros).
        y: coded labels (zeros when labels are ignored).
        h: the rows' ``row_hashes`` (seed 0) when already computed.

    Returns:
        int64 array (n_rows,), or None when no two rows are identical or a hash collision
        was met (never seen; the partition then stays as it is, which is exact too).
    """
    n = X.shape[0]
    if n < 2:
        return None
    h = row_hashes(X, y) if h is None else h
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


def collapse_pays(n_rows: int, n_unique: int, weighted: bool, onedal: bool = False
                  ) -> bool:
    """The rule for collapsing duplicates: some rows go and either the rows already carry
    weights or at least DUPLICATE_SHARE of them go (ONEDAL_DUPLICATE_SHARE when ``onedal``:
    oneDAL solves these rows weighted or not)."""
    removed = n_rows - n_unique
    share = ONEDAL_DUPLICATE_SHARE if onedal else DUPLICATE_SHARE
    return removed > 0 and (weighted or removed >= share * n_rows)
