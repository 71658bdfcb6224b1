"""The history of a run: one record per iteration and problem.

The driver builds an ``IterationRecord``; ``history_`` of the estimators, the checkpoints,
the command line's JSON and the model files hold it as a plain dict (``as_dict``), so
fitted models keep no package class in their history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class IterationRecord:
    """What one iteration did for one problem.

    Attributes:
        iteration: the iteration (1 for the first solve).
        problem: the problem's index in the run.
        label, kind: the problem's label and its kind's name (``exact.kinds``).
        route: 'sample' or 'direct'; route_reason: why (the cost model's predicted times,
            ``exact.route.plan_route``, or the setting that forced it).
        solved_in: 'workers' (the Dask workers solved and scanned) or 'client' (one solve
            of all rows and its certificate in the client's process, ``exact.in_process``).
        sample_size: rows of the working set solved; n_fresh: those that were not support
            vectors of the previous model.
        cascade_parts: parts of the solve's cascade or divide (0: one solve).
        warm_start: the solve started from the previous alphas.
        solve_plan: how the solve used the cluster: 'warm', 'whole', 'cascade' or
            'divide' (``exact.solve_plan``); solve_plan_reason: why (the cost model's
            figures).
        tol: the solver's stopping tolerance of this solve.
        margin_tol: the scan's violator slack.
        n_support: support vectors of the solve.
        n_violators, violator_fraction: violators the scan found, and their share of the
            problem's rows.
        n_errors: rows with slack above the kind's ``error_slack``.
        max_slack: the largest slack of a row of the problem.
        dual_objective, primal_objective: the certificate's D and P.
        relative_gap: (P - D) / |P|; ws_relative_gap: the working set's own share of it.
        solve_seconds, scan_seconds: wall time of the solve step and of the scan.
        solve_threads: the most cores a solve of the iteration was offered
            (``exact.placement_of_solves.place_solves``, or the client's cores
            in-process); every backend takes at most that many
            (``solvers.threads.step_threads``).
        warm_speedup_estimate: a warm solve's speed-up over the run's last cold solve,
            scaled by the working sets' sizes squared (None otherwise).
        duplicates_collapsed: rows of the data set merged into identical rows as
            multiplicity weights before the run.
        duplicates_across: of those, rows found only by the exchange of row hashes
            across partitions (``engine.duplicate_exchange``).
        rows_evaluated: rows whose decision values the scan computed in full.
        rows_screened: rows of the problems screened out exactly (bounded clear of every
            threshold).
        kernel_evals: of the rows evaluated in full, each against the support vectors of
            the problems it belongs to.
        screening_kernel_evals: what screening cost besides (rows x the changed
            coefficients computed for them, and the driver's for the model delta); the
            rates below count both.
        kernel_evals_per_second: over the scan's wall time.
        kernel_evals_per_core_second: over the scan tasks' compute time.
        seconds: since the start of the run.
        stop_reason: why the problem stopped (None: it goes on).
        scan_worker_rss: the largest worker process memory (bytes) at the end of a scan
            task (0: not measured).
        memory_plan: the fit's memory plan (``exact.memory_plan.MemoryPlan.as_record``),
            in the first record of a run only.
    """

    iteration: int
    problem: int
    label: str
    kind: str
    route: str
    route_reason: str
    solved_in: str
    sample_size: int
    n_fresh: int
    cascade_parts: int
    warm_start: bool
    solve_plan: str
    solve_plan_reason: str
    tol: float
    margin_tol: float
    n_support: int
    n_violators: int
    violator_fraction: float
    n_errors: int
    max_slack: float
    dual_objective: float
    primal_objective: float
    relative_gap: float
    ws_relative_gap: float
    solve_seconds: float
    scan_seconds: float
    solve_threads: int
    warm_speedup_estimate: float | None
    duplicates_collapsed: int
    duplicates_across: int
    rows_evaluated: int
    rows_screened: int
    kernel_evals: int
    screening_kernel_evals: int
    kernel_evals_per_second: float
    kernel_evals_per_core_second: float
    seconds: float
    stop_reason: str | None
    scan_worker_rss: int = 0
    memory_plan: dict | None = None

    def as_dict(self) -> dict:
        """The record as the dict ``history_`` holds (the fields in this order)."""
        return asdict(self)
