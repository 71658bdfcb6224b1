"""Where and how the solves of an iteration run on the workers: one solve of rows
(``solve_rows``), the cascade, the warm start's rule and ``solve_direct`` (the driver's
solve of all rows). The driver's working-set step (``exact.solve_plan.solve_sampled``)
picks among these and ``exact.divide`` by the cost model.

The driver alternates solves and scans, so while a solve runs the other cores would idle.
Three ways to keep them busy here (and the divide and conquer of ``exact.divide``), all
leaving the result exact (the scan that follows every solve checks the model against all
rows, and the certificate is computed from that scan):

- **threads**: a solve gets the cores of its host that no other solve of the iteration
  needs (LIBSVM computes kernel columns with OpenMP; ``solve_libsvm(n_threads=)``);
  one-vs-rest problems solve concurrently, one task each, sharing the cores.
- **cascade** (Graf et al., NIPS 2004): a large working set made mostly of fresh rows is
  cut into disjoint parts (by the rows' random keys), the parts are solved in parallel,
  and the final solve runs on the union of their support vectors; rows of the working set
  that this united model violates join it and it is solved again (Graf et al.'s feedback
  loop) until none does, so a cascade gives the working set's own optimum (a cascade that
  only dropped them would cycle: the next scan draws them again).
- **direct**: when sampling cannot pay, one solve on every row, the partitions
  concatenated on the worker that solves (nothing passes through the driver); a re-solve
  the certificate asks for (a tighter tol) starts from the last one's alphas.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, PartitionSet, vstack_rows
from randsvm_dist.exact.kinds import ProblemKind
from randsvm_dist.exact.placement_of_solves import (
    place_here,
    place_solves,
)
from randsvm_dist.exact.sampling import keys_of
from randsvm_dist.exact.state import ProblemState, SupportModel, WorkingSet
from randsvm_dist.numerics.kernels import check_kernel_scale, decision_values
from randsvm_dist.solvers.dual_objective import dual_objective_from_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.onedal_auto import prefer_onedal
from randsvm_dist.solvers.onedal_backend import (
    margin_violation,
    missed_optimum,
    onedal_solves,
    solve_onedal,
)
from randsvm_dist.solvers.params import C_SVC, SolverParams
from randsvm_dist.solvers.solution import BinarySolution
from randsvm_dist.solvers.weighted import solve_weighted

# A cascade pays when its parts are large and most rows of the working set are fresh
# (not support vectors of the previous model), so the parts drop most of them.
CASCADE_MIN_ROWS = 20_000
CASCADE_MAX_SV_SHARE = 0.3


def solve_rows(X, t: np.ndarray, box: np.ndarray | None, params: SolverParams,
               n_threads: int, scanned: bool = False) -> BinarySolution:
    """One exact solve of rows (X, t), by the backend ``params.backend`` names.

    Every solve of the driver (working sets, cascade parts, direct solves) comes here.
    'onedal' solves C-SVC and epsilon-SVR with oneDAL (``solvers.onedal_backend``; other
    problems, and a solve oneDAL refuses, go to LIBSVM); 'auto' does where
    ``prefer_onedal`` says oneDAL was measured faster; 'libsvm' (the default) always uses
    LIBSVM: libsvm-official, or with per-row boxes ``solvers.weighted``.

    Args:
        X: (n, d) float32 ndarray or CSR.
        t: (n,) targets (as ``solvers.libsvm_adapter.solve_libsvm``).
        box: per-row boxes (C x class weight x sample weight), or None when every row has
            its class's C.
        params: the problem and its backend.
        n_threads: cores of this solve.
        scanned: the caller scans every row of X right after (``exact.in_process``): a
            oneDAL solve leaves its optimality check and dual objective to that scan
            (``solve_onedal(scanned=True)``; ``finish_scanned``).

    Returns:
        BinarySolution (support ascending, into the rows of X; its dual objective None
        when oneDAL solved with ``scanned``).

    Raises:
        ParameterError: the kernel's values overflow float32 (``check_kernel_scale``).
    """
    check_kernel_scale(X, params.kernel)
    backend = params.backend
    if (backend == "onedal" and onedal_solves(params)) or \
            (backend == "auto" and prefer_onedal(X, params, box is not None)):
        sol = solve_onedal(X, t, params, box, n_threads, scanned)
        if sol is not None:
            return sol
    if box is None:
        return solve_libsvm(X, t, params, n_threads)
    return solve_weighted(X, t, params, box, n_threads)


@dataclass
class Solved:
    """A solve's result in the working set's terms.

    Attributes:
        support: positions (into the working set) of the support vectors, ascending.
        solution: the BinarySolution (its ``support`` indexes the solved rows).
        parts: sizes of the cascade's or the divide's parts (empty: a single solve).
        warm: the solve started from the previous alphas.
    """

    support: np.ndarray
    solution: BinarySolution
    parts: tuple = ()
    warm: bool = False


def total_threads(client) -> int:
    """Worker threads of the whole cluster."""
    return max(1, sum(int(w.get("nthreads", 1))
                      for w in client.scheduler_info().get("workers", {}).values()))


@dataclass(frozen=True)
class DirectStart:
    """Where a re-solve of all rows starts (``direct_start``).

    Attributes:
        rows: global rows of the last solve's support vectors, ascending.
        alphas: their alphas as ``kind.warm_alphas`` gives them.
        row_values: f - b of every row under the last model (``SupportModel.row_values``:
            the certifying scan's), or None: the warm SMO computes its starting gradient.
    """

    rows: np.ndarray
    alphas: np.ndarray
    row_values: np.ndarray | None = None


def solve_partitions(kind: ProblemKind, params: SolverParams, C: float, weighted: bool,
                     n_threads: int, *parts: Partition,
                     start: DirectStart | None = None,
                     scanned: bool = False) -> tuple:
    """One solve on every row of the problem in the given partitions (runs on a worker, or
    in the client's process: ``exact.in_process``).

    Args:
        kind: the problem kind (its rows, targets and boxes).
        params: LIBSVM parameters (``kind.solver_params`` already applied).
        C: the box before class and sample weights.
        weighted: rows carry sample weights (solve with per-row boxes).
        n_threads: cores of the solve.
        parts: the partitions, in row order.
        start: the last solve of these rows (``direct_start``): the solve starts from its
            alphas (``solvers.warm_smo.solve``), its gradient from the scan's values where
            given, instead of cold; None: a cold solve (``solve_rows``).
        scanned: the caller scans every row right after (``solve_rows``).

    Returns:
        (global rows, features, targets and weights of the support vectors, the
        BinarySolution).
    """
    sparse = sp.issparse(parts[0].X)
    # one partition (the client's process): its rows as they are, no copy
    X = parts[0].X if len(parts) == 1 else vstack_rows([p.X for p in parts], sparse)
    y = np.concatenate([p.y for p in parts])
    w = np.concatenate([p.weights() for p in parts])
    rows = np.concatenate([np.arange(p.offset, p.offset + p.n_rows) for p in parts])
    t, mask = kind.targets(y)
    if mask is not None:
        X, t, w, rows = X[mask], t[mask], w[mask], rows[mask]
    box = kind.row_box(C, t, w) if weighted else None
    if start is None or not warm_fits(X):
        sol = solve_rows(X, t, box, params, n_threads, scanned)
    else:
        from randsvm_dist.solvers.warm_smo.solve import solve_warm
        from randsvm_dist.solvers.weighted import solve_weighted_warm

        alpha0 = np.zeros(len(rows))
        alpha0[np.searchsorted(rows, start.rows)] = start.alphas
        sums = None
        if start.row_values is not None:  # G_bar's column: computed (NaN)
            sums = np.full((len(rows), 2), np.nan)
            sums[:, 0] = start.row_values[rows]
        sol = solve_warm(X, t, params, alpha0, n_threads, start_sums=sums) if box is None \
            else solve_weighted_warm(X, t, params, box, alpha0, n_threads, sums)
    s = sol.support
    return rows[s], X[s], t[s], w[s], sol


def direct_start(p: ProblemState, n_rows: int) -> DirectStart | None:
    """Where p's next solve of all rows starts: the alphas of its last solve when that
    solved all n_rows rows too (the certificate asked for a tighter tol) and its kind has
    a warm start, with every row's f - b from the scan that certified it where the model
    has them (``finish_scanned``: the starting gradient then costs the rows' kernel values
    against the alphas at their bound only, not against every support vector); else None
    (cold).

    Why: a tightened re-solve of every row is the last one's optimum made more exact.
    skin_nonskin's 40,053 weighted rows (oneDAL at tol 1e-3: relative gap 2e-2; the
    certificate then asks for tol ~1e-5): oneDAL's cold re-solve at 2e-5 took 2.7x its
    solve at 1e-3, the warm SMO from that solve's alphas 0.95x (one process, back to
    back, with other jobs running).
    """
    if not (p.kind.warm_startable and p.model.n_support and len(p.ws.rows) == n_rows):
        return None
    return DirectStart(p.model.rows, p.kind.warm_alphas(p.model.coef), p.model.row_values)


# A solve starts from the previous alphas (solvers.warm_smo.solve) when at most this share (times
# the kind's ``warm_fresh_scale``) of the working set is fresh rows: then most of the
# optimum is already there, and LIBSVM, which cannot take a starting point, would spend
# its time finding it again. The gradient needs
# the working set in memory once more (dense float64), so it is used up to WARM_MAX_BYTES
# of features. With LIBSVM's shrinking and an LRU cache in the warm solver it wins more the
# larger the working set (20% fresh rows: 2-2.6x at 10-20k rows, 3-8x at 40k, 13.7x at
# 100k ringnorm rows; benchmarks/bench_warm_solver.py), so there is no row cap.
WARM_MAX_FRESH_SHARE = 0.25
WARM_MAX_BYTES = 2 << 30


def warm_fits(X) -> bool:
    """The working set's features are small enough for a warm solve (WARM_MAX_BYTES)."""
    nbytes = X.data.nbytes if sp.issparse(X) else getattr(X, "nbytes", 0)
    return nbytes <= WARM_MAX_BYTES


def warm_start(p: ProblemState) -> np.ndarray | None:
    """The alphas a solve of p's working set starts from, or None for a cold solve (only
    warm-startable kinds, see ``kinds.ProblemKind``; ``solvers.warm_smo.solve``)."""
    ws = p.ws
    n = len(ws.rows)
    if (not p.kind.warm_startable or not p.model.n_support or len(ws.alpha0) != n
            or ws.n_fresh > WARM_MAX_FRESH_SHARE * p.kind.warm_fresh_scale * n
            or not warm_fits(ws.X)):
        return None
    return ws.alpha0


def with_results(problems: list[ProblemState], results: list, update) -> list[ProblemState]:
    """The problems with each active one replaced by ``update(problem, its result)``.

    Args:
        problems: every problem of the run; results: one per active problem, in order;
        update: (problem, result) -> the problem's new state.

    Returns:
        the problems, updated."""
    results = iter(results)
    return [update(p, next(results)) if p.active else p for p in problems]


def solve_direct(client, parts: PartitionSet, problems: list[ProblemState]
                 ) -> tuple[list[ProblemState], float]:
    """One solve of all of each active problem's rows, concatenated on the worker (warm
    from its last solve of all rows, ``direct_start``)."""
    active = [p for p in problems if p.active]
    t0 = time.perf_counter()
    places = place_solves(client, len(active))
    inputs = parts.all(client)
    starts = [direct_start(p, parts.n_rows) for p in active]
    futures = [client.submit(solve_partitions, p.kind,
                             p.kind.solver_params(p.solver, p.size, p.size), p.solver.C,
                             parts.weighted, q.threads, *inputs, start=start, pure=False,
                             retries=2, **q.submit_options())
               for p, q, start in zip(active, places, starts)]
    results = gather(client, futures, "the direct solves", [p.kind.label for p in active])
    return (directly_solved(problems, results, parts.n_rows, starts),
            time.perf_counter() - t0)


def directly_solved(problems: list[ProblemState], results: list, n_rows: int,
                    starts: list | None = None) -> list[ProblemState]:
    """The problems with each active one's state after its solve of all rows (``results``:
    ``solve_partitions``' answers, one per active problem, in order; ``starts``: the
    ``direct_start`` each was given, None: all cold)."""
    every_row = WorkingSet(np.arange(n_rows, dtype=np.int64))
    warm = iter(starts or [None] * len(results))

    def solved_state(p: ProblemState, result) -> ProblemState:
        rows, X, t, w, sol = result
        model = SupportModel(rows, X, t, w, sol.dual_coef, sol.intercept, sol.dual_objective)
        started = next(warm) is not None
        return replace(p, model=model, prev_n_support=p.model.n_support, warm=started,
                       cascade=(), ws=every_row, solve_plan="warm" if started else "whole",
                       solve_plan_reason="direct route: one solve of every row" + (
                           ", from the last one's alphas" if started else ""))

    return with_results(problems, results, solved_state)


def finish_scanned(p: ProblemState, f: np.ndarray, part: Partition, weighted: bool
                   ) -> tuple[ProblemState, str | None]:
    """A direct solve's model finished from the scan of every row that followed it.

    A solve with ``scanned`` (oneDAL's) leaves its dual objective None and its C-SVC point
    unchecked; the scan's decision values give both without another kernel pass: the dual
    objective from the support vectors' own values (``dual_objective_from_values``), the
    check (the one ``solve_onedal`` makes otherwise) from every row's margin. Every model
    of a warm-startable kind keeps the values (f - b, ``SupportModel.row_values``) for the
    start of a tightened re-solve (``direct_start``).

    Args:
        p: an active problem after ``directly_solved`` on ``part`` (its model's rows are
            the partition's rows).
        f: (part.n_rows,) the model's decision value of every row (exact on the problem's
            rows, as the scan computes them).
        part: the one partition of all rows (``exact.in_process``).
        weighted: rows carry sample weights (the solve's per-row boxes).

    Returns:
        (p with its model's dual objective and row values, None), or (p, the warning to
        give) when its C-SVC point misses the optimality conditions
        (``solvers.onedal_backend.missed_optimum``): the caller solves it again with LIBSVM. A
        model that has its dual objective keeps it.
    """
    m = p.model
    if p.kind.warm_startable:
        m = replace(m, row_values=np.asarray(f, dtype=np.float64) - m.intercept)
    if m.dual_objective is not None:
        return replace(p, model=m), None
    params = p.kind.solver_params(p.solver, p.size, p.size)
    if params.svm_type == C_SVC:
        t, mask = p.kind.targets(part.y)
        box = p.kind.row_box(p.solver.C, t, part.weights() if weighted else np.ones(len(t)))
        alpha = np.zeros(part.n_rows)
        alpha[m.rows] = np.abs(m.coef)
        kept = box > 0 if mask is None else mask & (box > 0)  # the solve's rows
        refusal = missed_optimum(margin_violation(f[kept], t[kept], alpha[kept], box[kept]),
                                 params.tol)
        if refusal is not None:
            return p, refusal
    dual = dual_objective_from_values(f[m.rows], m.coef, m.intercept, params.svm_type, m.t,
                                      params.epsilon)
    return replace(p, model=replace(m, dual_objective=dual)), None


def plan_cascade(n_rows: int, n_fresh: int, n_parts: int) -> int:
    """How many parts to cut a working set into (1: solve it whole).

    A cascade pays when each part still has CASCADE_MIN_ROWS rows and at most
    CASCADE_MAX_SV_SHARE of the working set are carried-over support vectors.
    """
    if n_parts < 2 or (n_rows - n_fresh) > CASCADE_MAX_SV_SHARE * n_rows:
        return 1
    return max(1, min(n_parts, n_rows // CASCADE_MIN_ROWS))


def solve_working_set(client, kind: ProblemKind, X, y: np.ndarray, box: np.ndarray | None,
                      rows: np.ndarray, params: SolverParams, n_threads: int, n_parts: int,
                      stream: int) -> Solved:
    """Solve one working set on the workers, whole or as a two-level cascade.

    Args:
        client: distributed.Client.
        kind: the problem kind (its slack decides the cascade's feedback).
        X, y, box, rows: the working set (features, targets, per-row boxes or None,
            global rows).
        params: LIBSVM parameters.
        n_threads: cores offered to the solve: the final solve gets them on the host
            this runs on (``placement_of_solves.place_here``), the parts share them,
            spread over the hosts.
        n_parts: cascade parts (1: a single solve).
        stream: random stream that assigns rows to parts (by their keys).

    Returns:
        Solved.
    """
    if n_parts <= 1 or not kind.cascadable:
        sol, = gather(client, [client.submit(solve_rows, X, y, box, params, n_threads,
                                             pure=False, retries=2)], "the working-set solve")
        return Solved(sol.support, sol)
    keys = keys_of(stream, rows)
    part_of = np.minimum((keys * n_parts).astype(np.int64), n_parts - 1)
    members = [np.flatnonzero(part_of == q) for q in range(n_parts)]
    # the parts spread over the hosts, sharing the solve's threads
    futures = [client.submit(solve_rows, X[m], y[m], None if box is None else box[m],
                             params, min(q.threads, max(1, n_threads // n_parts)),
                             pure=False, retries=2, **q.submit_options())
               for m, q in zip(members, place_solves(client, n_parts)) if len(m)]
    kept = np.sort(np.concatenate([m[s.support] for m, s in
                                   zip([m for m in members if len(m)],
                                       gather(client, futures, "the cascade's part solves"))]))
    if not len(kept):  # every part one class: fall back to the whole set
        return solve_working_set(client, kind, X, y, box, rows, params, n_threads, 1, stream)
    here = place_here(client, n_threads)  # the final solve on the host it was offered
    while True:
        sol, = gather(client, [client.submit(solve_rows, X[kept], y[kept],
                                             None if box is None else box[kept], params,
                                             here.threads, pure=False, retries=2,
                                             **here.submit_options())],
                      "the cascade's final solve")
        # Graf et al.'s feedback: rows a part dropped that violate the united solution join
        # it, until none does, so the result is the optimum of the whole working set
        rest = np.setdiff1d(np.arange(len(y)), kept, assume_unique=True)
        f = decision_values(X[rest], X[kept[sol.support]], sol.dual_coef, sol.intercept,
                            params.kernel) if len(rest) and len(sol.support) else \
            np.full(len(rest), sol.intercept)
        late = rest[kind.slack(f, y[rest]) > params.tol]
        if not len(late):
            return Solved(kept[sol.support], sol, tuple(len(m) for m in members))
        kept = np.union1d(kept, late)

