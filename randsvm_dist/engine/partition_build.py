"""Building a partition on its worker, in two steps between which the driver decides for
the whole data set.

``load_rows`` (read and code the rows, hash them and find the duplicates within the
partition: ``engine.duplicates``) and ``finish`` (collapse duplicates as ``Groups`` say,
choose the layout, number the rows). Between them the driver gathers a
few numbers per partition (``survey``), decides whether duplicates are grouped over the
whole data set (``engine.duplicate_exchange``, which gives each Loaded its ``Groups``),
whether to collapse them (``duplicates.collapse_pays``) and which layout to use
(``preferred_layout``: CSR or dense, by density for the whole data set). Every step is a
pure task, so a lost partition is rebuilt from the same inputs.

Rows are then numbered in the collapsed set (``PartitionSet.offsets``); each partition
keeps the original index of its rows (``Partition.original_rows``), so what a fit exposes
(``support_``) names the user's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.targets import LabelCoding
from randsvm_dist.engine.duplicates import (
    canonical_rows,
    duplicate_representatives,
    row_hashes,
)
from randsvm_dist.engine.partitions import Partition, load_dataset_partition

# Rows are kept as CSR below these densities (share of non-zeros), dense above. Measured
# (best of 3; a one-off timing, no script in benchmarks/ repeats it) on a scan's kernel
# block (``kernels.decision_values``, RBF, 20,000 rows x 1,000 dense support vectors), CSR
# time over dense time:
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
class Groups:
    """How a partition's rows collapse: the rows kept and what each kept row stands for.

    Attributes:
        kept: positions of the rows kept (ascending), among the partition's rows.
        weight: each kept row's weight: the sum of the positive sample weights of its
            copies (their number when unweighted), float64.
        count: each kept row's copies in the user's data, int64.
    """

    kept: np.ndarray
    weight: np.ndarray
    count: np.ndarray


@dataclass
class Loaded:
    """A partition as loaded, before ``finish``: its rows and how they group.

    Attributes:
        part: the Partition (original rows, original offset).
        rep: each row's first identical row in the partition (``duplicate_representatives``),
            or None.
        hashes: the rows' ``row_hashes`` (seed 0) when duplicates were looked for, or None.
        groups: the grouping over the whole data set (``duplicate_exchange``), or None
            (then ``rep``'s, within the partition).
    """

    part: Partition
    rep: np.ndarray | None = None
    hashes: np.ndarray | None = None
    groups: Groups | None = None


def load_rows(part: Partition, find_duplicates: bool) -> Loaded:
    """A loaded Partition, with its duplicates found when asked (runs on a worker)."""
    if not find_duplicates:
        return Loaded(part)
    X = canonical_rows(part.X)
    part = replace(part, X=X) if X is not part.X else part
    h = row_hashes(X, part.y)
    return Loaded(part, duplicate_representatives(X, part.y, h), h)


def loaded_dataset_partition(dataset, i: int, offset: int, coding: LabelCoding,
                             find_duplicates: bool) -> Loaded:
    """``load_rows`` of partition i of a Dataset (runs on a worker)."""
    return load_rows(load_dataset_partition(dataset, i, offset, coding), find_duplicates)


def positive_weights(part: Partition) -> np.ndarray:
    """A partition's sample weights with those <= 0 set to 0 (such rows take no part)."""
    return np.maximum(part.weights(), 0.0)


def groups_of(loaded: Loaded) -> Groups | None:
    """How a loaded partition's rows collapse: the exchange's grouping when there was one,
    else the grouping within the partition (None: every row is distinct)."""
    if loaded.groups is not None or loaded.rep is None:
        return loaded.groups
    rep = loaded.rep
    kept = np.flatnonzero(rep == np.arange(len(rep)))
    group = np.searchsorted(kept, rep)
    count = np.bincount(group, minlength=len(kept)).astype(np.int64)
    w = (count.astype(np.float64) if loaded.part.weight is None else
         np.bincount(group, weights=positive_weights(loaded.part), minlength=len(kept)))
    return Groups(kept, w, count)


def survey(loaded: Loaded) -> tuple[int, int, int, int]:
    """(rows, distinct rows, non-zeros of all rows, non-zeros of the distinct rows) of a
    loaded partition (runs on a worker)."""
    X, n = loaded.part.X, loaded.part.n_rows
    per_row = (np.diff(X.indptr) if sp.issparse(X) else np.count_nonzero(X, axis=1))
    nnz = int(per_row.sum())
    groups = groups_of(loaded)
    if groups is None:
        return n, n, nnz, nnz
    return n, len(groups.kept), nnz, int(per_row[groups.kept].sum())


def finish(loaded: Loaded, offset: int, collapse: bool, layout: str) -> Partition:
    """The final Partition: duplicates collapsed (when ``collapse`` and there are any),
    rows in ``layout`` ('csr', 'dense' or 'keep'), numbered from ``offset`` (runs on a
    worker; pure)."""
    part = loaded.part
    origin = part.offset if part.origin is None else part.origin
    groups = groups_of(loaded) if collapse else None
    if groups is not None:
        kept = groups.kept
        part = Partition(part.X[kept], part.y[kept], offset, groups.weight, origin, kept,
                         groups.count)
    elif offset != part.offset or collapse:
        part = replace(part, offset=offset, origin=origin,
                       weight=part.weights() if collapse else part.weight)
    if layout != "keep":
        X = as_layout(part.X, layout)
        part = replace(part, X=X) if X is not part.X else part
    return part
