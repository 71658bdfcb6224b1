"""One solve of all rows in the client's process, certified there.

The route for data in the client's memory (arrays passed to ``fit``, never a Parquet data
set or a Dask collection) when the cost model says one solve of all rows beats sampling
(``exact.route.plan_route`` with the machine's cores): no cluster is started and nothing
makes a Dask round trip. The arrays are checked and built into one partition here by the
rules the workers use (``engine.partition_build``: duplicates collapsed when that pays, the
layout by density; float32 rows, which every backend takes as they are), solved with every
core of the machine (``exact.solving.solve_partitions``; several problems, as the pairs of
one-vs-one, one per core at a time unless oneDAL solves them cold; every pair of
one-vs-one by one oneDAL fit of all classes when that is the solve each would get alone),
and scanned here, on
every core too, for the certificate over all rows (``exact.scan.partition.scan_partition``: each row
against the models of the active problems it belongs to). The loop's certify-and-decide
step and its records are the driver's (``exact.driver.decide_step``): a tightened solver
tolerance solves the problems that missed it again from the last solve's alphas
(``exact.solving.direct_start``), as on the workers, so the model and its certificate are
those of the distributed direct route.

The scan evaluates every row, so a oneDAL solve here runs no pass over decision values of
its own: its optimality check and its dual objective come from the scan's values
(``solving.finish_scanned``), and a point that misses the optimality conditions is solved
again by LIBSVM and scanned again before the certificate (as a working-set solve falls
back). oneDAL takes the float32 rows as they are when C is small and tol not below
``solvers.onedal_backend.FLOAT32_MIN_TOL``. When oneDAL solves several problems (the
pairs of one-vs-one), their first solve stops at a tol aimed at the certificate
(``exact.certificate.opening_tol``), so that no pair needs a re-solve and a second scan.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.duplicates import collapse_pays
from randsvm_dist.engine.fit_input import FitInput
from randsvm_dist.engine.partition_build import finish, load_rows, preferred_layout, survey
from randsvm_dist.engine.partitions import Partition, make_array_partition
from randsvm_dist.engine.row_totals import partition_moments
from randsvm_dist.exact.cancellation import check
from randsvm_dist.exact.certificate import opening_tol
from randsvm_dist.exact.driver import Loop, ScanStep, SolveStep, decide_step, scan_requests
from randsvm_dist.exact.route import Machine, RoutePilot, backend_of, cold_backend, pilot_of
from randsvm_dist.exact.sampling import keys_of, smallest_keys, stream_id
from randsvm_dist.exact.scan.dispatch import ScanResult, scan_model
from randsvm_dist.exact.scan.partition import scan_partition
from randsvm_dist.exact.solving import (
    direct_start,
    directly_solved,
    finish_scanned,
    solve_partitions,
    solve_rows,
)
from randsvm_dist.exact.state import ProblemState, RunConfig, SupportModel, WorkingSet
from randsvm_dist.numerics.kernels import Kernel, moments_variance
from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, ONE_CLASS, SolverParams
from randsvm_dist.solvers.threads import host_cores

TASK_SVM_TYPES = {"classification": C_SVC, "regression": EPSILON_SVR, "one_class": ONE_CLASS}


@dataclass
class InMemoryRows:
    """The user's arrays as one partition in the client's process.

    Attributes:
        part: the Partition (rows numbered from 0; collapsed when ``n_collapsed``).
        classes: the sorted classes (classification) or None.
        weighted: rows carry weights (sample weights, or copies of collapsed rows).
        n_collapsed: duplicate rows merged into weighted rows.
        phases: seconds of 'placement' (checks, layout) and 'duplicates' (finding them).
    """

    part: Partition
    classes: np.ndarray | None
    weighted: bool
    n_collapsed: int
    phases: dict = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return self.part.n_rows

    @property
    def n_features(self) -> int:
        return int(self.part.X.shape[1])

    @property
    def is_sparse(self) -> bool:
        return not isinstance(self.part.X, np.ndarray)

    def class_counts(self, n_classes: int) -> np.ndarray:
        """Rows of each class in the user's data (collapsed copies counted)."""
        return np.bincount(self.part.y, weights=self.part.counts(),
                           minlength=n_classes).astype(np.int64)

    def positive_class_counts(self, n_classes: int) -> np.ndarray | None:
        """Rows of positive weight of each class; None when no row carries a weight."""
        if not self.weighted:
            return None
        return np.bincount(self.part.y[self.part.weights() > 0],
                           minlength=n_classes).astype(np.int64)

    def weight_total(self) -> float:
        """The sum of the positive sample weights."""
        return float(np.maximum(self.part.weights(), 0.0).sum())

    def feature_variance(self) -> float:
        """Variance of all feature values of the user's rows (for gamma='scale')."""
        return moments_variance([partition_moments(self.part)])

    def original_rows(self, rows: np.ndarray) -> np.ndarray:
        """The user's row indices of rows of the partition."""
        return self.part.original_rows(np.asarray(rows, np.int64))


def in_memory_rows(inputs: FitInput, task: str, collapse: bool = False,
                   solver: str = "libsvm", kernel: str = "rbf") -> InMemoryRows:
    """The checked arrays built into one partition as the workers build a partition.

    Args:
        inputs: the fit's arrays, checked (``engine.fit_input.prepare_fit_input``).
        task: 'classification', 'regression' or 'one_class'.
        collapse: collapse identical rows into weighted ones when
            ``engine.duplicates.collapse_pays`` (its oneDAL share when the estimator's
            ``solver`` and ``kernel`` have oneDAL solve these rows weighted or not,
            ``exact.route.backend_of``).
        solver: the estimator's solver ('libsvm', 'onedal' or 'auto').
        kernel: the estimator's kernel name.

    Returns:
        InMemoryRows.
    """
    t0 = time.perf_counter()
    X, y, coding, weight = inputs.X, inputs.y, inputs.coding, inputs.sample_weight
    t1 = time.perf_counter()
    loaded = load_rows(make_array_partition(X, y, 0, coding, weight), collapse)
    n, n_unique, nnz, nnz_unique = survey(loaded)
    params = SolverParams(kernel=Kernel(kernel), svm_type=TASK_SVM_TYPES[task], backend=solver)
    onedal = backend_of(params, False, sp.issparse(X), X.shape[1]) == "onedal"
    do_collapse = collapse and collapse_pays(n, n_unique, weight is not None, onedal)
    t2 = time.perf_counter()
    layout = preferred_layout(nnz_unique if do_collapse else nnz,
                              n_unique if do_collapse else n, X.shape[1])
    part = finish(loaded, 0, do_collapse, layout)
    phases = {"placement": (t1 - t0) + (time.perf_counter() - t2), "duplicates": t2 - t1}
    return InMemoryRows(part, coding.classes, weight is not None or do_collapse,
                        n - n_unique if do_collapse else 0, phases)


def machine() -> Machine:
    """The client's process as the cost model sees it: every core scans and solves."""
    cores = host_cores()
    return Machine(cores, cores)


def run_in_process(rows: InMemoryRows, problems: list[ProblemState], cfg: RunConfig,
                   why: str, progress: Callable[[dict], None] | None = None,
                   cancelled: Callable[[], bool] | None = None
                   ) -> tuple[list[ProblemState], list[dict]]:
    """Solve all rows of every problem here and certify them, until each stops.

    Args:
        rows: the data (``in_memory_rows``).
        problems: the problems' initial states.
        cfg: RunConfig (its sample size only names the records' r).
        why: the route's reason (``exact.route.plan_route``), recorded.
        progress: optional callable(record) per iteration and problem.
        cancelled: optional check asked before every solve and scan.

    Returns:
        (the problems' final states, the history as ``exact.driver.run_randsvm``'s).

    Raises:
        FitCancelled: ``cancelled`` returned True.
    """
    where = machine()
    loop = Loop(cfg.sample_size, "direct", why, time.perf_counter(), machine=where,
                solved_in="client")
    problems = [replace(p, margin_tol=cfg.margin_tol) for p in problems]
    if len(problems) > 1 and cold_backend(problems, rows.weighted, rows.is_sparse,
                                          rows.n_features) == "onedal":
        problems = [opening_tol(p, cfg.gap_tol) for p in problems]
    while True:
        loop.it += 1
        check(cancelled, f"the solves of iteration {loop.it}")
        solved, solve = _solve_all(rows, problems, where.threads)
        check(cancelled, f"the scan of iteration {loop.it}")
        scan, values = _scan_all(rows, solved, cfg, loop)
        solved, missed = _finished(rows, solved, values)
        if missed:  # oneDAL points off the optimum (rare): LIBSVM solves them, a new scan
            solved, again = _solve_all(rows, problems, where.threads, missed, solved)
            solve = replace(solve, seconds=solve.seconds + again.seconds)
            rescan, _ = _scan_all(rows, solved, cfg, loop)
            scan = replace(rescan, seconds=scan.seconds + rescan.seconds,
                           kernel_evals=scan.kernel_evals + rescan.kernel_evals)
        problems, _ = decide_step((rows.n_collapsed, 0), solved, cfg, loop, solve, scan,
                                  progress)
        if not any(p.active for p in problems):
            return problems, loop.history


def _solve_all(rows: InMemoryRows, problems: list[ProblemState], threads: int,
               redo: list[int] | None = None, solved: list[ProblemState] | None = None
               ) -> tuple[list[ProblemState], SolveStep]:
    """One solve of all rows of every active problem: ``concurrent_solves`` at a time,
    each on its share of the ``threads`` cores (largest first; the results in the
    problems' order, each the bytes of its solve alone with that share), or one at a time
    on every core when oneDAL solves them cold (measured: 6 Fashion-MNIST pairs side by
    side on one thread each took 10.8 s, one at a time on two 5.7 s), and every pair of
    one-vs-one by one oneDAL fit of all classes when that is the same solve
    (``_pairs_at_once``), oneDAL's checks
    and dual objectives left to the scan that follows (``solving.finish_scanned``), each
    from its last solve's alphas when it solved every row before (``solving.direct_start``);
    with ``redo``, only the problems at those indices, cold by LIBSVM, into ``solved`` (the
    states after the first solve)."""
    from threadpoolctl import threadpool_limits

    tols = [p.solver.tol for p in problems]
    t0 = time.perf_counter()
    todo = [j for j, p in enumerate(problems) if p.active and (redo is None or j in redo)]
    starts = {j: direct_start(problems[j], rows.n_rows) if redo is None else None
              for j in todo}
    cold_onedal = redo is None and any(starts[j] is None for j in todo) and cold_backend(
        problems, rows.weighted, rows.is_sparse, rows.n_features) == "onedal"
    at_once = 1 if cold_onedal else concurrent_solves(len(todo), threads)
    share = max(1, threads // at_once)

    def solve(j: int):
        p = problems[j]
        solver = p.solver if redo is None else replace(p.solver, backend="libsvm")
        return solve_partitions(p.kind, p.kind.solver_params(solver, p.size, p.size),
                                p.solver.C, rows.weighted, share, rows.part,
                                start=starts[j], scanned=True)

    results = None
    if cold_onedal and all(starts[j] is None for j in todo):
        results = _pairs_at_once(rows, problems, todo, threads)
    if results is None and at_once == 1:
        results = [solve(j) for j in todo]
    elif results is None:
        order = sorted(todo, key=lambda j: -problems[j].size)
        # the solves set BLAS's count (process-wide, unlike OpenMP's) and put it back
        # concurrently, so one may put back another's: the batch's limit restores the
        # caller's count once they are all done
        with threadpool_limits(share, user_api="blas"), ThreadPoolExecutor(at_once) as pool:
            done = dict(zip(order, pool.map(solve, order)))
        results = [done[j] for j in todo]
    out = list(problems if solved is None else solved)
    for j, p in zip(todo, directly_solved([problems[j] for j in todo], results, rows.n_rows,
                                          [starts[j] for j in todo])):
        out[j] = p
    return out, SolveStep(tols, time.perf_counter() - t0, share)


def _pairs_at_once(rows: InMemoryRows, problems: list[ProblemState], todo: list[int],
                   threads: int) -> list[tuple] | None:
    """The cold solves of every one-vs-one pair by one oneDAL fit of all classes
    (``solvers.onedal_backend.solve_onedal_pairs``), as ``solve_partitions`` answers them,
    when that is the solve each pair would get alone: three or more classes, every problem
    a pair in LIBSVM's order and all of them to be solved, no class or sample weights, one
    solver setting, and oneDAL the backend of every pair's rows; else (or when oneDAL
    refuses the fit) None: the pairs are solved one by one."""
    from randsvm_dist.exact.kinds import CSVC
    from randsvm_dist.exceptions import ParameterError
    from randsvm_dist.numerics.multiclass import n_classes_of, ovo_pairs
    from randsvm_dist.solvers.onedal_auto import onedal_pays
    from randsvm_dist.solvers.onedal_backend import solve_onedal_pairs

    if rows.weighted or len(todo) != len(problems) or len(problems) < 3 or \
            not all(isinstance(p.kind, CSVC) for p in problems):
        return None
    try:
        pairs = ovo_pairs(n_classes_of(len(problems)))
    except ParameterError:  # not k(k-1)/2 problems: not one-vs-one
        return None
    if [(p.kind.positive, p.kind.negative) for p in problems] != pairs:
        return None
    params = [p.kind.solver_params(p.solver, p.size, p.size) for p in problems]
    if any(q != params[0] for q in params) or params[0].weight_pos != 1.0 or \
            params[0].weight_neg != 1.0:
        return None
    X, codes = rows.part.X, rows.part.y
    per_row = np.diff(X.indptr) if sp.issparse(X) else None
    counts = np.bincount(codes, minlength=len(pairs))
    for i, j in pairs:
        nnz = None if per_row is None else int(per_row[(codes == i) | (codes == j)].sum())
        if params[0].backend != "onedal" and not onedal_pays(
                int(counts[i] + counts[j]), X.shape[1], nnz, params[0]):
            return None
    solutions = solve_onedal_pairs(X, codes, pairs[-1][1] + 1, params[0], threads)
    if solutions is None:
        return None
    weights = rows.part.weights()
    out = []
    for p, sol in zip(problems, solutions):
        t, mask = p.kind.targets(codes)
        sv = np.flatnonzero(mask)[sol.support]
        out.append((sv, X[sv], t[sv], weights[sv], sol))
    return out


def concurrent_solves(n_problems: int, threads: int) -> int:
    """How many problems' solves run at once on ``threads`` cores: one per core, each on
    one core, while there are more problems than one (a solve of a few thousand rows
    keeps one core busy, where a solve on several waits at every step for the slowest;
    LIBSVM's and the warm SMO's models do not depend on their threads, so problems solved
    one at a time on every core give the same models)."""
    return max(1, min(n_problems, threads))


def _finished(rows: InMemoryRows, problems: list[ProblemState], values: np.ndarray
              ) -> tuple[list[ProblemState], list[int]]:
    """The active problems' models finished from the scan's decision values ``values``
    (n_rows, n_problems) (``solving.finish_scanned``), and the indices of those whose
    oneDAL point missed the optimum (each with a warning)."""
    out, missed = list(problems), []
    for j, p in enumerate(problems):
        if p.active:
            out[j], refusal = finish_scanned(p, values[:, j], rows.part, rows.weighted)
            if refusal is not None:
                warnings.warn(refusal, RuntimeWarning, stacklevel=3)
                missed.append(j)
    return out, missed


def _scan_all(rows: InMemoryRows, problems: list[ProblemState], cfg: RunConfig,
              loop: Loop) -> tuple[ScanStep, np.ndarray]:
    """The certificate's scan of every row of the active problems against their models,
    on every core of the machine (every row evaluated: one scan per solve leaves nothing
    to screen; each row against the support vectors of the active problems it belongs
    to only, see ``exact.scan.partition``), and every row's decision value under each problem's
    model, (n_rows, n_problems) float32 (0 for rows outside a problem)."""
    t0, c0 = time.perf_counter(), time.process_time()
    threads = loop.machine.threads
    model = scan_model(problems, problems[0].solver.kernel, rows.is_sparse, rows.n_features)
    requests = scan_requests(problems, cfg, loop, rows.n_rows)
    out = scan_partition(rows.part, model, requests, threads=threads)
    seconds = time.perf_counter() - t0
    # the scan held every thread for its time (its CPU time is the process's: the pool's
    # threads included)
    result = ScanResult([out.problems], {}, out.n_evaluated, out.seconds * threads,
                        out.n_screened, out.kernel_evals, time.process_time() - c0, seconds,
                        threads, full_evals=out.full_evals)
    return ScanStep(requests, result, seconds, out.full_evals), out.bounds[0]


# The stream of the route pilot's sample (``route_pilot``).
ROUTE_PILOT_STREAM = 0x7017


def route_pilot(rows: InMemoryRows, problems: list[ProblemState], r: int, random_state: int,
                backend: str) -> RoutePilot:
    """Solve a uniform sample of ``r`` rows of the largest problem here (seeded by
    ``random_state``) and measure its share of support vectors (``route.first_route``'s
    check of a guess of one solve, for rows in this process).

    Returns:
        RoutePilot (the share decides the route; the seconds are reported).
    """
    p = max(problems, key=lambda q: q.n_rows)
    part = rows.part
    t, mask = p.kind.targets(part.y)
    mine = np.flatnonzero(mask) if mask is not None else np.arange(part.n_rows)
    keys = keys_of(stream_id(random_state, ROUTE_PILOT_STREAM), mine.astype(np.int64))
    pick = np.sort(mine[smallest_keys(keys, min(r, len(mine)))])
    start = time.perf_counter()
    sol = solve_rows(part.X[pick], t[pick], None,
                     p.kind.solver_params(p.solver, len(pick), p.n_rows), machine().threads)
    seconds = time.perf_counter() - start
    solved = replace(p, ws=WorkingSet(pick, part.X[pick], t[pick], np.ones(len(pick))),
                     model=SupportModel(rows=pick[sol.support]))
    return pilot_of([solved], seconds, rows.n_features, machine(), backend)
