"""One solve of all rows in the client's process, certified there.

The route for data in the client's memory (arrays passed to ``fit``, never a Parquet data
set or a Dask collection) when the cost model says one solve of all rows beats sampling
(``exact.route.plan_route`` with the machine's cores): no cluster is started and nothing
makes a Dask round trip. The arrays are checked and built into one partition here by the
rules the workers use (``engine.partition_build``: duplicates collapsed when that pays,
the layout by density; float32 rows, which every backend takes as they are), solved with
every core of the machine (``exact.solving.solve_partitions``), and scanned here for the
certificate over all rows (``exact.scan.scan_partition``). The loop's certify-and-decide
step and its records are the driver's (``exact.driver.decide_step``): a tightened solver
tolerance solves all rows again from the last solve's alphas
(``exact.solving.direct_start``), as on the workers, so the model and its certificate are
those of the distributed direct route.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from randsvm_dist.engine.duplicates import collapse_pays
from randsvm_dist.engine.inputs import checked_arrays, partition_moments
from randsvm_dist.engine.layout import preferred_layout
from randsvm_dist.engine.partition_build import finish, load_rows, survey
from randsvm_dist.engine.partitions import Partition, make_array_partition
from randsvm_dist.exact.cancellation import check
from randsvm_dist.exact.driver import Loop, ScanStep, SolveStep, decide_step, scan_requests
from randsvm_dist.exact.route import Machine
from randsvm_dist.exact.scan import scan_partition
from randsvm_dist.exact.scan_dispatch import ScanResult, scan_model
from randsvm_dist.exact.solving import direct_start, directly_solved, solve_partitions
from randsvm_dist.exact.state import ProblemState, RunConfig
from randsvm_dist.numerics.kernels import moments_variance
from randsvm_dist.solvers.libsvm_adapter import host_cores


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


def in_memory_rows(X, y, task: str, sample_weight=None, collapse: bool = False
                   ) -> InMemoryRows:
    """The arrays checked and built as the workers build a partition of them.

    Args:
        X: (n, d) array-like or sparse matrix.
        y: labels (classification), targets (regression) or None (one-class).
        task: 'classification', 'regression' or 'one_class'.
        sample_weight: per-row weights or None.
        collapse: collapse identical rows into weighted ones when
            ``engine.duplicates.collapse_pays``.

    Returns:
        InMemoryRows.

    Raises:
        SchemaError: bad X, labels, targets or weights (as ``engine.inputs``).
    """
    t0 = time.perf_counter()
    X, y, coding, weight = checked_arrays(X, y, task, sample_weight)
    t1 = time.perf_counter()
    loaded = load_rows(make_array_partition(X, y, 0, coding, weight), collapse)
    n, n_unique, nnz, nnz_unique = survey(loaded)
    do_collapse = collapse and collapse_pays(n, n_unique, weight is not None)
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
    while True:
        loop.it += 1
        check(cancelled, f"the solves of iteration {loop.it}")
        problems, solve = _solve_all(rows, problems, where.threads)
        check(cancelled, f"the scan of iteration {loop.it}")
        scan = _scan_all(rows, problems, cfg, loop)
        problems, _ = decide_step((rows.n_collapsed, 0), problems, cfg, loop, solve, scan, progress)
        if not any(p.active for p in problems):
            return problems, loop.history


def _solve_all(rows: InMemoryRows, problems: list[ProblemState], threads: int
               ) -> tuple[list[ProblemState], SolveStep]:
    """One solve of all rows of every active problem, one after the other, each on
    ``threads`` cores."""
    tols = [p.solver.tol for p in problems]
    t0 = time.perf_counter()
    active = [p for p in problems if p.active]
    starts = [direct_start(p, rows.n_rows) for p in active]
    results = [solve_partitions(p.kind, p.kind.solver_params(p.solver, p.size, p.size),
                                p.solver.C, rows.weighted, threads, rows.part, start=start)
               for p, start in zip(active, starts)]
    problems = directly_solved(problems, results, rows.n_rows, starts)
    return problems, SolveStep(tols, time.perf_counter() - t0, threads)


def _scan_all(rows: InMemoryRows, problems: list[ProblemState], cfg: RunConfig,
              loop: Loop) -> ScanStep:
    """The certificate's scan of every row against the problems' models (every row
    evaluated: one scan per solve leaves nothing to screen)."""
    t0 = time.perf_counter()
    model = scan_model(problems, problems[0].solver.kernel, rows.is_sparse, rows.n_features)
    requests = scan_requests(problems, cfg, loop, rows.n_rows)
    out = scan_partition(rows.part, model, requests)
    result = ScanResult([out.problems], [None], out.n_evaluated, out.seconds,
                        out.n_screened, out.kernel_evals, out.cpu_seconds)
    return ScanStep(requests, result, time.perf_counter() - t0,
                    out.n_evaluated * model.coef.shape[0])
