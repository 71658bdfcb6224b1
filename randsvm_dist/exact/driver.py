"""RandSVM-1 on Dask (Krishnan, Bhattacharyya, Hariharan) for any problem kind.

    S = random subset of size r (plus seed rows); SV = solve(S)
    V = violators of SV among the rows outside the working set
    until the certified gap is at most gap_tol (or |V| = 0):
        R = random subset of V; SV = solve(SV u R); recompute V

One loop for every kind of SVM (``exact.kinds``: C-SVC, one-vs-one pairs, epsilon-SVR,
one-class) and every number of problems: each iteration runs the named steps solve
(``exact.solving``), scan (``exact.scan.dispatch``, screened with
``exact.scan.screening``), certify and decide (``exact.certificate``) and draw (``exact.draw``),
applied to the problems' states (``exact.state``). Solves and scans run on the workers;
the driver holds only the working sets, the support vectors and per-partition
statistics. The draw from V is exactly uniform and identical for any partition layout
(see ``sampling``).

The certificate: every scan gives the primal objective over all rows P, the solve gives the
dual objective D of the working set, which is a feasible dual point of the whole problem;
by weak duality P - D bounds how far the model's primal objective is from the optimum of
the whole data set. The default stop is a certified relative gap (P - D) / |P| <= gap_tol
(``certificate.certify``, per kind in ``exact.kinds``). When the working set's own gap
(LIBSVM's stopping tolerance) is what keeps it above gap_tol, the next solve runs with a
tighter ``tol`` (the rule: ``certificate.tightened``), so one re-solve closes it and the
gap never stalls.

Every iteration records an ``exact.history.IterationRecord`` per problem. A caller's
``cancelled`` check is asked before every draw, solve and scan (``exact.cancellation``).

The paper's stop at |SV| >= k stays available (``k``); it and any other stop without the
certificate are reported by the estimators with a ConvergenceWarning.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from randsvm_dist.engine.partitions import PartitionSet
from randsvm_dist.engine.row_totals import weight_total
from randsvm_dist.exact.cancellation import check
from randsvm_dist.exact.certificate import Certificate, certify, decide
from randsvm_dist.exact.draw import FILL_BAND, draw_size, first_working_sets, with_draws
from randsvm_dist.exact.history import IterationRecord
from randsvm_dist.exact.memory_plan import MemoryPlan, fit_memory_plan
from randsvm_dist.exact.placement_of_solves import place_solves
from randsvm_dist.exact.route import (
    PILOT_REASON,
    Machine,
    cold_backend,
    first_route,
    pilot_of,
    plan_route,
    sample_size_for,
)
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan import screening_store
from randsvm_dist.exact.scan.dispatch import ScanResult, merged_scan, run_scan, scan_model
from randsvm_dist.exact.scan.partition import ProblemRequest
from randsvm_dist.exact.scan.screening import model_delta
from randsvm_dist.exact.solve_plan import solve_sampled
from randsvm_dist.exact.solving import solve_direct, total_threads
from randsvm_dist.exact.state import DriverState, ProblemState, RunConfig
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import check_kernel_scale

log = logging.getLogger("randsvm_dist")

def check_boxes_finite(client, parts: PartitionSet, problems: list[ProblemState]) -> None:
    """Refuse a C whose boxes add up past float64 (the dual's sum of alphas, the primal's
    slack costs could not be numbers).

    Raises:
        ParameterError: C x the largest class weight x the sample weights' sum overflows.
    """
    sides = np.array([1.0, -1.0])
    box = max(float(p.kind.row_box(p.solver.C, sides, np.ones(2)).max()) for p in problems)
    if not np.isfinite(box * weight_total(client, parts)):
        raise ParameterError(f"C={problems[0].solver.C:g}: the rows' boxes (C x class weight "
                             "x sample weight) add up past the largest float64; use a "
                             "smaller C")


def finite(cert: Certificate, p: ProblemState) -> Certificate:
    """``cert`` if its objectives are finite numbers.

    Raises:
        ParameterError: the primal or dual objective overflowed float64 (a C, class weight
            or sample weight so large that C x slack is not a number): no model is
            "optimal" then.
    """
    if np.isfinite(cert.primal) and np.isfinite(cert.dual):
        return cert
    values = f"(primal {cert.primal:g}, dual {cert.dual:g})"
    scale = ("the kernel values of the rows overflow (features of too large a scale): scale "
             "the features (scale='minmax' / --scale minmax)")
    nu = getattr(getattr(p, "kind", None), "nu", None)
    if nu is not None:  # one-class: no C; nu or the features' scale
        cause = ("with nu=1 every row is a bounded support vector and the offset rho is "
                 "undefined: use a nu below 1" if nu >= 1 else scale)
        raise ParameterError(f"nu={nu:g}: the objective is not a finite number {values}; "
                             f"{cause}")
    raise ParameterError(f"C={p.solver.C:g}: the objective is not a finite number {values}: "
                         f"either {scale}, or C x the weights x the slack overflows float64 "
                         "(use a smaller C)")


def run_randsvm(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
                progress: Callable[[dict], None] | None = None,
                checkpoint: Callable[[DriverState], None] | None = None,
                resume: DriverState | None = None,
                cancelled: Callable[[], bool] | None = None
                ) -> tuple[list[ProblemState], list[dict]]:
    """Run RandSVM-1 for every problem until each stops.

    Args:
        client: distributed.Client.
        parts: the partitions on the workers.
        problems: the problems' initial states (kind, solver parameters, row counts).
        cfg: RunConfig.
        progress: optional callable(record) called once per iteration and problem.
        checkpoint: optional callable(DriverState) called after every iteration that does
            not end the run (e.g. ``randsvm_dist.exact.checkpoint.Checkpoint.save``).
        resume: a DriverState given to ``checkpoint``: go on from there (same data and
            settings); the result is the uninterrupted run's.
        cancelled: optional check asked before every draw, solve and scan; True stops the
            run (``exact.cancellation``).

    Returns:
        (the problems' final states, the history: one ``IterationRecord`` per iteration
        and problem, as a dict with the record's fields as keys).

    Raises:
        FitCancelled: ``cancelled`` returned True.
    """
    check_boxes_finite(client, parts, problems)
    run = uuid.uuid4().hex  # names this run's screening bounds on the workers
    try:  # the memory plan, then the loop: solve, scan, certify and decide, draw, checkpoint
        memory, problems, cfg = fit_memory_plan(client, parts, problems, cfg)
        loop, problems = _start(client, parts, problems, cfg, resume, cancelled)
        loop.memory, loop.solved_in = memory, memory.solve_in
        while True:
            loop.it += 1
            check(cancelled, f"the solves of iteration {loop.it}")
            problems, solve = _solve_step(client, parts, problems, cfg, loop)
            check(cancelled, f"the scan of iteration {loop.it}")
            scan = _scan_step(client, parts, problems, cfg, loop, run)
            collapsed = (parts.n_collapsed, parts.n_collapsed_across)
            problems, draws = decide_step(collapsed, problems, cfg, loop, solve, scan,
                                          progress)
            if not any(p.active for p in problems):
                return problems, loop.history
            if loop.route == "sample":
                check(cancelled, f"the draw of iteration {loop.it}")
                problems = with_draws(client, parts, problems, draws, problems[0].solver.C)
            if checkpoint is not None:
                checkpoint(DriverState(loop.it, loop.route, loop.history, problems))
    finally:
        _drop_bounds(client, run)


def _drop_bounds(client, run: str) -> None:
    try:
        client.run(screening_store.drop, run)
    except Exception as exc:  # a cache only: a worker that is gone took its bounds along
        log.debug("could not drop screening bounds of run %s: %s", run, exc)


def _warm_speedup(cold: tuple[int, float] | None, p: ProblemState,
                  seconds: float) -> float | None:
    """A warm solve's estimated speed-up over a cold LIBSVM solve of its working set: the
    run's last cold solve (m0 rows, t0 s) scaled by (m / m0)^2, over the warm solve's
    seconds (None for cold solves, several problems, or no cold solve yet)."""
    if cold is None or not p.warm or seconds <= 0:
        return None
    m0, t0 = cold
    return float(t0 * (len(p.ws.rows) / max(m0, 1)) ** 2 / seconds)


@dataclass
class Loop:
    """What the loop carries from one iteration to the next besides the problems.

    Attributes:
        r: the sample size; route, why: the route and the reason for it.
        t0: the run's start (``time.perf_counter``).
        it: the last iteration; history: the records so far (dicts).
        placement: the workers holding the last scan's screening bounds (by the rows of
            each scan task: ``ScanResult.workers``).
        scanned: the models the last scan saw (per problem), for the next model delta.
        cold: (working-set rows, seconds) of the run's last cold solve, for
            ``warm_speedup_estimate``.
        machine, backend: what the cost model was told (``plan_route``).
        solved_in: 'workers' or 'client' (``exact.in_process``, or the memory plan).
        memory: the fit's memory plan (``exact.memory_plan``), None before it is made.
    """

    r: int
    route: str
    why: str
    t0: float
    it: int = 0
    history: list = field(default_factory=list)
    placement: dict | None = None
    scanned: list | None = None
    cold: tuple[int, float] | None = None
    machine: Machine = Machine(1, 1)
    backend: str = "libsvm"
    solved_in: str = "workers"
    memory: MemoryPlan | None = None
    memory_recorded: bool = False


@dataclass
class SolveStep:
    """An iteration's solve step: the solver tol of each problem before it, its seconds,
    the cores each solve was offered."""

    tols: list
    seconds: float
    threads: int


@dataclass
class ScanStep:
    """An iteration's scan step: the requests, the result, its seconds and kernel
    evaluations (of the rows evaluated in full, each against the support vectors of the
    problems it belongs to)."""

    requests: list
    result: ScanResult
    seconds: float
    kernel_evals: int


def _start(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
           resume: DriverState | None, cancelled) -> tuple[Loop, list[ProblemState]]:
    """The loop's state before the first iteration: the route, and on the sampled route the
    first working sets (a uniform draw plus the seed rows); or the resumed state."""
    n = parts.n_rows
    r = sample_size_for(problems, min(cfg.sample_size, n), n)
    machine = Machine(total_threads(client),
                      min(q.threads for q in place_solves(client, len(problems))))
    backend = cold_backend(problems, parts.weighted, parts.is_sparse, parts.n_features)
    route, why = first_route(cfg, problems, n, r, parts.n_features, machine, backend)
    loop = Loop(r, route, why, time.perf_counter(), machine=machine, backend=backend)
    problems = [replace(p, margin_tol=cfg.margin_tol) for p in problems]
    if resume is not None:
        loop.it, loop.route, loop.history = resume.iteration, resume.route, list(resume.history)
        loop.why = "resumed"
        return loop, list(resume.problems)
    if route == "sample":
        check(cancelled, "the first draw")
        problems = first_working_sets(client, parts, problems, r, cfg)
    return loop, problems


def _solve_step(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
                loop: Loop) -> tuple[list[ProblemState], SolveStep]:
    """Every active problem solved: its working set, or all its rows on the direct route
    (which the cost model may switch to after the first sampled solve, ``plan_route``
    with the share of support vectors it measured)."""
    tols = [p.solver.tol for p in problems]
    threads = max(q.threads for q in place_solves(client, sum(p.active for p in problems)))
    if loop.route == "direct":
        problems, seconds = solve_direct(client, parts, problems)
        _warn_kernel_scale(problems, loop)
        return problems, SolveStep(tols, seconds, threads)
    problems, seconds = solve_sampled(client, problems, loop.it, cfg, parts.weighted,
                                      in_client=loop.solved_in == "client")
    if loop.it == 1 and cfg.route == "auto":
        guessed_direct = loop.why.startswith(PILOT_REASON)
        loop.route, loop.why = plan_route(
            cfg, problems, parts.n_rows, loop.r, parts.n_features, loop.machine,
            loop.backend, pilot=pilot_of(problems, seconds, parts.n_features, loop.machine,
                                         loop.backend))
        if guessed_direct:
            loop.why = f"the guess said one solve; {loop.why}"
        if loop.route == "direct":
            log.info("iter 1: %s: solving all rows", loop.why)
            problems, extra = solve_direct(client, parts, problems)
            seconds += extra
    _warn_kernel_scale(problems, loop)
    return problems, SolveStep(tols, seconds, threads)


def _warn_kernel_scale(problems: list[ProblemState], loop: Loop) -> None:
    """After the first solve, warn in this process (a worker's warning is not seen) when
    the support vectors' kernel values say the features' scale keeps the fit from
    certifying (``check_kernel_scale``; an overflow already failed the solve)."""
    if loop.it == 1:
        for p in problems:
            if p.model.X is not None:
                check_kernel_scale(p.model.X, p.solver.kernel, p.model.rows)


def _scan_step(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
               loop: Loop, run: str) -> ScanStep:
    """The scan of every row against the active problems' new models, screened by how the
    models moved since the last scan."""
    n, kernel = parts.n_rows, problems[0].solver.kernel
    t_scan = time.perf_counter()
    model = scan_model(problems, kernel, parts.is_sparse, parts.n_features)
    if loop.scanned is not None:
        model.delta = model_delta(loop.scanned, [p.model for p in problems], kernel,
                                  parts.is_sparse, parts.n_features,
                                  0.25 * max(full_scan_evals(problems, n), 1), client)
    requests = scan_requests(problems, cfg, loop, n)
    result = run_scan(client, parts, model, requests, run, loop.it, placement=loop.placement)
    loop.placement, loop.scanned = result.workers, [p.model for p in problems]
    seconds = time.perf_counter() - t_scan
    return ScanStep(requests, result, seconds, result.full_evals)


def full_scan_evals(problems: list[ProblemState], n: int) -> int:
    """The kernel evaluations of a scan of all ``n`` rows without screening (``scan.partition``:
    each row against the support vectors of the active problems it belongs to): at most
    every row against their union, and at most each problem's rows against its own."""
    active = [p for p in problems if p.active]
    union = len(np.unique(np.concatenate([p.model.rows for p in active]))) if active else 0
    return min(n * union, sum(min(p.n_rows or n, n) * p.model.n_support for p in active))


def scan_requests(problems: list[ProblemState], cfg: RunConfig, loop: Loop, n: int
                  ) -> list[ProblemRequest | None]:
    """What the scan of this iteration asks for each problem (None: it has stopped)."""
    return [ProblemRequest(p.kind, p.ws.rows, draw_size(p, loop.r, loop.route, n),
                           stream_id(cfg.random_state, loop.it, j), p.margin_tol,
                           FILL_BAND, p.solver.C) if p.active else None
            for j, p in enumerate(problems)]


def decide_step(collapsed: tuple[int, int], problems: list[ProblemState], cfg: RunConfig,
                loop: Loop, solve: SolveStep, scan: ScanStep,
                progress: Callable[[dict], None] | None
                ) -> tuple[list[ProblemState], list[np.ndarray | None]]:
    """Each scanned problem certified and decided, its record kept and reported.

    Args:
        collapsed: duplicate rows collapsed before the run, and of those the rows found
            only across partitions (for the records).
        problems, cfg, loop: the run; solve, scan: this iteration's steps.
        progress: optional callable(record) per record.

    Returns:
        (the problems, each one's next draw: None when it stopped, was not scanned, or on
        the direct route).
    """
    problems = list(problems)
    draws: list[np.ndarray | None] = []
    for j, p in enumerate(problems):
        if scan.requests[j] is None:
            draws.append(None)
            continue
        n_viol = sum(part[j].n_violators for part in scan.result.per_part)
        s = merged_scan(scan.result.per_part, j, draw_size(p, loop.r, loop.route, n_viol))
        cert = finite(certify(p, s), p)
        p = problems[j] = decide(p, cert, s, loop.it, cfg, loop.route, max(s["n_rows"], 1))
        record = _record(collapsed, loop, j, p, s, cert, solve, scan).as_dict()
        loop.history.append(record)
        if len(problems) == 1 and loop.route == "sample" and not p.warm and not p.cascade:
            loop.cold = (len(p.ws.rows), solve.seconds)
        if progress is not None:
            progress(record)
        draws.append(s["draw"] if p.active and loop.route == "sample" else None)
    return problems, draws


def _record(collapsed: tuple[int, int], loop: Loop, j: int, p: ProblemState, s: dict,
            cert: Certificate, solve: SolveStep, scan: ScanStep) -> IterationRecord:
    """Problem j's record of this iteration (p: its state after ``decide``; s: its merged
    scan)."""
    result, kernel_evals = scan.result, scan.kernel_evals
    return IterationRecord(
        iteration=loop.it, problem=j, label=p.kind.label, kind=p.kind.name,
        route=loop.route, route_reason=loop.why, solved_in=loop.solved_in,
        sample_size=len(p.ws.rows), n_fresh=p.ws.n_fresh,
        cascade_parts=len(p.cascade), warm_start=bool(p.warm),
        solve_plan=p.solve_plan, solve_plan_reason=p.solve_plan_reason,
        tol=solve.tols[j], margin_tol=scan.requests[j].tol,
        n_support=p.model.n_support, n_violators=s["n_violators"],
        violator_fraction=s["n_violators"] / max(s["n_rows"], 1),
        n_errors=s["n_errors"], max_slack=s["max_slack"],
        dual_objective=cert.dual, primal_objective=cert.primal,
        relative_gap=cert.relative_gap, ws_relative_gap=cert.ws_relative_gap,
        solve_seconds=solve.seconds, scan_seconds=scan.seconds, solve_threads=solve.threads,
        warm_speedup_estimate=_warm_speedup(loop.cold, p, solve.seconds),
        duplicates_collapsed=collapsed[0],
        duplicates_across=collapsed[1],
        rows_evaluated=result.n_evaluated, rows_screened=result.n_screened,
        kernel_evals=int(kernel_evals),
        screening_kernel_evals=int(result.kernel_evals - kernel_evals),
        kernel_evals_per_second=result.kernel_evals / max(scan.seconds, 1e-9),
        kernel_evals_per_core_second=result.kernel_evals / max(result.compute_seconds, 1e-9),
        seconds=time.perf_counter() - loop.t0,
        stop_reason=p.stop_reason,
        scan_worker_rss=result.worker_rss,
        memory_plan=_memory_record(loop),
    )


def _memory_record(loop: Loop) -> dict | None:
    """The memory plan, for the first record the run (or its resumed part) writes."""
    if loop.memory is None or loop.memory_recorded:
        return None
    loop.memory_recorded = True
    return loop.memory.as_record()
