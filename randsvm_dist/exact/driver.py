"""RandSVM-1 on Dask (Krishnan, Bhattacharyya, Hariharan), one or several binary problems.

    S = random subset of size r (plus seed rows); SV = solve(S)
    V = violators of SV among the rows outside the working set
    until the certified gap is at most gap_tol (or |V| = 0):
        R = random subset of V; SV = solve(SV u R); recompute V

Solves run on the workers (see ``solving``: threads, cascades, one task per binary
problem; a working set that is mostly the previous support vectors is re-solved from the
previous alphas with ``solvers.warm_smo``); scans run on the workers (one task per
partition, all problems at once); the driver holds only the working sets, the support
vectors and per-partition statistics. The draw from V is exactly uniform and identical for
any partition layout (see ``sampling``).

The certificate: every scan gives the primal objective over all rows, P = 1/2 |w|^2 +
C sum_i hinge_i, and the solve gives the dual objective D of the working set, which is a
feasible dual point of the whole problem; by weak duality P - D bounds how far the model's
primal objective is from the optimum of the whole data set. The default stop is a certified
relative gap (P - D) / P <= gap_tol. P - D splits into the working set's own gap, left by
LIBSVM's stopping tolerance (bounded by tol x (sum alpha + C x |working set|), see below),
and the hinge of the rows outside it; when the first part is what keeps the gap above
gap_tol, the next solve runs with a 10x tighter ``tol`` (down to MIN_TOL), so the gap never
stalls on data whose support vectors are mostly bounded.

Why the working set's gap is LIBSVM's tolerance: with f = w.phi + b and sum_i y_i a_i = 0,
|w|^2 = sum_i a_i y_i f(x_i), so over the working set P_ws - D = sum_i [a_i (y_i f_i - 1) +
C max(0, 1 - y_i f_i)], a sum of terms that are each at most C x (LIBSVM's -e) at its stop.

The paper's stop at |SV| >= k stays available (``k``); it and any other stop without the
certificate are reported by the estimator with a ConvergenceWarning.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import put
from randsvm_dist.engine.partitions import load_dataset_partition, take_rows
from randsvm_dist.exact import screening_store
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan import ProblemRequest, ScanAnswer, ScanModel, scan_partition_task
from randsvm_dist.exact.solving import (
    plan_cascade,
    solve_partitions,
    solve_working_set,
    threads_per_solve,
    total_threads,
)
from randsvm_dist.kernels import decision_values
from randsvm_dist.solvers.libsvm_adapter import SolverParams

log = logging.getLogger("randsvm_dist")

# LIBSVM's tol is never tightened below this (its -e; 1e-3 is its default).
MIN_TOL = 1e-7
# Tighten tol when the working set's own gap is more than this share of gap_tol.
WS_GAP_SHARE = 0.25
# Sampling cannot pay on fewer rows than DIRECT_SAMPLES samples; nor when the first
# solve already keeps SV_SHARE_DIRECT of its rows as support vectors and the data set is
# at most DIRECT_MAX_SAMPLES samples (a9a: 35% of all rows are support vectors).
DIRECT_SAMPLES = 4
# Rows within this distance above the margin fill a draw that the violators cannot fill.
FILL_BAND = 0.5
# A solve starts from the previous alphas (solvers.warm_smo) when at most this share of the
# working set is fresh rows: then most of the optimum is already there, and LIBSVM, which
# cannot take a starting point, would spend its time finding it again. Its kernel rows
# are cached in float64 up to the solve's cache_size; the gradient needs the working set
# in memory once more, so it is used up to WARM_MAX_BYTES of features.
WARM_MAX_FRESH_SHARE = 0.25
# ... and at most WARM_MAX_ROWS rows: the warm solver has no shrinking and caches few kernel
# rows of a large working set, so it loses to LIBSVM's cold solve there (measured: 40k
# ringnorm rows 97 s warm vs 138 s cold; the same 111k-row working set of 1e7 checkerboard
# rows over 780 s warm, stopped, vs 247 s cold).
WARM_MAX_ROWS = 50_000
# The support set has settled when a solve finds at most SV_GROWTH x the previous
# solve's support vectors; draws are then lean (see _draw_size).
SV_GROWTH = 1.1
LEAN_FILL = 0.1
# While the support set grows, a draw takes up to DRAW_PER_SV x |SV| violators: at 1e7
# checkerboard rows ~80% of every drawn violator became a support vector, so drawing only
# |SV| of them took one scan of all rows (the dominant cost there) per doubling.
DRAW_PER_SV = 3
WARM_MAX_BYTES = 2 << 30
DIRECT_MAX_SAMPLES = 10
SV_SHARE_DIRECT = 0.3


@dataclass
class Problem:
    """One binary problem of the run: class ``positive`` against the rest."""

    positive: int
    solver: SolverParams
    ws_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ws_X: object = None
    ws_y: np.ndarray = field(default_factory=lambda: np.empty(0))
    n_fresh: int = 0            # rows of the working set that were not support vectors
    sv_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    sv_X: object = None
    dual_coef: np.ndarray = field(default_factory=lambda: np.empty(0))
    intercept: float = 0.0
    dual_objective: float = -np.inf
    relative_gap: float = np.inf
    stop_reason: str | None = None
    cascade: tuple = ()
    margin_tol: float | None = None   # violator slack of this problem's scans (None: cfg's)
    ws_alpha: np.ndarray = field(default_factory=lambda: np.empty(0))  # warm start
    warm: bool = False          # the last solve started from the previous alphas
    prev_n_support: int = 0     # support vectors of the solve before the last


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
    classes: np.ndarray | None = None

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
                             self.classes, pure=False, retries=2, **placed(where))


@dataclass
class RunConfig:
    """Driver settings (see RandSVMClassifier for their meaning).

    ``k`` None: no support bound. ``seed_rows``: per problem, global rows that join the
    first sample (from a streaming model or an earlier fit; see ``seeding``).
    """

    k: int | None
    sample_size: int
    max_iter: int = 50
    violator_tol: float = 0.0
    gap_tol: float = 1e-3
    margin_tol: float = 1e-3
    random_state: int = 0
    seed_rows: list | None = None
    route: str = "auto"         # 'auto', 'sample' or 'direct'


def _vstack(blocks, sparse: bool):
    blocks = [b for b in blocks if b is not None and b.shape[0]]
    if not blocks:
        return None
    return sp.vstack(blocks, format="csr") if sparse else np.vstack(blocks)


def fetch_rows(client, parts: PartitionSet, rows: np.ndarray):
    """Rows (X, class index) at sorted global indices, fetched from the workers."""
    rows = np.unique(rows)
    owner = np.searchsorted(parts.offsets, rows, side="right") - 1
    futures = []
    for p in np.unique(owner):
        futures.append(client.submit(take_rows, parts.partition(client, p), rows[owner == p],
                                     pure=False, retries=2))
    got = gather(client, futures, "rows of the next working set",
                 [f"partition {p}" for p in np.unique(owner)])
    X = _vstack([g[0] for g in got], parts.is_sparse)
    cls = np.concatenate([g[1] for g in got]) if got else np.empty(0, np.int32)
    return rows, X, cls


def scan_model(problems: list[Problem], kernel, sparse: bool, n_features: int) -> ScanModel:
    """The problems' current models as one ScanModel (their SVs united)."""
    all_rows = np.concatenate([p.sv_rows for p in problems])
    union, first = np.unique(all_rows, return_index=True)
    stacked = _vstack([p.sv_X for p in problems], sparse)
    sv = stacked[first] if stacked is not None else None
    coef = np.zeros((len(union), len(problems)), dtype=np.float32)
    for j, p in enumerate(problems):
        coef[np.searchsorted(union, p.sv_rows), j] = p.dual_coef
    intercept = np.array([p.intercept for p in problems])
    if sv is None:  # no support vectors anywhere: constant models
        sv = (sp.csr_matrix((0, n_features), dtype=np.float32) if sparse
              else np.zeros((0, n_features), np.float32))
    return ScanModel(kernel, sv, coef, intercept)


@dataclass
class ScanResult:
    """One pass over all partitions."""

    per_part: list           # per partition: list of ProblemScan (None for finished ones)
    workers: list            # per partition: the worker holding its screening bounds, or None
    n_evaluated: int         # rows whose decision values were computed
    compute_seconds: float   # summed over the scan tasks


def run_scan(client, parts: PartitionSet, model: ScanModel | None,
             requests: list[ProblemRequest | None], run: str = "", iteration: int = 0,
             shift_w=None, shift_b=None, placement: list | None = None) -> ScanResult:
    """Scan every partition on the workers (see ``scan.scan_partition_task``).

    ``run``/``iteration`` key the screening bounds in the workers' ``screening_store``;
    ``placement`` (the previous scan's ``workers``) sends each partition's scan to the worker
    holding its bounds, when that worker is still there (any other may run it, evaluating
    every row).
    """
    model_future = put(client, model) if model else _NO_MODEL
    futures = []
    for i in range(parts.n_partitions):
        where = placement[i] if placement is not None else None
        futures.append(client.submit(
            scan_partition_task, parts.partition(client, i, where), model_future, requests,
            run, i, iteration, shift_w, shift_b, pure=False, retries=2, **placed(where)))
    answers: list[ScanAnswer] = gather(client, futures, "the violator scan",
                                       [f"partition {i}" for i in range(len(futures))])
    return ScanResult([a.problems for a in answers], [a.worker for a in answers],
                      sum(a.n_evaluated for a in answers), sum(a.seconds for a in answers))


_NO_MODEL = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))


@dataclass
class _Snapshot:
    rows: np.ndarray
    X: object
    coef: np.ndarray
    intercept: float


def _snapshot(p: Problem) -> _Snapshot:
    return _Snapshot(p.sv_rows, p.sv_X, p.dual_coef, p.intercept)


def model_shift(prev: _Snapshot, cur: _Snapshot, kernel, sparse: bool,
                max_pairs: float) -> tuple[float, float]:
    """(||w_cur - w_prev|| in feature space, |b_cur - b_prev|); inf when the union of the
    two SV sets is too large for max_pairs kernel evaluations."""
    db = abs(cur.intercept - prev.intercept)
    rows, first = np.unique(np.concatenate([prev.rows, cur.rows]), return_index=True)
    if len(rows) ** 2 > max_pairs:
        return np.inf, db
    X = _vstack([prev.X, cur.X], sparse)
    if X is None:
        return 0.0, db
    XU = X[first]
    dc = np.zeros(len(rows))
    dc[np.searchsorted(rows, cur.rows)] += cur.coef
    dc[np.searchsorted(rows, prev.rows)] -= prev.coef
    q = float(dc @ decision_values(XU, XU, dc, 0.0, kernel))
    # float32 kernel values: pad the norm so the bound stays safe
    return np.sqrt(max(q, 0.0)) * (1 + 1e-3) + 1e-4, db


def merge_scans(per_part, p: int, n_draw: int) -> dict:
    """Sum problem p's per-partition answers; keep the n_draw smallest-key violators."""
    scans = [s[p] for s in per_part]
    keys = np.concatenate([s.keys for s in scans])
    rows = np.concatenate([s.rows for s in scans])
    pick = np.argsort(keys, kind="stable")[:n_draw]
    total = {name: sum(getattr(s, name) for s in scans)
             for name in ("n_violators", "n_errors", "hinge_pos", "hinge_neg",
                          "hinge_ws_pos", "hinge_ws_neg")}
    total["min_margin"] = min(s.min_margin for s in scans)
    total["draw"] = np.sort(rows[pick])
    return total


def _set_working_sets(client, parts: PartitionSet, problems: list[Problem], draws) -> None:
    needed = np.unique(np.concatenate([d for d in draws if d is not None] or [np.empty(0)]))
    rows, X, cls = fetch_rows(client, parts, needed.astype(np.int64))
    for p, draw in zip(problems, draws):
        if draw is None:
            continue
        draw = np.setdiff1d(draw, p.sv_rows)
        pos = np.searchsorted(rows, draw)
        new_X = X[pos] if len(draw) else None
        new_y = np.where(cls[pos] == p.positive, 1.0, -1.0)
        ws_rows = np.concatenate([p.sv_rows, draw])
        order = np.argsort(ws_rows, kind="stable")
        p.ws_rows = ws_rows[order]
        p.ws_X = _vstack([p.sv_X, new_X], parts.is_sparse)[order]
        sv_y = np.sign(p.dual_coef) if len(p.dual_coef) else np.empty(0)
        p.ws_y = np.concatenate([sv_y, new_y])[order]
        p.ws_alpha = np.concatenate([np.abs(p.dual_coef), np.zeros(len(draw))])[order]
        p.n_fresh = len(draw)


def _solve_sampled(client, problems: list[Problem], it: int, cfg: RunConfig) -> float:
    active = [p for p in problems if p.stop_reason is None]
    t0 = time.perf_counter()
    threads = threads_per_solve(client, len(active))
    parts = max(1, total_threads(client) // max(1, len(active)))
    futures = [client.submit(solve_working_set_task, p.ws_X, p.ws_y, p.ws_rows, p.solver,
                             threads, plan_cascade(len(p.ws_rows), p.n_fresh, parts),
                             stream_id(cfg.random_state, it, j, 0xCA5C), _warm_start(p),
                             pure=False, retries=2)
               for j, p in enumerate(active)]
    for p, solved in zip(active, gather(client, futures, "the working-set solves",
                                        [f"problem {p.positive}" for p in active])):
        p.warm, p.prev_n_support = solved.warm, len(p.sv_rows)
        p.sv_rows = p.ws_rows[solved.support]
        p.sv_X = p.ws_X[solved.support]
        p.dual_coef = solved.solution.dual_coef
        p.intercept = solved.solution.intercept
        p.dual_objective = solved.solution.dual_objective
        p.cascade = solved.parts
    return time.perf_counter() - t0


def _warm_start(p: Problem) -> np.ndarray | None:
    """The alphas a solve of p's working set starts from, or None for a cold LIBSVM solve."""
    n = len(p.ws_rows)
    X = p.ws_X
    nbytes = X.data.nbytes if sp.issparse(X) else getattr(X, "nbytes", 0)
    if (not len(p.sv_rows) or len(p.ws_alpha) != n or p.n_fresh > WARM_MAX_FRESH_SHARE * n
            or n > WARM_MAX_ROWS or nbytes > WARM_MAX_BYTES):
        return None
    return p.ws_alpha


def solve_working_set_task(X, y, rows, params, n_threads, n_parts, stream, alpha0=None):
    """``solving.solve_working_set`` run from a task (its cascade parts are tasks too);
    with ``alpha0``, one warm-started solve (``solvers.warm_smo``) instead."""
    from distributed import worker_client

    if alpha0 is not None:
        from randsvm_dist.exact.solving import Solved
        from randsvm_dist.solvers.warm_smo import solve_warm

        sol = solve_warm(X, y, params, alpha0, n_threads)
        return Solved(sol.support, sol, warm=True)
    if n_parts <= 1:
        from randsvm_dist.exact.solving import Solved
        from randsvm_dist.solvers.libsvm_adapter import solve_binary

        sol = solve_binary(X, y, params, n_threads)
        return Solved(sol.support, sol)
    with worker_client() as wc:
        return solve_working_set(wc, X, y, rows, params, n_threads, n_parts, stream)


def _solve_direct(client, parts: PartitionSet, problems: list[Problem]) -> float:
    active = [p for p in problems if p.stop_reason is None]
    t0 = time.perf_counter()
    threads = threads_per_solve(client, len(active))
    inputs = [parts.partition(client, i) for i in range(parts.n_partitions)]
    futures = [client.submit(solve_partitions, p.solver, p.positive, threads, *inputs,
                             pure=False, retries=2) for p in active]
    for p, (rows, X, sol) in zip(active, gather(client, futures, "the direct solves",
                                                [f"problem {p.positive}" for p in active])):
        p.sv_rows, p.sv_X = rows, X
        p.ws_rows, p.ws_X, p.n_fresh = np.arange(parts.n_rows, dtype=np.int64), None, 0
        p.dual_coef, p.intercept, p.dual_objective = sol.dual_coef, sol.intercept, \
            sol.dual_objective
        p.cascade, p.warm = (), False
    return time.perf_counter() - t0


def _draw_size(p: Problem, r: int, route: str, n_violators: int) -> int:
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
    n_sv = len(p.sv_rows)
    if n_sv > SV_GROWTH * p.prev_n_support:
        return max(r - n_sv, min(n_violators, DRAW_PER_SV * n_sv))
    return max(min(n_violators, n_sv), min(r - n_sv, int(LEAN_FILL * n_sv)))


def _tighten(p: Problem) -> bool:
    """Divide the problem's LIBSVM tol by 10; False if it is already at MIN_TOL."""
    if p.solver.tol <= MIN_TOL:
        return False
    p.solver = dataclasses.replace(p.solver, tol=max(MIN_TOL, p.solver.tol / 10))
    return True


def _relax_stall(p: Problem, gap_tol: float, solver_limited: bool, route: str) -> bool:
    """No violators yet no certificate: tighten what keeps the gap open; False if nothing can.

    The gap is then either the working set's own (LIBSVM's tol: tighten it) or the hinge of
    rows outside it that sit within the violator slack of the margin, 1 - margin_tol <= y f
    < 1 (narrow the slack 10x, down to MIN_TOL, so the next scan draws them).
    """
    if gap_tol <= 0:
        return False
    if solver_limited:
        return _tighten(p)
    if route == "direct" or p.margin_tol is None or p.margin_tol <= MIN_TOL:
        return False
    p.margin_tol = max(MIN_TOL, p.margin_tol / 10)
    return True


@dataclass
class DriverState:
    """What the driver needs to go on after an iteration: its number, the route, the
    history and every problem (working set, SVs, dual coefficients, LIBSVM tol). The random
    streams derive from ``random_state`` and the iteration, so nothing else is needed; the
    screening bounds are not kept (the first scan after a resume evaluates every row)."""

    iteration: int
    route: str
    history: list
    problems: list


def run_randsvm(client, parts: PartitionSet, problems: list[Problem], cfg: RunConfig,
                progress=None, checkpoint=None, resume: DriverState | None = None
                ) -> list[dict]:
    """Run RandSVM-1 for every problem until each stops; returns the history.

    Args:
        client: distributed.Client.
        parts: the partitions on the workers.
        problems: binary problems (updated in place with their final models).
        cfg: RunConfig.
        progress: optional callable(record) called once per iteration and problem.
        checkpoint: optional callable(DriverState) called after every iteration that does
            not end the run (e.g. ``randsvm_dist.checkpoint.Checkpoint.save``).
        resume: a DriverState given to ``checkpoint``: go on from there (same data and
            settings); the result is the uninterrupted run's.

    Returns:
        list of per-iteration, per-problem records: iteration, problem, route ('sample' or
        'direct'), sample_size, n_fresh, cascade_parts (0: one solve), warm_start (the solve
        started from the previous alphas), tol (the solver's, this solve),
        margin_tol (the scan's violator slack: y f < 1 - margin_tol),
        n_support, n_violators, violator_fraction, n_errors, min_margin, dual_objective,
        primal_objective, relative_gap, ws_relative_gap (the working set's own share),
        solve_seconds, scan_seconds, rows_evaluated (rows whose decision values the scan
        computed; the rest were screened exactly), kernel_evals, kernel_evals_per_second
        (over the scan's wall time), kernel_evals_per_core_second (over the scan tasks'
        compute time), seconds (since the start), stop_reason.
    """
    run = uuid.uuid4().hex  # names this run's screening bounds on the workers
    try:
        return _run(client, parts, problems, cfg, progress, checkpoint, resume, run)
    finally:
        _drop_bounds(client, run)


def _drop_bounds(client, run: str) -> None:
    try:
        client.run(screening_store.drop, run)
    except Exception as exc:  # a cache only: a worker that is gone took its bounds along
        log.debug("could not drop screening bounds of run %s: %s", run, exc)


def _run(client, parts: PartitionSet, problems: list[Problem], cfg: RunConfig, progress,
         checkpoint, resume: DriverState | None, run: str) -> list[dict]:
    n = parts.n_rows
    r = min(cfg.sample_size, n)
    kernel = problems[0].solver.kernel
    history: list[dict] = []
    t0 = time.perf_counter()
    route = cfg.route
    if route == "auto":
        route = "direct" if n <= DIRECT_SAMPLES * r else "sample"
    it = 0
    if resume is not None:
        it, route, history = resume.iteration, resume.route, list(resume.history)
        for p, saved in zip(problems, resume.problems):
            p.__dict__.update(saved.__dict__)
    elif route == "sample":
        _first_sample(client, parts, problems, r, cfg)
    placement, scanned = None, None
    while True:
        it += 1
        tols = [p.solver.tol for p in problems]
        if route == "direct":
            solve_seconds = _solve_direct(client, parts, problems)
        else:
            solve_seconds = _solve_sampled(client, problems, it, cfg)
        if (route == "sample" and it == 1 and cfg.route == "auto"
                and n <= DIRECT_MAX_SAMPLES * r
                and all(len(p.sv_rows) >= SV_SHARE_DIRECT * len(p.ws_rows) for p in problems)):
            log.info("iter 1: %.0f%% of the sample are support vectors: solving all rows",
                     100 * max(len(p.sv_rows) / max(len(p.ws_rows), 1) for p in problems))
            route = "direct"
            solve_seconds += _solve_direct(client, parts, problems)
        t_scan = time.perf_counter()
        model = scan_model(problems, kernel, parts.is_sparse, parts.n_features)
        shift_w = shift_b = None
        if scanned is not None:
            shift_w = np.full(len(problems), np.inf)
            shift_b = np.zeros(len(problems))
            for j, p in enumerate(problems):
                if p.stop_reason is None:
                    shift_w[j], shift_b[j] = model_shift(
                        scanned[j], _snapshot(p), kernel, parts.is_sparse,
                        0.25 * n * max(len(p.sv_rows), 1))
        requests = []
        for j, p in enumerate(problems):
            if p.stop_reason is not None:
                requests.append(None)
                continue
            if p.margin_tol is None:
                p.margin_tol = cfg.margin_tol
            requests.append(ProblemRequest(p.positive, p.ws_rows, _draw_size(p, r, route, n),
                                           stream_id(cfg.random_state, it, j), p.margin_tol,
                                           FILL_BAND))
        scan = run_scan(client, parts, model, requests, run, it, shift_w, shift_b, placement)
        placement = scan.workers
        scanned = [_snapshot(p) for p in problems]
        scan_seconds = time.perf_counter() - t_scan
        kernel_evals = scan.n_evaluated * model.coef.shape[0]
        draws: list[np.ndarray | None] = []
        for j, p in enumerate(problems):
            if requests[j] is None:
                draws.append(None)
                continue
            n_viol = sum(part[j].n_violators for part in scan.per_part)
            s = merge_scans(scan.per_part, j, _draw_size(p, r, route, n_viol))
            sol = p.solver
            half_wKw = np.abs(p.dual_coef).sum() - p.dual_objective
            primal = half_wKw + sol.C * (sol.weight_pos * s["hinge_pos"]
                                         + sol.weight_neg * s["hinge_neg"])
            primal_ws = half_wKw + sol.C * (sol.weight_pos * s["hinge_ws_pos"]
                                            + sol.weight_neg * s["hinge_ws_neg"])
            scale = max(abs(primal), 1e-300)
            p.relative_gap = float(max(primal - p.dual_objective, 0.0) / scale)
            ws_gap = float(max(primal_ws - p.dual_objective, 0.0) / scale)
            certified = cfg.gap_tol > 0 and p.relative_gap <= cfg.gap_tol
            solver_limited = cfg.gap_tol > 0 and ws_gap > WS_GAP_SHARE * cfg.gap_tol
            if certified:
                p.stop_reason = "optimal" if s["n_violators"] == 0 else "gap_tol"
            elif s["n_violators"] == 0 and not _relax_stall(p, cfg.gap_tol, solver_limited,
                                                             route):
                p.stop_reason = "optimal"
            elif cfg.k is not None and len(p.sv_rows) >= cfg.k:
                p.stop_reason = "k_reached"
            elif s["n_violators"] <= cfg.violator_tol * n and cfg.violator_tol > 0:
                p.stop_reason = "violator_tol"
            elif it >= cfg.max_iter:
                p.stop_reason = "max_iter"
            elif solver_limited and s["n_violators"]:
                _tighten(p)
            record = {
                "iteration": it, "problem": j, "route": route,
                "sample_size": len(p.ws_rows), "n_fresh": p.n_fresh,
                "cascade_parts": len(p.cascade), "warm_start": bool(p.warm),
                "tol": tols[j],
                "margin_tol": requests[j].tol,
                "n_support": len(p.sv_rows), "n_violators": s["n_violators"],
                "violator_fraction": s["n_violators"] / n, "n_errors": s["n_errors"],
                "min_margin": s["min_margin"], "dual_objective": p.dual_objective,
                "primal_objective": float(primal), "relative_gap": p.relative_gap,
                "ws_relative_gap": ws_gap,
                "solve_seconds": solve_seconds, "scan_seconds": scan_seconds,
                "rows_evaluated": scan.n_evaluated, "kernel_evals": int(kernel_evals),
                "kernel_evals_per_second": kernel_evals / max(scan_seconds, 1e-9),
                "kernel_evals_per_core_second": kernel_evals / max(scan.compute_seconds,
                                                                   1e-9),
                "seconds": time.perf_counter() - t0,
                "stop_reason": p.stop_reason,
            }
            history.append(record)
            if progress is not None:
                progress(record)
            if p.stop_reason is None and route == "sample":
                draws.append(s["draw"])
            else:
                draws.append(None)
        if all(p.stop_reason is not None for p in problems):
            return history
        if route == "sample":
            _set_working_sets(client, parts, problems, draws)
        if checkpoint is not None:
            checkpoint(DriverState(it, route, history, problems))


def _first_sample(client, parts: PartitionSet, problems: list[Problem], r: int,
                  cfg: RunConfig) -> None:
    """Iteration 0: the same uniform sample of r rows for every problem, plus its seeds."""
    first = [ProblemRequest(-1, np.empty(0, np.int64), r, stream_id(cfg.random_state, 0),
                            cfg.margin_tol)]
    scan = run_scan(client, parts, None, first)
    draw = merge_scans(scan.per_part, 0, r)["draw"]
    seeds = cfg.seed_rows or [np.empty(0, np.int64)] * len(problems)
    _set_working_sets(client, parts, problems,
                      [np.union1d(draw, np.asarray(s, np.int64)) for s in seeds])
