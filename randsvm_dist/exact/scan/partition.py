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

from randsvm_dist.core.current_worker import worker_address
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.engine.worker_memory import process_rss
from randsvm_dist.exact.kinds import ProblemKind
from randsvm_dist.exact.sampling import keys_of, smallest_keys
from randsvm_dist.exact.scan.row_screening import (
    cheapest_size,
    clear_rows,
    feature_norms,
    neg_slack,
)
from randsvm_dist.exact.scan.values import evaluated, full_costs
from randsvm_dist.numerics.kernels import Kernel, decision_values

# Screened rows keep -s >= band + SCREEN_SLACK + SCREEN_SLACK: beyond every threshold a
# scan's answers use (violator, loss, fill band, and ``max_slack``, which is reported down to
# band + SCREEN_SLACK), so they are the same with or without screening; the second slack
# covers float32 rounding of the decision values and of the stored ones.
SCREEN_SLACK = 1e-2


@dataclass
class ModelDelta:
    """How the models moved since the previous scan, for screening (see ``scan_partition``).

    With dc = coef_new - coef_old over the union of both scans' support vectors, ordered by
    how much each coefficient moved (largest first), and B_t its first t rows:
    f_new(x) = f_old(x) + sum_{j in B_t} dc_j k(x, v_j) + db + r_t(x), where
    |r_t(x)| <= ||dc without B_t||_K ||phi(x)|| = residual[i] ||phi(x)|| for t = sizes[i].

    Attributes:
        vectors: (sizes[-1], n_features) float32 rows v_j (dense or CSR), largest change first.
        coef: (sizes[-1], n_problems) float32 dc of those rows.
        sizes: increasing candidate sizes t of B_t, sizes[0] = 0.
        residual: (len(sizes), n_problems) float64 ||dc without B_t||_K, padded for float32
            kernel values (inf: unknown).
        shift_b: (n_problems,) b_new - b_old.
        kernel_evals: kernel evaluations spent on the driver computing the residuals.
    """

    vectors: object
    coef: np.ndarray
    sizes: np.ndarray
    residual: np.ndarray
    shift_b: np.ndarray
    kernel_evals: int = 0


@dataclass
class ScanModel:
    """The models of all problems, sharing one support-vector matrix.

    Attributes:
        kernel: resolved kernel.
        support_vectors: union of the problems' SVs (float32 ndarray or CSR), or None
            before the first solve (then every row counts as a violator).
        coef: (n_sv, n_problems) dual coefficients (zero where a row is not a problem's SV).
        intercept: (n_problems,).
        delta: the change since the previous scan's models (None: no screening, every
            row is evaluated in full).
    """

    kernel: Kernel
    support_vectors: object | None
    coef: np.ndarray
    intercept: np.ndarray
    delta: ModelDelta | None = None


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
            every violator (their keys are shifted by 1, by 2 where s <= 0): when there
            are fewer violators than n_draw, the draw is filled with the rows most likely
            to turn into violators once the model moves, first those that carry loss.
        C: the box before class and sample weights (see ``kind.row_box``).
    """

    kind: ProblemKind
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


@dataclass
class ScanOutput:
    """A partition's scan: per-problem answers and the screening state for the next scan.

    Attributes:
        problems: one ProblemScan per request (None where the request is None).
        bounds: (2, n_rows, n_problems) float32: each row's decision value under the scanned
            models (exact where the row was evaluated, else an estimate) and the radius
            around it within which the true value lies (0 where evaluated; inf where
            unknown, as for rows of no active problem).
        n_evaluated: rows whose decision values were computed in full.
        n_screened: rows of an active problem that were not (their bound kept them clear of
            every threshold).
        kernel_evals: kernel evaluations of the scan (``full_evals`` + screening rows x
            |B|).
        full_evals: kernel evaluations of the rows evaluated in full (each against the
            support vectors of the problems it belongs to).
        seconds: compute time of the scan on the worker.
        cpu_seconds: CPU time of the thread that ran it (differs from ``seconds`` when the
            cores are shared with other processes).
    """

    problems: list
    bounds: np.ndarray
    n_evaluated: int
    n_screened: int = 0
    kernel_evals: int = 0
    full_evals: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def scan_partition(part: Partition, model: ScanModel, requests: list[ProblemRequest],
                   prev_bounds: np.ndarray | None = None, threads: int = 1) -> ScanOutput:
    """Scan one partition for the violators of every problem (runs on a worker).

    Screening (exact): every kind's slack s moves by at most as much as f (see
    ``exact.kinds``). A row's decision value under the new models is its stored one (from
    ``prev_bounds``: value and radius) plus db, plus the changes of the coefficients that
    moved most (``model.delta``: the first t of them, computed for the row: t kernel
    evaluations instead of |SV|), within the stored radius plus ||rest of dc||_K ||phi(x)||.
    A row whose interval keeps -s >= band + 2 SCREEN_SLACK for every problem it belongs to
    (band: the largest fill band requested) is neither a violator nor in the fill band nor
    has loss; it is not evaluated in full. Rows are first tried with t = 0 (no kernel
    evaluation), the rest with the t that minimises the expected evaluations. The answers
    are the same with or without ``prev_bounds`` (``max_slack`` is reported down to
    -(band + SCREEN_SLACK)), so a scan that lost its bounds changes the time, not the run.

    Args:
        part: the partition.
        model: the current models (see ScanModel; ``model.delta`` the change since the
            scan that left ``prev_bounds``).
        requests: one ProblemRequest per problem (None for a finished problem).
        prev_bounds: the previous scan's ``bounds`` of this partition (None: evaluate all).
        threads: threads of the full evaluations (a worker's task: 1; the answers are the
            same whatever the count).

    Returns:
        ScanOutput.
    """
    t0, c0 = time.perf_counter(), time.thread_time()
    n, P = part.n_rows, len(requests)
    rows = _Membership.of(part, requests)
    screen_at = max((requests[p].band for p in rows.active), default=0.0) + SCREEN_SLACK
    if model.support_vectors is None:  # no model yet: every row violates, f = 0
        A = len(rows.active)
        full, f_full = np.arange(n), np.zeros((n, A))
        centre, radius, kernel_evals = np.zeros((n, A)), np.full((n, A), np.inf), 0
        full_evals = 0
    else:
        centre, radius, full, kernel_evals = _screened(part, model, requests, rows,
                                                       prev_bounds, screen_at + SCREEN_SLACK)
        f_full, full_evals = evaluated(part, model.support_vectors,
                                       model.coef[:, rows.active],
                                       model.intercept[rows.active], model.kernel,
                                       rows.members, full, threads)
        kernel_evals += full_evals
        centre[full] = f_full
        radius[full] = 0.0
    bounds = _bounds(n, P, rows, centre, radius)
    n_screened = (int(rows.need.sum()) - len(full) if model.support_vectors is not None
                  else 0)
    # -s of the evaluated rows; every other row of a problem is screened (-s >= threshold)
    neg_s = neg_slack(requests, rows.active, rows.coded, full, f_full)
    out: list[ProblemScan | None] = [None] * P
    weight = np.maximum(part.weights(), 0.0)  # rows weighing <= 0 take no part
    for col, p in enumerate(rows.active):
        out[p] = _problem_scan(part, requests[p], rows.coded[col][0], rows.members[:, col],
                               full, -neg_s[:, col], weight, screen_at)
    return ScanOutput(out, bounds, len(full), n_screened, kernel_evals, full_evals,
                      time.perf_counter() - t0, time.thread_time() - c0)


@dataclass
class _Membership:
    """Which rows of a partition belong to which active problem.

    Attributes:
        active: indices of the requests that are not None.
        coded: per active problem, ``kind.targets`` of the partition's labels.
        members: (n_rows, n_active) bool: the row belongs to the problem.
        need: (n_rows,) bool: the row belongs to some active problem.
    """

    active: list
    coded: list
    members: np.ndarray
    need: np.ndarray

    @classmethod
    def of(cls, part: Partition, requests: list[ProblemRequest | None]) -> _Membership:
        active = [p for p, r in enumerate(requests) if r is not None]
        coded = [requests[p].kind.targets(part.y) for p in active]
        members = np.ones((part.n_rows, len(active)), dtype=bool)
        for col, (_, mask) in enumerate(coded):
            if mask is not None:
                members[:, col] = mask
        need = members.any(axis=1) if active else np.zeros(part.n_rows, bool)
        return cls(active, coded, members, need)


def _screened(part: Partition, model: ScanModel, requests, rows: _Membership,
              prev_bounds: np.ndarray | None, threshold: float):
    """The rows left to evaluate in full after screening (see ``scan_partition``).

    Returns:
        (centre, radius: (n_rows, n_active) decision-value bounds of the screened rows;
        the rows left, ascending; kernel evaluations spent on partial decision values).
    """
    n, active, A = part.n_rows, rows.active, len(rows.active)
    centre, radius = np.zeros((n, A)), np.full((n, A), np.inf)
    delta = model.delta
    phi = (feature_norms(part.X, model.kernel).astype(np.float64)
           if prev_bounds is not None and delta is not None and A else None)
    if phi is None or not np.isfinite(phi).all():
        return centre, radius, np.flatnonzero(rows.need), 0
    coded, members = rows.coded, rows.members
    centre = prev_bounds[0][:, active].astype(np.float64) + delta.shift_b[active]
    prev_radius = prev_bounds[1][:, active].astype(np.float64)
    with np.errstate(invalid="ignore"):
        radius = prev_radius + phi[:, None] * delta.residual[0, active]
    radius[np.isnan(radius)] = np.inf
    left = np.flatnonzero(rows.need)
    ok = clear_rows(neg_slack(requests, active, coded, left, centre[left]),
                radius[left], members[left], threshold)
    left = left[~ok]
    i = 0
    if len(left) and len(delta.sizes) > 1:
        i = cheapest_size(neg_slack(requests, active, coded, left, centre[left]),
                       prev_radius[left], members[left], threshold, delta, active,
                       phi[left], full_costs(members[left], model.coef[:, active]))
    if not i:
        return centre, radius, left, 0
    t = int(delta.sizes[i])
    centre[left] += decision_values(
        part.X[left], delta.vectors[:t], delta.coef[:t][:, active],
        np.zeros(A), model.kernel).reshape(len(left), A)
    radius[left] = prev_radius[left] + phi[left, None] * delta.residual[i, active]
    ok = clear_rows(neg_slack(requests, active, coded, left, centre[left]),
                radius[left], members[left], threshold)
    return centre, radius, left[~ok], len(left) * t


def _problem_scan(part: Partition, req: ProblemRequest, t: np.ndarray, inside: np.ndarray,
                  full: np.ndarray, s: np.ndarray, weight: np.ndarray,
                  screen_at: float) -> ProblemScan:
    """One problem's answer from the slacks ``s`` of the rows ``full`` evaluated in full
    (``t``: the partition's targets; ``inside``: its rows that belong to the problem)."""
    n = part.n_rows
    in_full = inside[full]
    # over all n rows (screened ones 0), so the sums are the same with or without
    # screening to the last bit
    loss = np.zeros(n)
    loss[full] = np.where(in_full, req.kind.row_box(req.C, t[full], weight[full])
                          * np.maximum(0.0, s), 0.0)
    in_ws = np.zeros(n, bool)
    if len(req.exclude):
        lo, hi = np.searchsorted(req.exclude, [part.offset, part.offset + n])
        in_ws[req.exclude[lo:hi] - part.offset] = True
    active_row = in_full & ~in_ws[full] & (weight[full] > 0)
    is_viol = s > req.tol
    cand = np.flatnonzero(active_row & (s > -req.band))
    grows = part.offset + full[cand].astype(np.int64)
    # the draw's order: violators, then rows with loss (0 < s <= tol), then the band
    keys = keys_of(req.stream, grows) + (~is_viol[cand]) + (s[cand] <= 0)
    pick = smallest_keys(keys, req.n_draw)
    n_inside = int(inside.sum())
    return ProblemScan(
        n_rows=n_inside,
        n_violators=int((active_row & is_viol).sum()),
        n_errors=int((in_full & (s > req.kind.error_slack)).sum()),
        loss=float(loss.sum()),
        loss_ws=float(loss[inside & in_ws].sum()),
        max_slack=(max(float(s[in_full].max()) if in_full.any() else -np.inf,
                       -screen_at) if n_inside else -np.inf),
        keys=keys[pick],
        rows=grows[pick],
    )


@dataclass
class ScanInputs:
    """What every task of one scan shares (shipped to each worker once, as one future).

    Attributes:
        model: the current models (``ScanModel``).
        requests: one ProblemRequest per problem (None for a finished problem).
        run: the run's key in the workers' ``screening_store``.
        iteration: this scan's number (the bounds of scan ``iteration - 1`` are used).
    """

    model: ScanModel
    requests: list
    run: str = ""
    iteration: int = 0


@dataclass
class ScanAnswer:
    """What a scan task sends back: the per-problem answers, where its bounds stayed
    (``worker``; None: not kept) and where it ran (``ran_on``)."""

    problems: list
    n_evaluated: int
    seconds: float
    worker: str | None
    n_screened: int = 0
    kernel_evals: int = 0
    cpu_seconds: float = 0.0
    ran_on: str | None = None
    full_evals: int = 0
    rss: int = 0             # the worker process's memory when the task ended (bytes)


def row_range(part: Partition, lo: int, hi: int) -> Partition:
    """Rows lo..hi-1 of a partition as a partition of their own (same global rows)."""
    return Partition(part.X[lo:hi], part.y[lo:hi], part.offset + lo,
                     None if part.weight is None else part.weight[lo:hi])


def _bounds(n: int, P: int, rows: _Membership, centre: np.ndarray,
            radius: np.ndarray) -> np.ndarray:
    """The scan's screening bounds (2, n, P) float32: each row's decision value and its
    radius under every problem (value 0 and radius inf where a row takes no part)."""
    bounds = np.empty((2, n, P), dtype=np.float32)
    bounds[0] = 0.0
    bounds[1] = np.inf
    bounds[0][:, rows.active] = centre
    bounds[1][:, rows.active] = np.where(rows.members, radius, np.inf)
    return bounds


def scan_partition_task(part: Partition, inputs: ScanInputs, key: int,
                        rows: tuple[int, int] | None = None) -> ScanAnswer:
    """``scan_partition`` as a task: screening bounds of scan ``inputs.iteration - 1`` are
    taken from, and this scan's are left in, the worker's ``screening_store`` under ``key``
    (never in the task graph).

    Args:
        part: the partition (or the rows cut from it).
        inputs: the scan's models and requests (see ``ScanInputs``).
        key: the store's key of these rows: their first global row (the bounds' shape
            holds their count, so a task of other rows never takes them).
        rows: (lo, hi): scan only these local rows of ``part`` (None: all).

    Returns:
        ScanAnswer.
    """
    from randsvm_dist.exact.scan import screening_store

    if rows is not None:
        part = row_range(part, *rows)
    model, requests = inputs.model, inputs.requests
    prev = (screening_store.get(inputs.run, key, inputs.iteration - 1)
            if model.delta is not None else None)
    if prev is not None and prev.shape != (2, part.n_rows, len(requests)):
        prev = None
    out = scan_partition(part, model, requests, prev)
    address = worker_address()
    kept = (model.support_vectors is not None and address is not None
            and screening_store.put(inputs.run, key, inputs.iteration, out.bounds))
    return ScanAnswer(out.problems, out.n_evaluated, out.seconds, address if kept else None,
                      out.n_screened, out.kernel_evals, out.cpu_seconds, address,
                      out.full_evals, process_rss())


def warm_scan(kernel: Kernel, sparse: bool, n_features: int) -> None:
    """Scan 64 random rows against 8 random support vectors with ``kernel`` (CSR rows when
    ``sparse``): loads every compiled kernel a scan of such rows runs, which then stay in
    the process (a worker's memory is measured after it: ``exact.memory_plan``)."""
    import scipy.sparse as sp

    from randsvm_dist.exact.kinds import CSVC

    rng = np.random.default_rng(0)
    X = rng.random((64, n_features), dtype=np.float32)
    S = X[:8].copy()
    if sparse:
        X, S = sp.csr_matrix(X), sp.csr_matrix(S)
    part = Partition(X, np.where(np.arange(64) % 2 == 0, 1, 0).astype(np.int32), 0)
    model = ScanModel(kernel, S, rng.standard_normal((8, 1)).astype(np.float32), np.zeros(1))
    scan_partition(part, model, [ProblemRequest(CSVC(1, 0), np.empty(0, np.int64), 4, 1)])
