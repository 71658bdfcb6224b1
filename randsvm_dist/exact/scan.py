"""The per-partition violator scan, run on the workers once per iteration.

For every binary problem it returns the violator count (rows outside the problem's working
set with y f(x) < 1 - tol), margin statistics, the hinge-loss sums that give the primal
objective on the whole data set, and the m violators with the smallest random keys (global
row index and key only: the driver fetches the rows it finally draws).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact.sampling import row_keys, smallest_keys
from randsvm_dist.kernels import Kernel, decision_values, row_sq_norms

DENSE_SV_BYTES = 256 << 20
# Screened rows keep y f >= 1 + band + slack: above every threshold a scan's answers use
# (violator, hinge, fill band), so they are the same with or without bounds; the slack
# covers float32 rounding of the decision values.
SCREEN_SLACK = 1e-2


@dataclass
class ScanModel:
    """The models of all binary problems, sharing one support-vector matrix.

    Attributes:
        kernel: resolved kernel.
        support_vectors: union of the problems' SVs (float32 ndarray or CSR), or None
            before the first solve (then every row counts as a violator).
        coef: (n_sv, n_problems) dual coefficients (zero where a row is not a problem's SV).
        intercept: (n_problems,).
    """

    kernel: Kernel
    support_vectors: object | None
    coef: np.ndarray
    intercept: np.ndarray


@dataclass
class ProblemRequest:
    """What the scan should report for one binary problem.

    Attributes:
        positive: class index labelled +1 (the others are -1).
        exclude: sorted global indices of the working set (never violators).
        n_draw: how many smallest-key candidates to return.
        stream: random stream of the keys.
        tol: margin tolerance: a violator has y f(x) < 1 - tol.
        band: rows outside the working set with 1 - tol <= y f(x) < 1 + band are drawn
            too, after every violator (their keys are shifted by 1): when there are fewer
            violators than n_draw, the draw is filled with the rows most likely to turn
            into violators once the model moves.
    """

    positive: int
    exclude: np.ndarray
    n_draw: int
    stream: int
    tol: float = 1e-3
    band: float = 0.0


@dataclass
class ProblemScan:
    """A partition's answer for one problem (additive over partitions, except the draw)."""

    n_violators: int = 0
    n_errors: int = 0           # rows with y f(x) < 0
    hinge_pos: float = 0.0      # sum of max(0, 1 - y f) over +1 rows
    hinge_neg: float = 0.0      # same over -1 rows
    hinge_ws_pos: float = 0.0   # the part of hinge_pos from working-set rows
    hinge_ws_neg: float = 0.0   # the part of hinge_neg from working-set rows
    min_margin: float = np.inf
    keys: np.ndarray = field(default_factory=lambda: np.empty(0))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))


def _dense_svs(sv):
    if sv is not None and sp.issparse(sv) and sv.shape[0] * sv.shape[1] * 4 <= DENSE_SV_BYTES:
        return np.ascontiguousarray(sv.toarray(), dtype=np.float32)
    return sv


@dataclass
class ScanOutput:
    """A partition's scan: per-problem answers and lower bounds of y f(x) for the next scan.

    Attributes:
        problems: one ProblemScan per request (None where the request is None).
        lower: (n_rows, n_problems) float32 lower bounds of y f(x) under the scanned models
            (exact where the row was evaluated; -inf where unknown).
        n_evaluated: rows whose decision values were computed (the others were screened).
        seconds: compute time of the scan on the worker.
    """

    problems: list
    lower: np.ndarray
    n_evaluated: int
    seconds: float = 0.0


def feature_norms(X, kernel: Kernel) -> np.ndarray:
    """||phi(x)|| = sqrt(k(x, x)) per row (inf where the kernel gives no such bound)."""
    if kernel.name == "rbf":
        return np.ones(X.shape[0], dtype=np.float32)
    sq = row_sq_norms(X).astype(np.float64)
    if kernel.name == "linear":
        return np.sqrt(sq)
    if kernel.name == "poly" and kernel.coef0 >= 0:
        return (kernel.gamma * sq + kernel.coef0) ** (kernel.degree / 2.0)
    return np.full(X.shape[0], np.inf)  # sigmoid is not positive definite


def scan_partition(part: Partition, model: ScanModel, requests: list[ProblemRequest],
                   prev_lower: np.ndarray | None = None,
                   shift_w: np.ndarray | None = None,
                   shift_b: np.ndarray | None = None) -> ScanOutput:
    """Scan one partition for the violators of every problem (runs on a worker).

    Screening (exact): y f_new(x) >= y f_old(x) - ||w_new - w_old|| ||phi(x)|| - |b_new - b_old|,
    so a row whose bound from the previous scan stays at or above 1 + band + SCREEN_SLACK
    (band: the largest fill band requested) is neither a violator nor in the fill band nor
    has hinge loss; its kernel row is not computed. The answers are the same with or without
    ``prev_lower`` (``min_margin`` is reported up to that threshold), so a scan that lost
    its bounds changes the time, not the run.

    Args:
        part: the partition.
        model: the current models (see ScanModel).
        requests: one ProblemRequest per problem (None for a finished problem).
        prev_lower: the previous scan's ``lower`` of this partition (None: evaluate all).
        shift_w, shift_b: per problem ||w_new - w_old|| and |b_new - b_old| (inf: unknown).

    Returns:
        ScanOutput.
    """
    t0 = time.perf_counter()
    n = part.n_rows
    P = len(requests)
    active = [p for p, r in enumerate(requests) if r is not None]
    lower = (np.full((n, P), -np.inf, dtype=np.float32) if prev_lower is None
             else prev_lower.copy())
    ys = np.stack([np.where(part.cls == requests[p].positive, 1.0, -1.0) for p in active],
                  axis=1) if active else np.zeros((n, 0))
    n_evaluated = n
    screen_at = 1.0 + max((requests[p].band for p in active), default=0.0) + SCREEN_SLACK
    if model.support_vectors is None:
        yf = np.zeros((n, len(active)))
    else:
        if prev_lower is not None and shift_w is not None:
            norms = feature_norms(part.X, model.kernel)
            with np.errstate(invalid="ignore"):
                yf = (prev_lower[:, active].astype(np.float64)
                      - norms[:, None] * shift_w[active] - shift_b[active])
            yf[~np.isfinite(yf)] = -np.inf
            rows = np.flatnonzero((yf < screen_at).any(axis=1))
        else:
            yf = np.empty((n, len(active)))
            rows = np.arange(n)
        n_evaluated = len(rows)
        if len(rows):
            X = part.X if len(rows) == n else part.X[rows]
            f = decision_values(X, _dense_svs(model.support_vectors), model.coef[:, active],
                                model.intercept[active], model.kernel)
            yf[rows] = ys[rows] * f.reshape(len(rows), len(active))
    lower[:, active] = yf
    out: list[ProblemScan | None] = [None] * P
    gidx = np.arange(part.offset, part.offset + n, dtype=np.int64)
    for col, p in enumerate(active):
        req = requests[p]
        y, m = ys[:, col], yf[:, col]
        hinge = np.maximum(0.0, 1.0 - m)
        outside = np.ones(n, dtype=bool)
        if len(req.exclude):
            lo, hi = np.searchsorted(req.exclude, [part.offset, part.offset + n])
            outside[req.exclude[lo:hi] - part.offset] = False
        is_viol = m < 1.0 - req.tol
        cand = np.flatnonzero(outside & (m < 1.0 + req.band))
        keys = row_keys(req.stream, part.offset, n)[cand] + (~is_viol[cand])
        pick = smallest_keys(keys, req.n_draw)
        out[p] = ProblemScan(
            n_violators=int((outside & is_viol).sum()),
            n_errors=int((m < 0).sum()),
            hinge_pos=float(hinge[y > 0].sum()),
            hinge_neg=float(hinge[y < 0].sum()),
            hinge_ws_pos=float(hinge[~outside & (y > 0)].sum()),
            hinge_ws_neg=float(hinge[~outside & (y < 0)].sum()),
            min_margin=min(float(m.min()), screen_at) if n else np.inf,
            keys=keys[pick],
            rows=gidx[cand[pick]],
        )
    return ScanOutput(out, lower, n_evaluated, time.perf_counter() - t0)


@dataclass
class ScanAnswer:
    """What a scan task sends back: the per-problem answers and where its bounds stayed."""

    problems: list
    n_evaluated: int
    seconds: float
    worker: str | None


def scan_partition_task(part: Partition, model: ScanModel, requests: list[ProblemRequest],
                        run: str, index: int, iteration: int,
                        shift_w: np.ndarray | None = None,
                        shift_b: np.ndarray | None = None) -> ScanAnswer:
    """``scan_partition`` as a task: screening bounds of scan ``iteration - 1`` are taken from,
    and this scan's are left in, the worker's ``screening_store`` (never in the task graph).

    Args:
        part, model, requests, shift_w, shift_b: see ``scan_partition``.
        run: the run's key in the store.
        index: the partition's index.
        iteration: this scan's number.

    Returns:
        ScanAnswer (``worker``: the address whose store holds this scan's bounds, or None).
    """
    from randsvm_dist.exact import screening_store

    prev = screening_store.get(run, index, iteration - 1) if shift_w is not None else None
    out = scan_partition(part, model, requests, prev, shift_w, shift_b)
    worker = None
    if model.support_vectors is not None and screening_store.put(run, index, iteration,
                                                                 out.lower):
        try:
            from distributed import get_worker

            worker = get_worker().address
        except (ImportError, ValueError):
            worker = None
    return ScanAnswer(out.problems, out.n_evaluated, out.seconds, worker)
