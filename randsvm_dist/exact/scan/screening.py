"""Screening maths: how the models moved between two scans.

The next scan screens a row with its stored decision value plus the changes of the
coefficients that moved most, within the kernel norm of the rest (``partition.ModelDelta``);
``model_delta`` computes those norms once per scan, for every candidate size of "most".
Their cost grows with the square of the coefficients that changed (rows of the union
whose coefficient did not move add nothing to any norm: an epsilon-SVR's or C-SVC's
support vectors mostly stay at their bound, and of 13,194 united support vectors of a
Friedman #1 scan 1,736 moved), not with the rows: with a client, blocks of them run on the
workers (``dispatch.row_blocks_on_workers``), so the driver's share of a scan does
not stay fixed while the scan's own work is divided.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.engine.partitions import empty_rows, vstack_rows
from randsvm_dist.exact.scan.dispatch import row_blocks_on_workers, united_support
from randsvm_dist.exact.scan.partition import ModelDelta
from randsvm_dist.exact.state import SupportModel
from randsvm_dist.numerics.kernels import decision_values, kernel_matrix, single_threaded_blas

# The changed coefficients computed per row are at most DELTA_SV_SHARE of the support
# vectors (beyond that a full evaluation costs little more); all of them when that is
# enough (the partial values are then exact: the residual is 0), else at most
# DELTA_MAX_ROWS.
DELTA_MAX_ROWS = 2048
DELTA_SV_SHARE = 0.25
DELTA_FIRST_SIZE = 8
# Absolute error of a float32 kernel value (float32 distances, the fused exp): pads
# r'Kr by KERNEL_VALUE_ERROR (sum |r|)^2 so the residual norms stay upper bounds.
KERNEL_VALUE_ERROR = 1e-6
DELTA_BLOCK_ROWS = 4096
# Residual norms of fewer kernel evaluations than this are computed on the driver (a
# round trip to the workers costs more).
DELTA_LOCAL_EVALS = 4_000_000


def model_delta(prev: list[SupportModel], cur: list[SupportModel], kernel, sparse: bool,
                n_features: int, max_pairs: float, client=None) -> ModelDelta:
    """How the models moved between two scans, for the next scan's screening.

    dc = coef_cur - coef_prev over the rows U of both scans' support vectors of every
    problem whose coefficient changed in some problem; its rows ordered by the largest |dc|
    over the problems. For each candidate size t (0, 8, 16, ... up to ``largest_size``) the
    residual norm ||r_t||_K of dc without its first t rows, from K r_t = K dc - K[:, B_t]
    dc_B_t: |U|^2 + |U| t_max kernel evaluations.

    Args:
        prev, cur: per problem, the models of the previous scan and of this one.
        kernel: resolved Kernel.
        sparse: the rows are CSR.
        n_features: feature count.
        max_pairs: the most kernel evaluations to spend; more give residuals of
            inf (no screening).
        client: the cluster's client: the residuals' kernel evaluations run in row
            blocks on its workers when they are DELTA_LOCAL_EVALS or more (None: here).

    Returns:
        ModelDelta (``partition.ModelDelta``).
    """
    P = len(cur)
    shift_b = np.array([c.intercept - p.intercept for p, c in zip(prev, cur)], np.float64)
    _, XU, dc, n_cur = _coef_change(prev, cur, sparse, n_features)
    moved = np.flatnonzero((dc != 0).any(axis=1))
    XU, dc = XU[moved], dc[moved]
    sizes = candidate_sizes(largest_size(len(moved), n_cur))
    order = np.argsort(-np.abs(dc).max(axis=1), kind="stable")[:sizes[-1]]
    V, dV = XU[order], dc[order]
    evals = len(moved) ** 2 + len(moved) * len(order)
    if evals > max_pairs:
        return ModelDelta(V, dV.astype(np.float32), sizes,
                          np.full((len(sizes), P), np.inf), shift_b)
    if not len(moved):
        return ModelDelta(V, dV.astype(np.float32), sizes, np.zeros((len(sizes), P)), shift_b)
    terms = ResidualTerms(XU, dc, order, sizes, kernel)
    if client is None or evals < DELTA_LOCAL_EVALS:
        q = residual_block(terms, 0, len(moved))
    else:
        q = sum(row_blocks_on_workers(client, residual_block, terms, len(moved),
                                      "the screening residuals"))
    return ModelDelta(V, dV.astype(np.float32), sizes, _residual_norms(terms, q), shift_b,
                      kernel_evals=evals)


def _coef_change(prev: list[SupportModel], cur: list[SupportModel], sparse: bool,
                 n_features: int):
    """(the union U of both scans' SV rows, their features, dc (|U|, n_problems) =
    coef_cur - coef_prev, the current models' united SV count)."""
    P = len(cur)
    rows, sv, dc_new = united_support(list(cur), sparse, n_features)
    union, first = np.unique(np.concatenate([rows] + [p.rows for p in prev]),
                             return_index=True)
    XU = vstack_rows([sv] + [p.X for p in prev], sparse)
    XU = XU[first] if XU is not None else empty_rows(n_features, sparse)
    dc = np.zeros((len(union), P))
    dc[np.searchsorted(union, rows)] = dc_new.T
    for j, p in enumerate(prev):
        dc[np.searchsorted(union, p.rows), j] -= p.coef
    return union, XU, dc, len(rows)


def largest_size(n_moved: int, n_support: int) -> int:
    """The largest candidate size t_max of B_t: every moved coefficient (n_moved) when they
    are at most DELTA_SV_SHARE of the current support vectors (n_support), else
    DELTA_MAX_ROWS within that share."""
    share = int(DELTA_SV_SHARE * n_support)
    return n_moved if n_moved <= share else min(DELTA_MAX_ROWS, share)


def candidate_sizes(t_max: int) -> np.ndarray:
    """The sizes t of B_t tried: 0, DELTA_FIRST_SIZE, doubling, and t_max."""
    sizes = [0]
    t = DELTA_FIRST_SIZE
    while t < t_max:
        sizes.append(t)
        t *= 2
    if t_max > 0 and t_max not in sizes:
        sizes.append(t_max)
    return np.asarray(sizes, np.int64)


@dataclass
class ResidualTerms:
    """What the residual norms of ``model_delta`` are computed from (shipped to the
    workers once when they run there).

    Attributes:
        XU: the rows U of both scans' support vectors whose coefficients moved.
        dc: (|U|, n_problems) coefficient change.
        order: rows of U by how much they moved, largest first (the first sizes[-1]).
        sizes: the candidate sizes t.
        kernel: resolved Kernel.
    """

    XU: object
    dc: np.ndarray
    order: np.ndarray
    sizes: np.ndarray
    kernel: object


def residual_block(terms: ResidualTerms, a: int, b: int) -> np.ndarray:
    """Rows a..b-1 of U's part of r_t' K r_t for every candidate t: (len(sizes),
    n_problems) float64, additive over row blocks.

    r_t' K r_t = r_t' K dc - r_t' K[:, B_t] dc_B_t, with r_t = dc without its rows B_t =
    order[:t]; K dc and K[:, B_t] are computed for these rows only.
    """
    dc, order, sizes = terms.dc, terms.order, terms.sizes
    P = dc.shape[1]
    V, dV = terms.XU[order], dc[order]
    q = np.zeros((len(sizes), P))
    for lo in range(a, b, DELTA_BLOCK_ROWS):
        hi = min(b, lo + DELTA_BLOCK_ROWS)
        rows = terms.XU[lo:hi]
        Kdc = decision_values(rows, terms.XU, dc, np.zeros(P), terms.kernel).reshape(
            hi - lo, P)
        with single_threaded_blas():
            KB = kernel_matrix(rows, V, terms.kernel).astype(np.float64)
        for i, t in enumerate(sizes):
            r = dc[lo:hi].copy()
            inside = order[:t][(order[:t] >= lo) & (order[:t] < hi)]
            r[inside - lo] = 0.0
            q[i] += (r * Kdc).sum(axis=0)
            if t:
                q[i] -= (r * (KB[:, :t] @ dV[:t])).sum(axis=0)
    return q


def _residual_norms(terms: ResidualTerms, q: np.ndarray) -> np.ndarray:
    """(len(sizes), n_problems) ||dc without its rows order[:t]||_K for every t in sizes,
    from q = r_t' K r_t (``residual_block`` summed over U), padded for float32 kernel
    values."""
    abs_r = np.empty_like(q)
    for i, t in enumerate(terms.sizes):
        r = terms.dc.copy()
        r[terms.order[:t]] = 0.0
        abs_r[i] = np.abs(r).sum(axis=0)
    return (np.sqrt(np.maximum(q, 0.0) + KERNEL_VALUE_ERROR * abs_r ** 2) * (1 + 1e-3)
            + 1e-4)
