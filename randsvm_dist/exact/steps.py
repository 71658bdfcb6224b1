"""The named steps of one RandSVM iteration: draw, solve, scan, certify, decide to stop.

Each step takes problem states (``exact.state``) and returns new ones; the Dask work runs
on the workers (solves and scans as tasks, rows fetched from the partitions), and the
driver keeps only working sets, support vectors and per-partition statistics.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import put
from randsvm_dist.engine.partitions import (
    PartitionSet,
    empty_rows,
    fetch_rows,
    placed,
    vstack_rows,
)
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan import (
    ModelDelta,
    ProblemRequest,
    ScanAnswer,
    ScanModel,
    scan_partition_task,
)
from randsvm_dist.exact.solving import (
    Solved,
    plan_cascade,
    solve_partitions,
    solve_rows,
    solve_working_set,
    threads_per_solve,
    total_threads,
)
from randsvm_dist.exact.state import ProblemState, RunConfig, SupportModel, WorkingSet
from randsvm_dist.numerics.kernels import decision_values, kernel_matrix, single_threaded_blas

# LIBSVM's tol is never tightened below this (its -e; 1e-3 is its default).
MIN_TOL = 1e-7
# Tighten tol when the working set's own gap is more than this share of gap_tol.
WS_GAP_SHARE = 0.25
# At most this factor in one tightening of tol.
MAX_TIGHTEN = 1000.0
# Rows within this distance of the margin fill a draw that the violators cannot fill.
FILL_BAND = 0.5
# A solve starts from the previous alphas (solvers.warm_smo) when at most this share of the
# working set is fresh rows: then most of the optimum is already there, and LIBSVM, which
# cannot take a starting point, would spend its time finding it again. The gradient needs
# the working set in memory once more (dense float64), so it is used up to WARM_MAX_BYTES
# of features. With LIBSVM's shrinking and an LRU cache in the warm solver it wins more the
# larger the working set (under load, 20% fresh rows: 2-2.6x at 10-20k rows, 3-8x at 40k,
# 13.7x at 100k ringnorm rows; benchmarks/bench_warm_solver.py), so there is no row cap.
WARM_MAX_FRESH_SHARE = 0.25
WARM_MAX_BYTES = 2 << 30
# The support set has settled when a solve finds at most SV_GROWTH x the previous
# solve's support vectors; draws are then lean (see draw_size).
SV_GROWTH = 1.1
LEAN_FILL = 0.1
# While the support set grows, a draw takes up to DRAW_PER_SV x |SV| violators: at 1e7
# checkerboard rows ~80% of every drawn violator became a support vector, so drawing only
# |SV| of them took one scan of all rows (the dominant cost there) per doubling.
DRAW_PER_SV = 3


# -- draw --------------------------------------------------------------------------------------
def draw_size(p: ProblemState, r: int, route: str, n_violators: int) -> int:
    """Rows to draw after a solve.

    While the support set is still growing (the last solve found more than SV_GROWTH times
    the support vectors of the one before), fill the working set to r, or add
    min(V, DRAW_PER_SV x |SV|) rows: violators come first in every draw and near-margin rows
    fill what they leave, so data whose optimum has many support vectors gets there in a
    few solves (a few scans, each costing n x |SV| kernel evaluations). Once it has
    settled, draw the violators (at most |SV|) and near-margin rows up to LEAN_FILL x |SV|:
    the working set is then mostly the previous support vectors, which the next solve
    starts from (``solvers.warm_smo``), instead of re-solving r rows of which a few matter.
    """
    if route == "direct":
        return 0
    n_sv = p.model.n_support
    if n_sv > SV_GROWTH * p.prev_n_support:
        return max(r - n_sv, min(n_violators, DRAW_PER_SV * n_sv))
    return max(min(n_violators, n_sv), min(r - n_sv, int(LEAN_FILL * n_sv)))


def first_draw(client, parts: PartitionSet, r: int, cfg: RunConfig) -> np.ndarray:
    """Iteration 0: a uniform sample of r rows (every row a candidate, smallest keys)."""
    everyone = CSVC(-1)  # with no model, every row violates: an exactly uniform draw
    request = ProblemRequest(everyone, np.empty(0, np.int64), r,
                             stream_id(cfg.random_state, 0), cfg.margin_tol)
    scan = run_scan(client, parts, None, [request])
    return merged_scan(scan.per_part, 0, r)["draw"]


def with_draws(client, parts: PartitionSet, problems: list[ProblemState], draws,
               C: float) -> list[ProblemState]:
    """Each problem's next working set: its support vectors plus its drawn rows (those
    that are its rows), with the alphas a warm start begins from."""
    wanted = [d for d in draws if d is not None]
    needed = np.unique(np.concatenate(wanted)) if wanted else np.empty(0, np.int64)
    rows, X, y, w = fetch_rows(client, parts, needed)
    out = []
    for p, draw in zip(problems, draws):
        if draw is None:
            out.append(p)
            continue
        draw = np.setdiff1d(draw, p.model.rows)
        pos = np.searchsorted(rows, draw)
        t, mask = p.kind.targets(y[pos])
        if mask is not None:
            pos, draw, t = pos[mask], draw[mask], t[mask]
        m = p.model
        ws_rows = np.concatenate([m.rows, draw])
        order = np.argsort(ws_rows, kind="stable")
        ws = WorkingSet(
            rows=ws_rows[order],
            X=vstack_rows([m.X, X[pos] if len(draw) else None], parts.is_sparse)[order],
            t=np.concatenate([m.t, t])[order],
            weight=np.concatenate([m.weight, w[pos]])[order],
            alpha0=np.concatenate([np.abs(m.coef), np.zeros(len(draw))])[order],
            n_fresh=len(draw))
        out.append(replace(p, ws=ws))
    return out


# -- solve -------------------------------------------------------------------------------------
def warm_start(p: ProblemState) -> np.ndarray | None:
    """The alphas a solve of p's working set starts from, or None for a cold LIBSVM solve
    (warm starts are C-SVC's: ``solvers.warm_smo``)."""
    ws = p.ws
    n = len(ws.rows)
    nbytes = ws.X.data.nbytes if sp.issparse(ws.X) else getattr(ws.X, "nbytes", 0)
    if (p.kind.svm_type != 0 or not p.model.n_support or len(ws.alpha0) != n
            or ws.n_fresh > WARM_MAX_FRESH_SHARE * n
            or nbytes > WARM_MAX_BYTES):
        return None
    return ws.alpha0


def _box(p: ProblemState, t: np.ndarray, weight: np.ndarray, weighted: bool):
    return p.kind.row_box(p.solver.C, t, weight) if weighted else None


def solve_working_set_task(kind, X, t, box, rows, params, n_threads, n_parts, stream,
                           alpha0=None) -> Solved:
    """A working set's solve run from a task: warm-started (``solvers.warm_smo``) with
    ``alpha0``, else LIBSVM, whole or as a cascade whose parts are tasks too."""
    from distributed import worker_client

    if alpha0 is not None:
        from randsvm_dist.solvers.warm_smo import solve_warm
        from randsvm_dist.solvers.weighted import solve_weighted_warm

        sol = (solve_warm(X, t, params, alpha0, n_threads) if box is None
               else solve_weighted_warm(X, t, params, box, alpha0, n_threads))
        return Solved(sol.support, sol, warm=True)
    if n_parts <= 1 or kind.svm_type == 2:
        sol = solve_rows(X, t, box, params, n_threads)
        return Solved(sol.support, sol)
    with worker_client() as wc:
        return solve_working_set(wc, kind, X, t, box, rows, params, n_threads, n_parts, stream)


def solve_sampled(client, problems: list[ProblemState], it: int, cfg: RunConfig,
                  weighted: bool) -> tuple[list[ProblemState], float]:
    """Solve every active problem's working set on the workers, concurrently."""
    active = [p for p in problems if p.active]
    t0 = time.perf_counter()
    threads = threads_per_solve(client, len(active))
    n_parts = max(1, total_threads(client) // max(1, len(active)))
    futures = []
    for j, p in enumerate(active):
        ws = p.ws
        params = p.kind.solver_params(p.solver, _size(ws.weight, weighted), p.size)
        futures.append(client.submit(
            solve_working_set_task, p.kind, ws.X, ws.t, _box(p, ws.t, ws.weight, weighted),
            ws.rows, params, threads, plan_cascade(len(ws.rows), ws.n_fresh, n_parts),
            stream_id(cfg.random_state, it, j, 0xCA5C), warm_start(p), pure=False, retries=2))
    def solved_state(p: ProblemState, s: Solved) -> ProblemState:
        ws, k = p.ws, s.support
        model = SupportModel(ws.rows[k], ws.X[k], ws.t[k], ws.weight[k],
                             s.solution.dual_coef, s.solution.intercept,
                             s.solution.dual_objective)
        return replace(p, model=model, prev_n_support=p.model.n_support, warm=s.warm,
                       cascade=s.parts)

    results = gather(client, futures, "the working-set solves", [p.kind.label for p in active])
    return _with_results(problems, results, solved_state), time.perf_counter() - t0


def _with_results(problems: list[ProblemState], results: list, update) -> list[ProblemState]:
    """The problems with each active one replaced by ``update(problem, its result)``."""
    results = iter(results)
    return [update(p, next(results)) if p.active else p for p in problems]


def _size(weight: np.ndarray, weighted: bool) -> float:
    return float(weight.sum()) if weighted else float(len(weight))


def solve_direct(client, parts: PartitionSet, problems: list[ProblemState]
                 ) -> tuple[list[ProblemState], float]:
    """One solve of all of each active problem's rows, concatenated on the worker."""
    active = [p for p in problems if p.active]
    t0 = time.perf_counter()
    threads = threads_per_solve(client, len(active))
    inputs = parts.all(client)
    futures = [client.submit(solve_partitions, p.kind,
                             p.kind.solver_params(p.solver, p.size, p.size), p.solver.C,
                             parts.weighted, threads, *inputs, pure=False, retries=2)
               for p in active]
    every_row = WorkingSet(np.arange(parts.n_rows, dtype=np.int64))

    def solved_state(p: ProblemState, result) -> ProblemState:
        rows, X, t, w, sol = result
        model = SupportModel(rows, X, t, w, sol.dual_coef, sol.intercept, sol.dual_objective)
        return replace(p, model=model, prev_n_support=p.model.n_support, warm=False,
                       cascade=(), ws=every_row)

    results = gather(client, futures, "the direct solves", [p.kind.label for p in active])
    return _with_results(problems, results, solved_state), time.perf_counter() - t0


# -- scan --------------------------------------------------------------------------------------
def scan_model(problems: list[ProblemState], kernel, sparse: bool, n_features: int
               ) -> ScanModel:
    """The problems' current models as one ScanModel (their SVs united)."""
    rows, sv, coef = united_support([p.model for p in problems], sparse, n_features)
    return ScanModel(kernel, sv, coef.T.astype(np.float32),
                     np.array([p.model.intercept for p in problems]))


def united_support(models: list[SupportModel], sparse: bool, n_features: int):
    """(sorted union of the models' SV rows, their features, coef (n_models, n_union))."""
    rows = np.concatenate([m.rows for m in models]) if models else np.empty(0, np.int64)
    union, first = np.unique(rows, return_index=True)
    stacked = vstack_rows([m.X for m in models], sparse)
    sv = stacked[first] if stacked is not None else empty_rows(n_features, sparse)
    coef = np.zeros((len(models), len(union)))
    for j, m in enumerate(models):
        coef[j, np.searchsorted(union, m.rows)] = m.coef
    return union, sv, coef


@dataclass
class ScanResult:
    """One pass over all partitions."""

    per_part: list           # per partition: list of ProblemScan (None for finished ones)
    workers: list            # per partition: the worker holding its screening bounds, or None
    n_evaluated: int         # rows whose decision values were computed in full
    compute_seconds: float   # summed over the scan tasks
    n_screened: int = 0      # rows of an active problem screened out (not evaluated in full)
    kernel_evals: int = 0    # kernel evaluations: the tasks' and the model delta's
    cpu_seconds: float = 0.0  # summed CPU time of the scan tasks' threads


_NO_MODEL = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))


def run_scan(client, parts: PartitionSet, model: ScanModel | None,
             requests: list[ProblemRequest | None], run: str = "", iteration: int = 0,
             shift_w=None, shift_b=None, placement: list | None = None) -> ScanResult:
    """Scan every partition on the workers (see ``scan.scan_partition_task``).

    ``run``/``iteration`` key the screening bounds in the workers' ``screening_store``;
    ``placement`` (the previous scan's ``workers``) sends each partition's scan to the worker
    holding its bounds, when that worker is still there (any other may run it, evaluating
    every row). The model is shipped once (a future every task shares).

    Returns:
        ScanResult.
    """
    model_future = put(client, model) if model else _NO_MODEL
    tasks = scan_tasks(parts, total_threads(client))
    if placement is not None and len(placement) != len(tasks):
        placement = None
    if placement is None and any(rows is not None for _, rows in tasks):
        # ranges of one partition would all run where it lives: deal them out
        workers = sorted(client.scheduler_info().get("workers", {}))
        placement = [workers[k % len(workers)] if rows is not None and workers else None
                     for k, (_, rows) in enumerate(tasks)]
    futures = []
    for k, (i, rows) in enumerate(tasks):
        where = placement[k] if placement is not None else None
        futures.append(client.submit(
            scan_partition_task, parts.partition(client, i, where), model_future, requests,
            run, k, iteration, shift_w, shift_b, rows, pure=False, retries=2,
            **placed(where)))
    names = [f"partition {i}" + (f" rows {rows[0]}-{rows[1]}" if rows else "")
             for i, rows in tasks]
    answers: list[ScanAnswer] = gather(client, futures, "the violator scan", names)
    delta_evals = model.delta.kernel_evals if model and model.delta is not None else 0
    return ScanResult([a.problems for a in answers], [a.worker for a in answers],
                      sum(a.n_evaluated for a in answers), sum(a.seconds for a in answers),
                      sum(a.n_screened for a in answers),
                      delta_evals + sum(a.kernel_evals for a in answers),
                      sum(a.cpu_seconds for a in answers))


# Scan tasks per worker thread: fewer partitions than this are scanned in row ranges, so
# every core scans (one 1e5-row partition on 2 workers used one core) and the last task
# is short; ranges have at least SCAN_MIN_ROWS rows.
SCAN_TASKS_PER_THREAD = 2
SCAN_MIN_ROWS = 10_000


def scan_tasks(parts: PartitionSet, threads: int) -> list[tuple[int, tuple | None]]:
    """The scan's tasks: (partition, (lo, hi) local rows or None for all of it).

    Partitions are split only when they are held in worker memory (a split partition read
    from files would be read once per range)."""
    n_parts = parts.n_partitions
    want = SCAN_TASKS_PER_THREAD * threads
    if parts.futures is None or n_parts >= want:
        return [(i, None) for i in range(n_parts)]
    split = -(-want // n_parts)
    tasks: list[tuple[int, tuple | None]] = []
    for i, size in enumerate(parts.sizes):
        k = int(max(1, min(split, size // SCAN_MIN_ROWS)))
        cuts = np.linspace(0, int(size), k + 1).astype(np.int64)
        tasks += [(i, (int(a), int(b)) if k > 1 else None)
                  for a, b in zip(cuts[:-1], cuts[1:])]
    return tasks


# The changed coefficients computed per row are at most DELTA_MAX_ROWS, and at most
# DELTA_SV_SHARE of the support vectors (beyond that a full evaluation costs little more).
DELTA_MAX_ROWS = 2048
DELTA_SV_SHARE = 0.25
DELTA_FIRST_SIZE = 8
# Absolute error of a float32 kernel value (float32 distances, the fused exp): pads
# r'Kr by KERNEL_VALUE_ERROR (sum |r|)^2 so the residual norms stay upper bounds.
KERNEL_VALUE_ERROR = 1e-6
DELTA_BLOCK_ROWS = 4096


def model_delta(prev: list[SupportModel], cur: list[SupportModel], kernel, sparse: bool,
                n_features: int, max_pairs: float) -> ModelDelta:
    """How the models moved between two scans, for the next scan's screening.

    dc = coef_cur - coef_prev over the union U of both scans' support vectors of every
    problem; its rows ordered by the largest |dc| over the problems. For each candidate size
    t (0, 8, 16, ... up to min(DELTA_MAX_ROWS, DELTA_SV_SHARE |SV|)) the residual norm
    ||r_t||_K of dc without its first t rows, from K r_t = K dc - K[:, B_t] dc_B_t:
    |U|^2 + |U| t_max kernel evaluations on the driver.

    Args:
        prev, cur: per problem, the models of the previous scan and of this one.
        kernel: resolved Kernel.
        sparse: the rows are CSR.
        n_features: feature count.
        max_pairs: the most kernel evaluations to spend; a larger union gives residuals of
            inf (no screening).

    Returns:
        ModelDelta (``scan.ModelDelta``).
    """
    P = len(cur)
    shift_b = np.array([c.intercept - p.intercept for p, c in zip(prev, cur)], np.float64)
    rows, sv, dc_new = united_support(list(cur), sparse, n_features)
    union, first = np.unique(np.concatenate([rows] + [p.rows for p in prev]),
                             return_index=True)
    XU = vstack_rows([sv] + [p.X for p in prev], sparse)
    XU = XU[first] if XU is not None else empty_rows(n_features, sparse)
    dc = np.zeros((len(union), P))
    dc[np.searchsorted(union, rows)] = dc_new.T
    for j, p in enumerate(prev):
        dc[np.searchsorted(union, p.rows), j] -= p.coef
    n_cur = len(rows)
    t_max = int(min(DELTA_MAX_ROWS, DELTA_SV_SHARE * n_cur, len(union)))
    sizes = [0]
    t = DELTA_FIRST_SIZE
    while t < t_max:
        sizes.append(t)
        t *= 2
    if t_max > 0 and t_max not in sizes:
        sizes.append(t_max)
    sizes = np.asarray(sizes, np.int64)
    order = np.argsort(-np.abs(dc).max(axis=1), kind="stable")[:sizes[-1]]
    V, dV = XU[order], dc[order]
    if len(union) ** 2 + len(union) * len(order) > max_pairs:
        return ModelDelta(V, dV.astype(np.float32), sizes,
                          np.full((len(sizes), P), np.inf), shift_b)
    if not len(union):
        return ModelDelta(V, dV.astype(np.float32), sizes, np.zeros((len(sizes), P)), shift_b)
    Kdc = decision_values(XU, XU, dc, np.zeros(P), kernel).reshape(len(union), P)
    q = np.empty((len(sizes), P))
    abs_r = np.empty((len(sizes), P))
    for i, t in enumerate(sizes):
        r = dc.copy()
        r[order[:t]] = 0.0
        abs_r[i] = np.abs(r).sum(axis=0)
        q[i] = (r * Kdc).sum(axis=0)         # r' K dc, corrected below to r' K r
    # r_t' K r_t = r_t' K dc - r_t' K[:, B_t] dc_B_t, K[:, B_t] in blocks of rows of U
    for a in range(0, len(union), DELTA_BLOCK_ROWS):
        with single_threaded_blas():
            KB = kernel_matrix(XU[a:a + DELTA_BLOCK_ROWS], V, kernel).astype(np.float64)
        for i, t in enumerate(sizes[1:], start=1):
            r = dc[a:a + DELTA_BLOCK_ROWS].copy()
            r[order[:t][(order[:t] >= a) & (order[:t] < a + DELTA_BLOCK_ROWS)] - a] = 0.0
            q[i] -= (r * (KB[:, :t] @ dV[:t])).sum(axis=0)
    residual = (np.sqrt(np.maximum(q, 0.0) + KERNEL_VALUE_ERROR * abs_r ** 2) * (1 + 1e-3)
                + 1e-4)
    return ModelDelta(V, dV.astype(np.float32), sizes, residual, shift_b,
                      kernel_evals=len(union) ** 2 + len(union) * len(order))


def model_shift(prev: SupportModel, cur: SupportModel, kernel, sparse: bool,
                max_pairs: float) -> tuple[float, float]:
    """(||w_cur - w_prev|| in feature space, |b_cur - b_prev|); inf when the union of the
    two SV sets is too large for max_pairs kernel evaluations."""
    db = abs(cur.intercept - prev.intercept)
    rows, first = np.unique(np.concatenate([prev.rows, cur.rows]), return_index=True)
    if len(rows) ** 2 > max_pairs:
        return np.inf, db
    X = vstack_rows([prev.X, cur.X], sparse)
    if X is None:
        return 0.0, db
    XU = X[first]
    dc = np.zeros(len(rows))
    dc[np.searchsorted(rows, cur.rows)] += cur.coef
    dc[np.searchsorted(rows, prev.rows)] -= prev.coef
    q = float(dc @ decision_values(XU, XU, dc, 0.0, kernel))
    # float32 kernel values: pad the norm so the bound stays safe
    return np.sqrt(max(q, 0.0)) * (1 + 1e-3) + 1e-4, db


def merged_scan(per_part, p: int, n_draw: int) -> dict:
    """Sum problem p's per-partition answers; keep the n_draw smallest-key candidates."""
    scans = [s[p] for s in per_part]
    keys = np.concatenate([s.keys for s in scans])
    rows = np.concatenate([s.rows for s in scans])
    pick = np.argsort(keys, kind="stable")[:n_draw]
    total = {name: sum(getattr(s, name) for s in scans)
             for name in ("n_rows", "n_violators", "n_errors", "loss", "loss_ws")}
    total["max_slack"] = max(s.max_slack for s in scans)
    total["draw"] = np.sort(rows[pick])
    return total


# -- certify and decide --------------------------------------------------------------------
@dataclass(frozen=True)
class Certificate:
    """Weak duality over all rows: P (primal over all rows), D (the working set's dual),
    their relative gap, and the working set's own share of it (LIBSVM's tolerance)."""

    primal: float
    dual: float
    relative_gap: float
    ws_relative_gap: float


def certify(p: ProblemState, scan: dict) -> Certificate:
    """The certificate of p's current model from a scan's loss sums (see ``exact.kinds``).

    P - D splits into the working set's own gap, left by LIBSVM's stopping tolerance, and
    the loss of rows outside it. For C-SVC with f = w.phi + b and sum_i y_i a_i = 0,
    |w|^2 = sum_i a_i y_i f(x_i), so over the working set P_ws - D = sum_i [a_i (y_i f_i - 1)
    + C_i max(0, 1 - y_i f_i)], a sum of terms each at most C_i x (LIBSVM's -e) at its stop.
    """
    m = p.model
    base = p.kind.half_wkw(m.coef, m.t, m.dual_objective) + p.kind.primal_constant(
        m.intercept, p.size)
    primal, primal_ws = base + scan["loss"], base + scan["loss_ws"]
    scale = max(abs(primal), abs(m.dual_objective), 1e-300)
    return Certificate(float(primal), float(m.dual_objective),
                       float(max(primal - m.dual_objective, 0.0) / scale),
                       float(max(primal_ws - m.dual_objective, 0.0) / scale))


def tightened(p: ProblemState, ws_gap: float = 0.0, gap_tol: float = 0.0
              ) -> ProblemState | None:
    """p with LIBSVM's tol divided by 10, or by as much more (up to MAX_TIGHTEN) as the
    working set's own gap ``ws_gap`` exceeds its share of ``gap_tol`` (that gap shrinks
    about in proportion to tol, so one re-solve closes it instead of one per 10x: skin_nonskin
    with duplicates collapsed into weights needed tol 1e-5, three cold direct solves of 45k
    rows before); None if tol is already at MIN_TOL."""
    if p.solver.tol <= MIN_TOL:
        return None
    factor = 10.0
    if gap_tol > 0 and ws_gap > 0:
        factor = min(MAX_TIGHTEN, max(factor, ws_gap / (WS_GAP_SHARE * gap_tol)))
    return replace(p, solver=dataclasses.replace(p.solver,
                                                 tol=max(MIN_TOL, p.solver.tol / factor)))


def decide(p: ProblemState, cert: Certificate, scan: dict, it: int, cfg: RunConfig,
           route: str, n_rows: int) -> ProblemState:
    """p after the scan: its gap, and its stop reason or what to tighten to go on.

    Stops: ``gap_tol`` (certified), ``optimal`` (no violators and nothing left to tighten),
    ``k_reached``, ``violator_tol``, ``max_iter``. With no violators yet no certificate, what
    keeps the gap open is tightened: LIBSVM's tol when the working set's own gap dominates,
    else the violator slack (10x, down to MIN_TOL), so the next scan draws the rows within
    it.
    """
    p = replace(p, relative_gap=cert.relative_gap)
    certified = cfg.gap_tol > 0 and cert.relative_gap <= cfg.gap_tol
    solver_limited = cfg.gap_tol > 0 and cert.ws_relative_gap > WS_GAP_SHARE * cfg.gap_tol
    n_viol = scan["n_violators"]
    if certified:
        return replace(p, stop_reason="optimal" if n_viol == 0 else "gap_tol")
    if n_viol == 0:
        relaxed = _relaxed(p, cfg.gap_tol, solver_limited, route, cert.ws_relative_gap)
        return relaxed if relaxed is not None else replace(p, stop_reason="optimal")
    if cfg.k is not None and p.model.n_support >= cfg.k:
        return replace(p, stop_reason="k_reached")
    if cfg.violator_tol > 0 and n_viol <= cfg.violator_tol * n_rows:
        return replace(p, stop_reason="violator_tol")
    if it >= cfg.max_iter:
        return replace(p, stop_reason="max_iter")
    if solver_limited:
        return tightened(p, cert.ws_relative_gap, cfg.gap_tol) or p
    return p


def _relaxed(p: ProblemState, gap_tol: float, solver_limited: bool, route: str,
             ws_gap: float) -> ProblemState | None:
    if gap_tol <= 0:
        return None
    if solver_limited:
        return tightened(p, ws_gap, gap_tol)
    if route == "direct" or p.margin_tol <= MIN_TOL:
        return None
    return replace(p, margin_tol=max(MIN_TOL, p.margin_tol / 10))
