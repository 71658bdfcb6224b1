"""The decision values a scan evaluates in full (``exact.scan.partition``): each row only for the
active problems it belongs to, against their support vectors only.

Rows are grouped by the problems they belong to; a group meets the support vectors with a
coefficient in one of its problems. For one-vs-one, the rows of class c meet the union of
the SVs of the pairs of c (never more kernel evaluations than every row of a pair against
that pair's SVs, nor than every row against the union of all pairs' SVs); for problems
that own every row (binary, one-vs-rest, regression, one-class) that is every row against
every SV, as one product. Groups are cut into pieces of whole kernel blocks that can run
on a thread pool with the same values: each group into a multiple of the pool's threads
of pieces of equal blocks, the largest pieces first, so no thread waits long on another's
last piece (fmnist06's 12,000 rows cut into 3 pieces of ~4,000 kept one of 2 threads
idle for a third of the scan).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from randsvm_dist.engine.partitions import Partition
from randsvm_dist.numerics.kernels import (
    Kernel,
    block_rows,
    decision_values,
    single_threaded_blas,
)


def evaluated(part: Partition, support_vectors, coef: np.ndarray, intercept: np.ndarray,
              kernel: Kernel, members: np.ndarray, full: np.ndarray, threads: int = 1
              ) -> tuple[np.ndarray, int]:
    """The decision values of the rows ``full`` of a partition under the active problems'
    models (sharing one support-vector matrix).

    Each row is evaluated for the active problems it belongs to only, against their
    support vectors only (``_pieces``): a one-vs-one pair's certificate needs the rows of
    its two classes against its own model, not every row against the union of all pairs'
    SVs. Columns of problems a row is not in stay 0 (nothing reads them: the row's radius
    is inf there). The pieces run on ``threads`` threads; their cuts fall on
    ``decision_values``' blocks, so the values are the same whatever ``threads``.

    Args:
        part: the partition.
        support_vectors: (n_sv, n_features) float32 ndarray or CSR.
        coef: (n_sv, n_active) the active problems' coefficients (0: not the problem's SV).
        intercept: (n_active,).
        kernel: resolved Kernel.
        members: (n_rows, n_active) bool: the row belongs to the problem.
        full: the rows to evaluate, ascending.
        threads: threads of the pieces.

    Returns:
        ((len(full), n_active) float64 decision values, kernel evaluations).
    """
    f_full = np.zeros((len(full), coef.shape[1]))
    if not (len(full) and coef.shape[1]):
        return f_full, 0

    def run(piece: _Piece) -> None:
        sv = support_vectors if piece.svs is None else support_vectors[piece.svs]
        c = coef[:, piece.cols] if piece.svs is None else coef[piece.svs][:, piece.cols]
        at = full[piece.at]   # ascending: a run of rows is a slice, not a copy
        X = (part.X[at[0]:at[-1] + 1] if at[-1] - at[0] + 1 == len(at)
             else part.X[at])
        f_full[np.ix_(piece.at, piece.cols)] = decision_values(
            X, sv, c, intercept[piece.cols], kernel, piece.block
        ).reshape(len(piece.at), len(piece.cols))

    pieces = _pieces(members[full], coef, threads)
    if threads > 1 and len(pieces) > 1:
        # one BLAS thread held for the whole pool: held per piece, the count went back up
        # whenever no piece was inside, and OpenBLAS's idle worker then spun through the
        # scan on a core the pieces needed (nyc_delayed, 20,000 rows x 10,155 SVs on 2
        # threads: 0.25-0.34 s instead of 0.16 s, in 4 of 5 processes)
        with single_threaded_blas(), ThreadPoolExecutor(min(threads, len(pieces))) as pool:
            list(pool.map(run, pieces))
    else:
        for piece in pieces:
            run(piece)
    return f_full, sum(len(p.at) * p.n_sv for p in pieces)


@dataclass
class _Piece:
    """Rows of the scan evaluated together.

    Attributes:
        at: positions (into the rows evaluated in full) of the piece's rows.
        cols: the active problems (columns) the rows belong to.
        svs: rows of the model's support-vector matrix with a coefficient in ``cols``
            (None: all of them).
        n_sv: how many support vectors the rows meet.
        block: ``decision_values``' rows per block for them.
    """

    at: np.ndarray
    cols: np.ndarray
    svs: np.ndarray | None
    n_sv: int
    block: int


# Rows per piece of the scan's thread pool (rounded to whole kernel blocks): large enough
# that a piece's set-up (its support vectors' norms, buffers) is noise.
PIECE_ROWS = 4096


def _pieces(members: np.ndarray, coef: np.ndarray, threads: int = 1) -> list[_Piece]:
    """The rows' groups (``_groups``) cut into pieces of whole kernel blocks: each group
    into a multiple of ``threads`` pieces of about PIECE_ROWS rows (fewer when it has
    fewer blocks) whose blocks differ in number by one at most; the pieces in the order
    of their kernel evaluations, largest first (a pool that takes them in turn then
    ends its threads' work about together)."""
    out = []
    for cols, svs, n_sv, at in _groups(members, coef):
        block = block_rows(n_sv)
        n_blocks = -(-len(at) // block)
        rounds = max(1, round(len(at) / (PIECE_ROWS * threads)))
        k = min(n_blocks, rounds * threads)
        cuts = np.arange(k + 1) * n_blocks // k * block
        out += [_Piece(at[lo:hi], cols, svs, n_sv, block)
                for lo, hi in zip(cuts[:-1], cuts[1:])]
    return sorted(out, key=lambda p: -len(p.at) * p.n_sv)


def full_costs(members: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Per row (``members``: (rows, problems) bool), the kernel evaluations of its full
    evaluation: the support vectors with a coefficient (``coef``: (SVs, problems)) in one
    of its problems (``_groups``)."""
    cost = np.zeros(len(members), np.int64)
    for _, _, n_sv, at in _groups(members, coef):
        cost[at] = n_sv
    return cost


def _groups(members: np.ndarray, coef: np.ndarray) -> list[tuple]:
    """The rows grouped by the active problems they belong to (``members``: (rows,
    problems) bool), each group against the support vectors with a coefficient in one of
    those problems (``coef``: (SVs, problems)).

    Returns:
        per group: (its problems' columns, its SVs' rows in ``coef`` or None: all of them,
        how many SVs, the positions of its rows in ``members``).
    """
    # one byte string per row (its problems' bits) found by a 1-d unique: a row-wise
    # unique of the bool matrix sorts rows as they are (0.35 s of Fashion-MNIST's
    # 60,000 rows x 45 pairs, twice the 1-d unique over its packed bytes)
    packed = np.ascontiguousarray(np.packbits(members, axis=1))
    keys = packed.view(f"V{packed.shape[1]}").reshape(-1)
    _, first, group = np.unique(keys, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    out = []
    for g, row in enumerate(first):
        cols = np.flatnonzero(members[row])
        if not len(cols):
            continue
        used = (coef[:, cols] != 0).any(axis=1)
        svs = None if used.all() else np.flatnonzero(used)
        out.append((cols, svs, coef.shape[0] if svs is None else len(svs),
                    np.flatnonzero(group == g)))
    return out
