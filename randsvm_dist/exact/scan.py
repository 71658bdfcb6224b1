"""The per-partition violator scan, run on the workers once per iteration.

For every problem (of any kind, see ``exact.kinds``) it returns the violator count (rows of
the problem outside its working set whose slack exceeds tol; C-SVC: y f(x) < 1 - tol), the
weighted loss sums that give the primal objective on the whole data set, and the m
violators with the smallest random keys (global row index and key only: the driver fetches
the rows it finally draws).
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
# Screened rows keep -s >= band + slack: beyond every threshold a scan's answers use
# (violator, loss, fill band), so they are the same with or without bounds; the slack
# covers float32 rounding of the decision values.
SCREEN_SLACK = 1e-2


@dataclass
class ScanModel:
    """The models of all problems, sharing one support-vector matrix.

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
    """What the scan should report for one problem.

    Attributes:
        kind: the problem kind (``exact.kinds``): its rows, targets and slack.
        exclude: sorted global indices of the working set (never violators).
        n_draw: how many smallest-key candidates to return.
        stream: random stream of the keys.
        tol: margin tolerance: a violator has slack s > tol (C-SVC: y f(x) < 1 - tol).
        band: rows outside the working set with -band < s <= tol are drawn too, after
            every violator (their keys are shifted by 1): when there are fewer violators
            than n_draw, the draw is filled with the rows most likely to turn into
            violators once the model moves.
        C: the box before class and sample weights (see ``kind.row_box``).
    """

    kind: object
    exclude: np.ndarray
    n_draw: int
    stream: int
    tol: float = 1e-3
    band: float = 0.0
    C: float = 1.0


@dataclass
class ProblemScan:
    """A partition's answer for one problem (additive over partitions, except the draw)."""

    n_rows: int = 0             # rows of the problem in this partition
    n_violators: int = 0
    n_errors: int = 0           # rows with slack above the kind's error_slack
    loss: float = 0.0           # sum of C_i max(0, s_i): the primal's sum over rows
    loss_ws: float = 0.0        # the part of loss from working-set rows
    max_slack: float = -np.inf
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
        lower: (n_rows, n_problems) float32 lower bounds of -s (minus the slack) under the
            scanned models (exact where the row was evaluated; -inf where unknown; +inf for
            rows that are not the problem's).
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

    Screening (exact): every kind's slack moves by at most |f_new(x) - f_old(x)| <=
    ||w_new - w_old|| ||phi(x)|| + |b_new - b_old| (see ``exact.kinds``), so a row whose
    lower bound of -s from the previous scan stays at or above band + SCREEN_SLACK (band:
    the largest fill band requested) is neither a violator nor in the fill band nor has
    loss; its kernel row is not computed. The answers are the same with or without
    ``prev_lower`` (``max_slack`` is reported down to that threshold), so a scan that lost
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
    coded = [requests[p].kind.targets(part.y) for p in active]
    members = np.ones((n, len(active)), dtype=bool)
    for col, (_, mask) in enumerate(coded):
        if mask is not None:
            members[:, col] = mask
    screen_at = max((requests[p].band for p in active), default=0.0) + SCREEN_SLACK
    f = np.zeros((n, len(active)))
    m = np.full((n, len(active)), np.inf)   # -slack; +inf for rows of other problems
    if model.support_vectors is None:
        rows = np.arange(n)
    else:
        if prev_lower is not None and shift_w is not None:
            norms = feature_norms(part.X, model.kernel)
            with np.errstate(invalid="ignore"):
                bound = (prev_lower[:, active].astype(np.float64)
                         - norms[:, None] * shift_w[active] - shift_b[active])
            bound[~np.isfinite(bound) & (bound < np.inf)] = -np.inf
            bound[np.isnan(bound)] = -np.inf
            rows = np.flatnonzero(((bound < screen_at) & members).any(axis=1))
            m = np.where(members, bound, np.inf)
        else:
            rows = np.flatnonzero(members.any(axis=1))
        if len(rows):
            X = part.X if len(rows) == n else part.X[rows]
            f[rows] = decision_values(X, _dense_svs(model.support_vectors),
                                      model.coef[:, active], model.intercept[active],
                                      model.kernel).reshape(len(rows), len(active))
    for col, p in enumerate(active):
        t = coded[col][0]
        m[rows, col] = np.where(members[rows, col],
                                -requests[p].kind.slack(f[rows, col], t[rows]), np.inf)
    lower[:, active] = m
    n_evaluated = len(rows)
    out: list[ProblemScan | None] = [None] * P
    gidx = np.arange(part.offset, part.offset + n, dtype=np.int64)
    weight = np.maximum(part.weights(), 0.0)  # rows weighing <= 0 take no part
    for col, p in enumerate(active):
        req = requests[p]
        t, inside = coded[col][0], members[:, col]
        s = -m[:, col]
        loss = np.where(inside, req.kind.row_box(req.C, t, weight) * np.maximum(0.0, s), 0.0)
        outside = inside.copy()
        if len(req.exclude):
            lo, hi = np.searchsorted(req.exclude, [part.offset, part.offset + n])
            outside[req.exclude[lo:hi] - part.offset] = False
        active_row = outside & (weight > 0)
        is_viol = s > req.tol
        cand = np.flatnonzero(active_row & (s > -req.band))
        keys = row_keys(req.stream, part.offset, n)[cand] + (~is_viol[cand])
        pick = smallest_keys(keys, req.n_draw)
        out[p] = ProblemScan(
            n_rows=int(inside.sum()),
            n_violators=int((active_row & is_viol).sum()),
            n_errors=int((inside & (s > req.kind.error_slack)).sum()),
            loss=float(loss.sum()),
            loss_ws=float(loss[inside & ~outside].sum()),
            max_slack=max(float(s[inside].max()), -screen_at) if inside.any() else -np.inf,
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
