"""The driver's working-set step (``solve_sampled``): each active problem's solve as a
task, run by the plan the cost model picks for it.

A working set is solved by one of these plans, each giving the working set's own optimum
(the certificate that follows every solve decides, as ever):

- 'warm': the previous alphas start the warm SMO (``solving.warm_start``: few fresh rows),
  with the last warm solve's kernel sums on its support vectors (``start_sums``), so the
  starting gradient costs the fresh rows only;
- 'whole': one cold solve on the cores the solve is offered;
- 'cascade': the random-split cascade with feedback (``solving.solve_working_set``), where
  ``solving.plan_cascade`` allows one (large working sets of mostly fresh rows);
- 'divide': divide and conquer over the workers (``exact.divide``; C-SVC).

Cold working sets compare the eligible plans by ``cost_model.plan_seconds``: the
working set's rows and features, the support vectors expected (the carried-over rows
plus FRESH_SV_SHARE of the fresh ones, FIRST_SV_SHARE of a first sample), the parts (the
cluster's threads over the problems solved at once) and the threads offered; the fastest
cut plan is taken when predicted at most CUT_PLAN_MAX_SHARE of the whole solve's time.
The plan and its reason go to ``history_`` (``solve_plan``, ``solve_plan_reason``, which
also says how the working set was drawn when a pilot drew it: ``WorkingSet.origin``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.exact import solving
from randsvm_dist.exact.cost_model import Coefficients, plan_seconds
from randsvm_dist.exact.divide import solve_divided
from randsvm_dist.exact.kinds import ProblemKind
from randsvm_dist.exact.placement_of_solves import place_solves
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.state import ProblemState, RunConfig, SupportModel
from randsvm_dist.solvers.onedal_auto import prefer_onedal
from randsvm_dist.solvers.params import C_SVC, SolverParams

# support vectors expected of a cold working set's fresh rows: of a first sample (random
# rows; ringnorm 50k and checkerboard 100k kept 8-11%), and of violators joining a model
# (33-38% became support vectors)
FIRST_SV_SHARE = 0.15
FRESH_SV_SHARE = 0.35
# a divide's parts have at least this many rows (smaller ones leave little to share)
DIVIDE_MIN_PART_ROWS = 2_000
# a cut plan replaces the whole solve only when predicted at most this share of its time:
# the model was off by up to 30% on the solves it was checked against, most where the
# working set had few support vectors and all plans took well under a second
CUT_PLAN_MAX_SHARE = 0.85


@dataclass(frozen=True)
class SolvePlan:
    """How one working set is solved: the plan's name (see the module docstring), its
    parts (1: one solve) and why it was chosen."""

    name: str
    n_parts: int
    reason: str


def choose_solve_plan(p: ProblemState, n_parts: int, threads: int,
                      coef: Coefficients | None = None) -> SolvePlan:
    """The plan of p's working set.

    Args:
        p: the problem, its next working set in ``p.ws``.
        n_parts: parts a cut plan may use (the cluster's threads over the problems).
        threads: cores offered to a whole (or a final) solve.
        coef: the cost model's coefficients (default: ``Coefficients()``).

    Returns:
        SolvePlan.
    """
    ws, m = p.ws, len(p.ws.rows)
    if solving.warm_start(p) is not None:
        share = solving.WARM_MAX_FRESH_SHARE * p.kind.warm_fresh_scale
        return SolvePlan("warm", 1, f"{ws.n_fresh} of {m} rows fresh (<= {share:.0%}): "
                         "warm start from the previous alphas")
    coef = coef or Coefficients()
    d = ws.X.nnz / max(m, 1) if sp.issparse(ws.X) else ws.X.shape[1]
    share = FRESH_SV_SHARE if p.model.n_support else FIRST_SV_SHARE
    s = max(1, min(m, m - ws.n_fresh + int(share * ws.n_fresh)))
    params = p.kind.solver_params(p.solver, m, p.size)
    weighted = bool(np.any(ws.weight != 1.0))
    backend = ("onedal" if p.solver.backend == "onedal" or (
        p.solver.backend == "auto" and prefer_onedal(ws.X, params, weighted)) else "libsvm")
    options = {"whole": (1, plan_seconds(m, s, d, 1, threads, coef, backend)["whole"])}
    cascade = solving.plan_cascade(m, ws.n_fresh, n_parts) if p.kind.cascadable else 1
    if cascade > 1:
        options["cascade"] = (cascade, plan_seconds(m, s, d, cascade, threads, coef,
                                                    backend)["cascade"])
    # a divide unites the parts' alphas as C-SVC's (``divide.union_alphas``); it was
    # measured to pay against LIBSVM's whole solve only: against oneDAL's it lost
    # (ringnorm 3e5 at W=2, benchmarks/bench_scaleout.py: 12.4 s divided, 7.4 s whole)
    if (p.kind.svm_type == C_SVC and p.kind.warm_startable and n_parts > 1
            and backend == "libsvm" and m >= DIVIDE_MIN_PART_ROWS * n_parts
            and solving.warm_fits(ws.X)):
        options["divide"] = (n_parts, plan_seconds(m, s, d, n_parts, threads, coef,
                                                   backend)["divide"])
    cut = min(options, key=lambda k: (k == "whole", options[k][1]))
    name = cut if options[cut][1] <= CUT_PLAN_MAX_SHARE * options["whole"][1] else "whole"
    costs = ", ".join(f"{k} {t:.2f} s" + (f" ({parts} parts)" if parts > 1 else "")
                      for k, (parts, t) in options.items())
    return SolvePlan(name, options[name][0],
                     f"cost model: {costs} ({m} rows, ~{s} support vectors expected, "
                     f"{threads} threads a solve)")


def start_sums(p: ProblemState) -> np.ndarray | None:
    """The kernel sums a warm start of p's working set reuses: the last solve's
    (``SupportModel.kernel_sums``) on its support vectors' rows, NaN on the fresh rows;
    None when that solve left none (or its rows are not all in the working set)."""
    m, ws = p.model, p.ws
    pos = np.searchsorted(ws.rows, m.rows)
    if m.kernel_sums is None or not np.array_equal(ws.rows[pos], m.rows):
        return None
    sums = np.full((len(ws.rows), 2), np.nan)
    sums[pos] = m.kernel_sums
    return sums


def solve_working_set_task(kind: ProblemKind, X, t: np.ndarray, box: np.ndarray | None,
                           rows: np.ndarray, params: SolverParams, n_threads: int,
                           plan: SolvePlan, stream: int,
                           alpha0: np.ndarray | None = None,
                           sums: np.ndarray | None = None) -> solving.Solved:
    """A working set's solve run from a task, by ``plan`` (its cut plans' parts are
    tasks too): 'warm' from ``alpha0`` and the rows' kernel sums ``sums``
    (``start_sums``; ``solvers.warm_smo.solve``), 'whole', 'cascade'
    (``solving.solve_working_set``) or 'divide' (``divide.solve_divided``).

    Returns:
        solving.Solved.
    """
    from distributed import worker_client

    if plan.name == "warm":
        from randsvm_dist.solvers.warm_smo.solve import solve_warm
        from randsvm_dist.solvers.weighted import solve_weighted_warm

        sol = (solve_warm(X, t, params, alpha0, n_threads, start_sums=sums) if box is None
               else solve_weighted_warm(X, t, params, box, alpha0, n_threads, sums))
        return solving.Solved(sol.support, sol, warm=True)
    if plan.name == "whole":
        sol = solving.solve_rows(X, t, box, params, n_threads)
        return solving.Solved(sol.support, sol)
    with worker_client() as wc:
        if plan.name == "divide":
            return solve_divided(wc, X, t, box, params, n_threads, plan.n_parts, stream)
        return solving.solve_working_set(wc, kind, X, t, box, rows, params, n_threads,
                                         plan.n_parts, stream)


@dataclass(frozen=True)
class _ClientPlace:
    """The client's process as the place of a solve: its cores (see ``solve_sampled``)."""

    threads: int


def solve_sampled(client, problems: list[ProblemState], it: int, cfg: RunConfig,
                  weighted: bool, in_client: bool = False) -> tuple[list[ProblemState], float]:
    """Solve every active problem's working set on the workers, concurrently, each by
    its plan (``choose_solve_plan``); or, ``in_client``, one after the other in this
    process with its cores (the workers' memory cannot hold a solve:
    ``exact.memory_plan``; cut plans, whose parts are tasks, solve whole there).

    Args:
        client: distributed.Client.
        problems: every problem of the run (the active ones are solved).
        it: the iteration (with ``cfg.random_state``, the streams of the cut plans).
        cfg: the run's settings; weighted: rows carry sample weights.
        in_client: solve in this process instead of on the workers.

    Returns:
        (the problems with their new models and plans, the step's wall seconds).
    """
    active = [p for p in problems if p.active]
    t0 = time.perf_counter()
    places = (place_solves(client, len(active)) if not in_client
              else [_ClientPlace(os.cpu_count() or 1)] * len(active))
    n_parts = (1 if in_client
               else max(1, solving.total_threads(client) // max(1, len(active))))
    futures, plans = [], []
    for j, p in enumerate(active):
        ws = p.ws
        size = float(ws.weight.sum()) if weighted else float(len(ws.weight))
        params = p.kind.solver_params(p.solver, size, p.size)
        box = p.kind.row_box(p.solver.C, ws.t, ws.weight) if weighted else None
        plans.append(choose_solve_plan(p, n_parts, places[j].threads))
        warm = plans[-1].name == "warm"
        args = (solve_working_set_task, p.kind, ws.X, ws.t, box, ws.rows, params,
                places[j].threads, plans[-1], stream_id(cfg.random_state, it, j, 0xCA5C),
                ws.alpha0 if warm else None, start_sums(p) if warm else None)
        futures.append(args[0](*args[1:]) if in_client else client.submit(
            *args, pure=False, retries=2, **places[j].submit_options()))
    plan_of = iter(plans)

    def solved_state(p: ProblemState, s: solving.Solved) -> ProblemState:
        ws, k, plan = p.ws, s.support, next(plan_of)
        model = SupportModel(ws.rows[k], ws.X[k], ws.t[k], ws.weight[k],
                             s.solution.dual_coef, s.solution.intercept,
                             s.solution.dual_objective, s.solution.kernel_sums)
        return replace(p, model=model, prev_n_support=p.model.n_support, warm=s.warm,
                       cascade=s.parts, solve_plan=plan.name,
                       solve_plan_reason=plan.reason + (f"; the rows {ws.origin}"
                                                        if ws.origin else ""))

    results = (futures if in_client else
               gather(client, futures, "the working-set solves",
                      [p.kind.label for p in active]))
    return solving.with_results(problems, results, solved_state), time.perf_counter() - t0
