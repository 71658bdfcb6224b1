"""RandSVM-1 on Dask (Krishnan, Bhattacharyya, Hariharan) for any problem kind.

    S = random subset of size r (plus seed rows); SV = solve(S)
    V = violators of SV among the rows outside the working set
    until the certified gap is at most gap_tol (or |V| = 0):
        R = random subset of V; SV = solve(SV u R); recompute V

One loop for every kind of SVM (``exact.kinds``: C-SVC, one-vs-one pairs, epsilon-SVR,
one-class) and every number of problems: each iteration is the named steps of
``exact.steps`` (solve, scan, certify, decide, draw) applied to the problems' states
(``exact.state``). Solves and scans run on the workers; the driver holds only the working
sets, the support vectors and per-partition statistics. The draw from V is exactly
uniform and identical for any partition layout (see ``sampling``).

The certificate: every scan gives the primal objective over all rows P, the solve gives the
dual objective D of the working set, which is a feasible dual point of the whole problem;
by weak duality P - D bounds how far the model's primal objective is from the optimum of
the whole data set. The default stop is a certified relative gap (P - D) / |P| <= gap_tol
(``steps.certify``, per kind in ``exact.kinds``). When the working set's own gap (LIBSVM's
stopping tolerance) is what keeps it above gap_tol, the next solve runs with a 10x tighter
``tol``, so the gap never stalls.

The paper's stop at |SV| >= k stays available (``k``); it and any other stop without the
certificate are reported by the estimators with a ConvergenceWarning.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace

import numpy as np

from randsvm_dist.engine.inputs import weight_total
from randsvm_dist.engine.partitions import PartitionSet
from randsvm_dist.exact import screening_store
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan import ProblemRequest
from randsvm_dist.exact.state import DriverState, ProblemState, RunConfig
from randsvm_dist.exact.steps import (
    FILL_BAND,
    Certificate,
    draw_size,
    first_draw,
    merged_scan,
    model_delta,
    run_scan,
    scan_model,
    solve_direct,
    solve_sampled,
    with_draws,
)
from randsvm_dist.exact.steps import certify as certificate_of
from randsvm_dist.exact.steps import decide as decided
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.solvers.onedal_backend import (
    AUTO_MIN_DENSE_FEATURES,
    onedal_available,
    onedal_solves,
)

log = logging.getLogger("randsvm_dist")

# Sampling cannot pay on fewer rows than DIRECT_SAMPLES samples; nor when the first
# solve already keeps SV_SHARE_DIRECT of its rows as support vectors and the data set is
# at most DIRECT_MAX_SAMPLES samples (a9a: 35% of all rows are support vectors).
DIRECT_SAMPLES = 4
DIRECT_MAX_SAMPLES = 10
SV_SHARE_DIRECT = 0.3
# Whatever the size: when SV_SHARE_ALWAYS_DIRECT of the first sample are support vectors,
# the last working set holds about that share of all rows, so sampling solves more than
# one direct solve. Measured (epsilon-SVR, Friedman #1, 15,000 rows, noise 1, epsilon 0.1,
# r = 1,000, 2 cores): 91% support vectors, sampling 626 s in 5 iterations vs direct 114 s.
SV_SHARE_ALWAYS_DIRECT = 0.6
# The first sample of sample_size='auto': 2 x the paper's k, but at most 1/AUTO_SHARE of the
# rows and at least AUTO_FLOOR. The paper's k (~10-12k rows) made every set under ~45k
# rows a direct solve; a smaller first sample pays there because its working sets grow
# with the support set (measured, ijcnn1, 49,990 rows, 2,478 SVs, one busy machine:
# r = 6,000 19.3 s, r = 3,000 35.0 s, one direct solve 66.6 s, same optimum).
AUTO_SHARE = 8
AUTO_FLOOR = 5_000
# With oneDAL as the solver (solver='onedal', or 'auto' on rows it is preferred for), one
# solve of all rows beats sampling up to ONEDAL_DIRECT_MAX_ROWS rows. Measured (quiet,
# 2026-11-25, benchmarks/bench_ahead.py; scikit-learn-intelex's SVC on all rows vs
# RandSVM sampling with oneDAL solves): ijcnn1 50k 2.4 vs 5.6 s, w8a 33k 1.5 vs 5.7 s;
# ringnorm 3e5 25.7 vs 24.2 s (sampling wins from there on).
ONEDAL_DIRECT_MAX_ROWS = 150_000


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
    raise ParameterError(f"C={p.solver.C:g}: the objective is not a finite number (primal "
                         f"{cert.primal:g}, dual {cert.dual:g}); C x the weights x the slack "
                         "overflows float64: use a smaller C")


def run_randsvm(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
                progress=None, checkpoint=None, resume: DriverState | None = None
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

    Returns:
        (the problems' final states, the history): per-iteration, per-problem records:
        iteration, problem (index), label, kind, route ('sample' or 'direct'), route_reason,
        sample_size, n_fresh, cascade_parts (0: one solve), warm_start (the solve started
        from the previous alphas), tol (the solver's, this solve), margin_tol (the scan's
        violator slack), n_support, n_violators, violator_fraction, n_errors, max_slack,
        dual_objective, primal_objective, relative_gap, ws_relative_gap (the working set's
        own share), solve_seconds, scan_seconds, warm_speedup_estimate (a warm solve's
        speed-up over the run's last cold solve scaled by the working sets' sizes squared;
        None otherwise), duplicates_collapsed (rows of the data set merged into identical
        rows as multiplicity weights before the run), rows_evaluated (rows whose decision values
        the scan computed in full), rows_screened (rows of the problems screened out
        exactly: bounded clear of every threshold), kernel_evals (rows_evaluated x SVs),
        screening_kernel_evals (what screening cost besides: rows x the changed coefficients
        computed for them, and the driver's for the model delta; the rates below count
        kernel_evals only),
        kernel_evals_per_second (over the scan's wall time), kernel_evals_per_core_second
        (over the scan tasks' compute time), seconds (since the start), stop_reason.
    """
    check_boxes_finite(client, parts, problems)
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


def sample_size_for(problems: list[ProblemState], r: int, n: int) -> int:
    """r raised to the fewest rows a feasible working set of every problem has."""
    need = max(p.kind.min_working_set(p.n_rows) for p in problems)
    return min(n, max(r, int(np.ceil(1.1 * need)) if need > 1 else r))


def auto_sample_size(n_rows: int, k: int) -> int:
    """r for sample_size='auto': min(2 k, max(AUTO_FLOOR, n_rows / AUTO_SHARE)).

    Args:
        n_rows: rows of the data set.
        k: the paper's support-set bound (``exact.bounds.support_bound``).
    """
    return int(min(2 * k, max(AUTO_FLOOR, n_rows // AUTO_SHARE)))


def onedal_solves_all(problems: list[ProblemState], parts: PartitionSet) -> bool:
    """Whether the problems' backend would solve all rows with oneDAL ('onedal', or 'auto'
    on weighted, sparse or at least AUTO_MIN_DENSE_FEATURES-feature rows) and oneDAL is
    installed."""
    p = problems[0]
    params = p.kind.solver_params(p.solver, p.n_rows, p.n_rows)
    if params.backend == "libsvm" or not onedal_solves(params):
        return False
    if params.backend == "auto" and not (parts.weighted or parts.is_sparse
                                         or parts.n_features >= AUTO_MIN_DENSE_FEATURES):
        return False
    return onedal_available()


def choose_route(cfg: RunConfig, n: int, r: int, onedal: bool = False) -> tuple[str, str]:
    """(route, why) before the first solve (``onedal``: oneDAL would solve all rows)."""
    if cfg.route != "auto":
        return cfg.route, f"route={cfg.route!r} was asked for"
    if onedal and n <= ONEDAL_DIRECT_MAX_ROWS:
        return "direct", (f"{n} rows <= {ONEDAL_DIRECT_MAX_ROWS}: one oneDAL solve of all "
                          "rows measured faster than sampling")
    if n <= DIRECT_SAMPLES * r:
        return "direct", f"{n} rows <= {DIRECT_SAMPLES} samples of {r}: sampling cannot pay"
    return "sample", f"{n} rows > {DIRECT_SAMPLES} samples of {r}"


def _mostly_support(problems: list[ProblemState], share: float = SV_SHARE_DIRECT) -> bool:
    return all(p.model.n_support >= share * len(p.ws.rows) for p in problems)


def _warm_speedup(cold: tuple[int, float] | None, p: ProblemState,
                  seconds: float) -> float | None:
    """A warm solve's estimated speed-up over a cold LIBSVM solve of its working set: the
    run's last cold solve (m0 rows, t0 s) scaled by (m / m0)^2, over the warm solve's
    seconds (None for cold solves, several problems, or no cold solve yet)."""
    if cold is None or not p.warm or seconds <= 0:
        return None
    m0, t0 = cold
    return float(t0 * (len(p.ws.rows) / max(m0, 1)) ** 2 / seconds)


def _run(client, parts: PartitionSet, problems: list[ProblemState], cfg: RunConfig,
         progress, checkpoint, resume: DriverState | None, run: str):
    n = parts.n_rows
    r = sample_size_for(problems, min(cfg.sample_size, n), n)
    kernel = problems[0].solver.kernel
    t0 = time.perf_counter()
    route, why = choose_route(cfg, n, r, onedal_solves_all(problems, parts))
    it, history = 0, []
    problems = [replace(p, margin_tol=cfg.margin_tol) for p in problems]
    if resume is not None:
        it, route, history, problems = (resume.iteration, resume.route, list(resume.history),
                                        list(resume.problems))
        why = "resumed"
    elif route == "sample":
        draw = first_draw(client, parts, r, cfg)
        seeds = cfg.seed_rows or [np.empty(0, np.int64)] * len(problems)
        problems = with_draws(client, parts, problems,
                              [np.union1d(draw, np.asarray(s, np.int64)) for s in seeds],
                              problems[0].solver.C)
    placement, scanned, cold = None, None, None
    while True:
        it += 1
        tols = [p.solver.tol for p in problems]
        if route == "direct":
            problems, solve_seconds = solve_direct(client, parts, problems)
        else:
            problems, solve_seconds = solve_sampled(client, problems, it, cfg, parts.weighted)
            if (it == 1 and cfg.route == "auto"
                    and ((n <= DIRECT_MAX_SAMPLES * r and _mostly_support(problems))
                         or _mostly_support(problems, SV_SHARE_ALWAYS_DIRECT))):
                share = max(p.model.n_support / max(len(p.ws.rows), 1) for p in problems)
                route = "direct"
                why = f"{100 * share:.0f}% of the first sample are support vectors" + (
                    "" if n <= DIRECT_MAX_SAMPLES * r else
                    f" (>= {100 * SV_SHARE_ALWAYS_DIRECT:.0f}%: the last working set would "
                    "hold most rows)")
                log.info("iter 1: %s: solving all rows", why)
                problems, extra = solve_direct(client, parts, problems)
                solve_seconds += extra
        t_scan = time.perf_counter()
        model = scan_model(problems, kernel, parts.is_sparse, parts.n_features)
        if scanned is not None:
            model.delta = model_delta(scanned, [p.model for p in problems], kernel,
                                      parts.is_sparse, parts.n_features,
                                      0.25 * n * max(model.coef.shape[0], 1))
        requests = [ProblemRequest(p.kind, p.ws.rows, draw_size(p, r, route, n),
                                   stream_id(cfg.random_state, it, j), p.margin_tol,
                                   FILL_BAND, p.solver.C) if p.active else None
                    for j, p in enumerate(problems)]
        scan = run_scan(client, parts, model, requests, run, it, placement=placement)
        placement, scanned = scan.workers, [p.model for p in problems]
        scan_seconds = time.perf_counter() - t_scan
        kernel_evals = scan.n_evaluated * model.coef.shape[0]
        draws: list[np.ndarray | None] = []
        for j, p in enumerate(problems):
            if requests[j] is None:
                draws.append(None)
                continue
            n_viol = sum(part[j].n_violators for part in scan.per_part)
            s = merged_scan(scan.per_part, j, draw_size(p, r, route, n_viol))
            cert = finite(certificate_of(p, s), p)
            p = problems[j] = decided(p, cert, s, it, cfg, route, max(s["n_rows"], 1))
            record = {
                "iteration": it, "problem": j, "label": p.kind.label, "kind": p.kind.name,
                "route": route, "route_reason": why,
                "sample_size": len(p.ws.rows), "n_fresh": p.ws.n_fresh,
                "cascade_parts": len(p.cascade), "warm_start": bool(p.warm),
                "tol": tols[j], "margin_tol": requests[j].tol,
                "n_support": p.model.n_support, "n_violators": s["n_violators"],
                "violator_fraction": s["n_violators"] / max(s["n_rows"], 1),
                "n_errors": s["n_errors"], "max_slack": s["max_slack"],
                "dual_objective": cert.dual, "primal_objective": cert.primal,
                "relative_gap": cert.relative_gap, "ws_relative_gap": cert.ws_relative_gap,
                "solve_seconds": solve_seconds, "scan_seconds": scan_seconds,
                "warm_speedup_estimate": _warm_speedup(cold, p, solve_seconds),
                "duplicates_collapsed": parts.n_collapsed,
                "rows_evaluated": scan.n_evaluated, "rows_screened": scan.n_screened,
                "kernel_evals": int(kernel_evals),
                "screening_kernel_evals": int(scan.kernel_evals - kernel_evals),
                "kernel_evals_per_second": kernel_evals / max(scan_seconds, 1e-9),
                "kernel_evals_per_core_second": kernel_evals / max(scan.compute_seconds,
                                                                   1e-9),
                "seconds": time.perf_counter() - t0,
                "stop_reason": p.stop_reason,
            }
            history.append(record)
            if len(problems) == 1 and route == "sample" and not p.warm and not p.cascade:
                cold = (len(p.ws.rows), solve_seconds)
            if progress is not None:
                progress(record)
            draws.append(s["draw"] if p.active and route == "sample" else None)
        if not any(p.active for p in problems):
            return problems, history
        if route == "sample":
            problems = with_draws(client, parts, problems, draws, problems[0].solver.C)
        if checkpoint is not None:
            checkpoint(DriverState(it, route, history, problems))
