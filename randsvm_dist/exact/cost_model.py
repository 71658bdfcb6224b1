"""A fit's time as a function of its workers W: solves, scans and the driver's overheads.

One RandSVM iteration is a solve of the working set (one task, on one host's cores), a
scan of every row (tasks on all W workers) and the driver's own work (drawing, fetching
rows, the model's delta). Per iteration, with m working-set rows, s support vectors after
the solve, s0 before it, f fresh rows, d features, e rows scanned in full and
q = d + KERNEL_ROW_TERMS terms per kernel value:

- cold solve: ``a x m x s x q`` seconds on one thread for LIBSVM and the weighted solver
  (the SMO's kernel columns: about one per support vector, each m long), ``a_o x m x s``
  for oneDAL (its kernel blocks are GEMMs: the features hardly count, measured);
- warm solve (``solvers.warm_smo.solve``): ``b_f x m x f x q + b_g x m x s0 x q`` (the SMO's
  steps are driven by the fresh rows; the starting gradient is m x s0 kernel values);
- with p threads a solve takes ``t1 x (k + q x (1 / p + sync x (p - 1)^2 / (m q))) /
  (k + q)``: k serial terms per kernel value (the SMO's selection and gradient loops), and
  parallel steps of m q terms whose threads wait for each other
  (``solvers.threads.best_threads``: the same rule picks the threads);
- scan: ``c x e x s x q x (1 + rho (W - 1)) / W`` (rho: what W processes lose to shared
  memory bandwidth and clocks) plus ``task x SCAN_TASKS_PER_THREAD x W`` (the scheduler
  and client handle tasks one at a time) plus ``scan0``;
- driver: ``o0 + o1 x m`` per iteration; ``setup`` per fit (placement, final assembly);
- a working set solved in P parts (``plan_seconds``): the parts cold and in parallel, one
  thread each (m / P rows, s / P support vectors), then a cascade's cold solve of the
  parts' s support vectors, its feedback check of the other rows (a scan of m - s rows)
  and one more cold solve of about s rows (one feedback round), or a divide's clustering
  (``divide_per_row x m``) and warm solve of all m rows from the parts' alphas, as if
  ``g x s`` rows were fresh.

``fit_coefficients`` fits a, a_o, b_f, b_g, c, task, scan0, o0, o1 and setup to recorded
histories (``history_`` of fits at 1 and 2 workers here) by non-negative least squares on
relative errors, and k and rho by a grid where the histories span two or more worker
counts; the thread-wait costs (``sync``) only from fits on more than 2 workers (the
16-core reference: ``benchmarks/cost_model_check.py --fit-reference``), else they stay the
solvers' own constants, which were fitted so.
``predict_fit`` replays one recorded history at another W (its per-iteration sizes
reused), ``choose_route`` compares one solve of all rows with sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from randsvm_dist.exact.scan.dispatch import SCAN_TASKS_PER_THREAD
from randsvm_dist.exact.solving import WARM_MAX_FRESH_SHARE
from randsvm_dist.solvers.libsvm_adapter import LIBSVM_SYNC_TERMS
from randsvm_dist.solvers.onedal_backend import ONEDAL_SYNC_TERMS
from randsvm_dist.solvers.threads import KERNEL_ROW_TERMS, best_threads

THREAD_POLICIES = ("chosen", "all")
# how a cold working set is solved (``plan_seconds``; ``exact.solve_plan`` chooses)
PLANS = ("whole", "cascade", "divide")
# grids of the two non-linear coefficients (fitted where the histories span two or more W)
SERIAL_GRID = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0)
RHO_GRID = tuple(np.round(np.linspace(0.0, 1.0, 21), 3))
# the thread waits are fitted only from fits on more workers than this
MIN_WORKERS_FOR_SYNC = 2
WARM_SYNC_GRID = (1_000.0, 2_000.0, 4_000.0, 8_000.0, 15_000.0, 30_000.0)
LIBSVM_SYNC_GRID = (0.0, 50.0, 100.0, 200.0, 400.0, 800.0)


@dataclass(frozen=True)
class Coefficients:
    """The model's coefficients (seconds unless named otherwise; q = d + 8 terms).

    Defaults: fitted (``fit_coefficients``, rounded) to the 16-core reference's fits with a
    warm numba cache (ringnorm 3e5 at 2, 4, 8, 16 workers, checkerboard 1e6 at 2 and 16,
    the 494k-row real set at 16), the thread waits by a grid over the same fits (LIBSVM's,
    which the fits hardly tell apart, as ``solvers.threads`` says): e.g.
    ringnorm's cold solve of 22.6k rows with 12.6k support vectors (8e9 terms) took
    15.4 s on 2 threads, its warm re-solve of 16.6k rows 2.3-2.6 s on 2-4 threads and
    12.6 s on 16; scans ran at ~1.3e-10 s per term on one core. The reference has no
    oneDAL solves. oneDAL evaluates kernel blocks by GEMM, and its solve time follows the
    m x s pairs, not the features: scikit-learn-intelex's solves of all rows on 2 cores
    took 0.7-2.9e-8 s a pair (median 1.7e-8) on ijcnn1, a9a, w8a, Fashion-MNIST 0/6 (784
    features), skin_nonskin and ringnorm 3e5 (``benchmarks/bench_ahead.py``), and
    ringnorm's cold working sets of 22.6k rows took 4.3 s on 2 threads; a_o is one
    thread's seconds a pair (1.7e-8 over the 2-thread factor ~0.55); fit it from local
    runs with ``solver='onedal'``. Those were scikit-learn-intelex's own fits of the
    float32 rows, which RandSVM's oneDAL solves at tol 1e-3 and C up to 32 now are
    (float32, no check or dual objective of their own on the in-process route:
    ``solvers.onedal_backend``), so a_o stands for them; a float64 solve (a tightened tol,
    a larger C) took 1.2-3x as long on the same sets (one process, other jobs running),
    which the term does not model.
    """

    cold_per_term: float = 4.1e-9       # a: cold solve, per m x s x q (one thread)
    onedal_per_pair: float = 3.1e-8     # a_o: cold solve with oneDAL, per m x s (one thread)
    warm_fresh_per_term: float = 1.7e-9  # b_f: warm solve, per m x f x q
    warm_start_per_term: float = 3.8e-10  # b_g: warm start's gradient, per m x s0 x q
    scan_per_term: float = 1.3e-10      # c: scan, per e x s x q (one core)
    scan_contention: float = 0.1        # rho
    task_seconds: float = 0.0           # per scan task (handled serially)
    scan_seconds: float = 0.24          # scan0: per scan
    iteration_seconds: float = 0.04     # o0
    iteration_per_row: float = 1.2e-6   # o1: per working-set row
    setup_seconds: float = 1.9          # per fit
    serial_terms: float = 5.0           # k: serial terms per kernel value
    libsvm_sync_terms: float = LIBSVM_SYNC_TERMS
    # the 16-core reference's warm re-solves (code whose steps were serial: 5x slower on
    # 16 threads than on 2) fit a wait of ~4,000 terms; today's warm solver splits each
    # step's scans over its threads and takes them by its own rule
    # (``warm_smo.WARM_SYNC_TERMS``); the model keeps the reference's wait
    warm_sync_terms: float = 4_000.0
    onedal_sync_terms: float = ONEDAL_SYNC_TERMS
    # a divide (``plan_seconds``), measured here on the cold working sets of ringnorm 50k
    # and checkerboard 100k (6-12k rows, 8-44% support vectors): the final warm solve did
    # the work of 0.34-0.57 s fresh rows (g), the clustering ~1e-5 s a row
    divide_changed_share: float = 0.5   # g: a divide's final solve, fresh rows over s
    divide_per_row: float = 1e-5        # the clustering, per working-set row


@dataclass(frozen=True)
class RecordedFit:
    """One fit as recorded: its workers, data shape and ``history_`` (one problem).

    Attributes:
        workers: single-threaded workers on one host (the threads a solve was offered).
        n_rows: rows of the problem (after duplicates were collapsed).
        n_features: d (stored features per row for CSR).
        iterations: the history's records, in order.
        fit_seconds: the fit's wall time (None: unknown).
        backend: 'libsvm' or 'onedal' (which cold solver's sync cost applies).
    """

    workers: int
    n_rows: int
    n_features: float
    iterations: tuple
    fit_seconds: float | None = None
    backend: str = "libsvm"


@dataclass(frozen=True)
class IterationSizes:
    """What one iteration's cost depends on (``sizes_of``)."""

    m: int               # working-set rows
    n_support: int       # support vectors after the solve
    prev_support: int    # before it
    n_fresh: int         # rows new to the working set
    warm: bool           # solved from the previous alphas
    rows_evaluated: int  # rows the scan evaluated in full
    solve_seconds: float
    scan_seconds: float
    other_seconds: float
    plan: str = "whole"  # a cold solve's plan ('cascade', 'divide': ``plan_seconds``)


def sizes_of(fit: RecordedFit) -> list[IterationSizes]:
    """Each iteration's sizes and its solve / scan / other seconds.

    Records without ``warm_start`` / ``n_fresh`` / ``rows_evaluated`` (the reference file's
    selected fields) get them inferred: fresh rows are the working set less the previous
    support vectors, a solve was warm when at most WARM_MAX_FRESH_SHARE were fresh, and
    the scan evaluated every row not screened out. ``other`` is the iteration's wall time
    (``seconds`` is since the run's start) less its solve and scan. ``plan`` is the
    record's ``solve_plan`` when it cut the working set ('whole' otherwise).
    """
    out, prev_sv, prev_t = [], 0, 0.0
    for rec in fit.iterations:
        m = int(rec["sample_size"])
        fresh = int(rec.get("n_fresh", max(m - prev_sv, 0) if prev_sv else m))
        warm = bool(rec.get("warm_start", prev_sv > 0 and rec.get("route") != "direct"
                            and fresh <= WARM_MAX_FRESH_SHARE * m))
        evaluated = int(rec.get("rows_evaluated",
                                max(fit.n_rows - m - int(rec.get("rows_screened", 0)), 0)))
        solve, scan = float(rec.get("solve_seconds", 0.0)), float(rec.get("scan_seconds", 0.0))
        t = float(rec.get("seconds", prev_t + solve + scan))
        plan = rec.get("solve_plan") if rec.get("solve_plan") in PLANS else "whole"
        out.append(IterationSizes(m, int(rec["n_support"]), prev_sv, fresh, warm, evaluated,
                                  solve, scan, max(t - prev_t - solve - scan, 0.0), plan))
        prev_sv, prev_t = int(rec["n_support"]), t
    return out


def solve_threads(it: IterationSizes, d: float, offered: int, coef: Coefficients,
                  backend: str = "libsvm", policy: str = "chosen") -> int:
    """Threads a solve uses: all ``offered`` (policy 'all', the code before the thread
    rule) or the solvers' rule (``best_threads`` for its rows, policy 'chosen')."""
    if policy == "all":
        return max(1, int(offered))
    return best_threads(it.m * (d + KERNEL_ROW_TERMS), offered, _sync(it, coef, backend))


def _sync(it: IterationSizes, coef: Coefficients, backend: str) -> float:
    if it.warm:
        return coef.warm_sync_terms
    return coef.onedal_sync_terms if backend == "onedal" else coef.libsvm_sync_terms


def thread_factor(m: int, d: float, threads: int, sync_terms: float,
                  serial_terms: float) -> float:
    """A solve's time on ``threads`` threads over its time on one."""
    q = d + KERNEL_ROW_TERMS
    w = max(m * q, 1.0)
    p = max(1, int(threads))
    return (serial_terms + q * (1 / p + sync_terms * (p - 1) ** 2 / w)) / (serial_terms + q)


def _solve_terms(it: IterationSizes, d: float, backend: str) -> np.ndarray:
    """One-thread solve terms for (a, a_o, b_f, b_g): m x s x q for LIBSVM's cold solve,
    m x s pairs for oneDAL's."""
    q = d + KERNEL_ROW_TERMS
    if it.warm:
        return np.array([0.0, 0.0, it.m * it.n_fresh * q, it.m * it.prev_support * q])
    if backend == "onedal":
        return np.array([0.0, float(it.m) * it.n_support, 0.0, 0.0])
    return np.array([it.m * it.n_support * q, 0.0, 0.0, 0.0])


def _scan_terms(it: IterationSizes, d: float, workers: int, rho: float) -> np.ndarray:
    """Scan terms for (c, task, scan0)."""
    W = max(1, int(workers))
    work = it.rows_evaluated * it.n_support * (d + KERNEL_ROW_TERMS)
    return np.array([work * (1 + rho * (W - 1)) / W, SCAN_TASKS_PER_THREAD * W, 1.0])


def predict_iterations(fit: RecordedFit, workers: int, coef: Coefficients,
                       policy: str = "chosen") -> list[dict]:
    """Each iteration of ``fit`` replayed at ``workers`` single-threaded workers on one
    host: {'solve', 'scan', 'other'} seconds and the solve's 'threads'."""
    if policy not in THREAD_POLICIES:
        raise ValueError(f"policy must be one of {THREAD_POLICIES}, got {policy!r}")
    out = []
    for it in sizes_of(fit):
        p = solve_threads(it, fit.n_features, workers, coef, fit.backend, policy)
        solve = _solve_seconds(it, fit, p, coef) if it.plan == "whole" else plan_seconds(
            it.m, it.n_support, fit.n_features, workers, workers, coef, fit.backend)[it.plan]
        out.append({"solve": solve, "threads": p,
                    "scan": _scan_seconds(it, fit.n_features, workers, coef),
                    "other": coef.iteration_seconds + coef.iteration_per_row * it.m})
    return out


def _solve_seconds(it: IterationSizes, fit: RecordedFit, threads: int,
                   coef: Coefficients) -> float:
    t1 = _solve_terms(it, fit.n_features, fit.backend) @ np.array(
        [coef.cold_per_term, coef.onedal_per_pair, coef.warm_fresh_per_term,
         coef.warm_start_per_term])
    return float(t1 * thread_factor(it.m, fit.n_features, threads,
                                    _sync(it, coef, fit.backend), coef.serial_terms))


def _scan_seconds(it: IterationSizes, d: float, workers: int, coef: Coefficients) -> float:
    return float(_scan_terms(it, d, workers, coef.scan_contention) @ np.array(
        [coef.scan_per_term, coef.task_seconds, coef.scan_seconds]))


def predict_fit(fit: RecordedFit, workers: int, coef: Coefficients,
                policy: str = "chosen") -> float:
    """Predicted seconds of the whole fit at ``workers`` workers (its iterations, as
    ``predict_iterations``, plus the fit's setup).

    Args:
        fit: a recorded fit (its sizes are reused; its seconds are not).
        workers: single-threaded workers on one host.
        coef: Coefficients.
        policy: 'chosen' (the solvers' thread rule) or 'all' (every solve on all W).

    Returns:
        seconds.
    """
    its = predict_iterations(fit, workers, coef, policy)
    return coef.setup_seconds + sum(i["solve"] + i["scan"] + i["other"] for i in its)


def _rows(fits: list[RecordedFit], serial: float, rho: float, coef: Coefficients):
    """Design rows (relative-error scaled) of the linear coefficients for all fits."""
    A, b = [], []
    for fit in fits:
        d, W = fit.n_features, fit.workers
        for it in sizes_of(fit):
            p = solve_threads(it, d, W, coef, fit.backend, "all")
            f = thread_factor(it.m, d, p, _sync(it, coef, fit.backend), serial)
            row = np.zeros(len(LINEAR))
            row[0:4] = _solve_terms(it, d, fit.backend) * f
            if it.plan == "whole":  # a cut plan's solve is not one solve's terms
                A.append(row), b.append(it.solve_seconds)
            row = np.zeros(len(LINEAR))
            row[4:7] = _scan_terms(it, d, W, rho)
            A.append(row), b.append(it.scan_seconds)
            row = np.zeros(len(LINEAR))
            row[7:9] = (1.0, it.m)
            A.append(row), b.append(it.other_seconds)
        if fit.fit_seconds is not None and fit.iterations:
            row = np.zeros(len(LINEAR))
            row[9] = 1.0
            A.append(row), b.append(max(fit.fit_seconds - float(
                fit.iterations[-1].get("seconds", 0.0)), 0.0))
    A, b = np.array(A), np.array(b)
    scale = 1.0 / np.maximum(b, 0.05)  # relative errors; tiny times weigh as 0.05 s
    return A * scale[:, None], b * scale


LINEAR = ("cold_per_term", "onedal_per_pair", "warm_fresh_per_term", "warm_start_per_term",
          "scan_per_term", "task_seconds", "scan_seconds", "iteration_seconds", "iteration_per_row",
          "setup_seconds")


def fit_coefficients(fits: list[RecordedFit], base: Coefficients | None = None
                     ) -> Coefficients:
    """Coefficients fitted to recorded fits (each solve with all W threads, as recorded).

    The linear coefficients by non-negative least squares on relative errors; a
    coefficient no record informs (e.g. no warm solve) keeps ``base``'s value. k (serial
    terms) and rho by grid search when the fits span two or more worker counts, else
    ``base``'s; the thread waits (LIBSVM's and the warm SMO's sync terms) by a grid too
    when some fit ran on more than MIN_WORKERS_FOR_SYNC workers (at 1 and 2 they barely
    show).

    Args:
        fits: RecordedFit values (1- and 2-worker runs here; the 16-core reference).
        base: starting values (default: ``Coefficients()``).

    Returns:
        Coefficients.

    Raises:
        ValueError: no iterations to fit.
    """
    base = base or Coefficients()
    if not any(f.iterations for f in fits):
        raise ValueError("fit_coefficients needs at least one fit with iterations")
    spans = len({f.workers for f in fits}) > 1
    serials = SERIAL_GRID if spans else (base.serial_terms,)
    rhos = RHO_GRID if spans else (base.scan_contention,)
    res, coef = _best_linear(fits, base, serials, rhos)
    if max(f.workers for f in fits) > MIN_WORKERS_FOR_SYNC:
        for warm in WARM_SYNC_GRID:
            for libsvm in LIBSVM_SYNC_GRID:
                trial = replace(coef, warm_sync_terms=warm, libsvm_sync_terms=libsvm)
                got = _best_linear(fits, trial, (coef.serial_terms,),
                                   (coef.scan_contention,))
                if got[0] < res:
                    res, best = got[0], trial
        if res < _best_linear(fits, coef, (coef.serial_terms,), (coef.scan_contention,))[0]:
            res, coef = _best_linear(fits, best, serials, rhos)
    return coef


def _best_linear(fits: list[RecordedFit], base: Coefficients, serials, rhos
                 ) -> tuple[float, Coefficients]:
    """(residual, coefficients) of the best NNLS fit over the grids of k and rho."""
    from scipy.optimize import nnls

    best = None
    for serial in serials:
        for rho in rhos:
            A, b = _rows(fits, serial, rho, base)
            x, res = nnls(A, b)
            if best is None or res < best[0]:
                best = (res, serial, rho, x, A)
    res, serial, rho, x, A = best
    informed = np.abs(A).sum(axis=0) > 0
    values = {name: (float(v) if informed[k] else getattr(base, name))
              for k, (name, v) in enumerate(zip(LINEAR, x))}
    return float(res), replace(base, serial_terms=float(serial), scan_contention=float(rho),
                               **values)


def coefficients_dict(coef: Coefficients) -> dict:
    """Coefficients as a plain dict (for JSON)."""
    return {f.name: getattr(coef, f.name) for f in fields(coef)}


def choose_route(n_rows: int, sample_size: int, n_features: float, workers: int,
                 threads: int, sv_share: float, coef: Coefficients,
                 backend: str = "libsvm", iterations: int = 3, warm: bool = True,
                 in_memory: bool = False) -> tuple[str, str]:
    """'direct' (one cold solve of all rows) or 'sample', whichever the model predicts
    faster, and why.

    Direct: the cold solve of all rows and its certifying scan. Sampling: a cold solve of
    ``sample_size`` rows, ``iterations`` rounds of a full scan and a re-solve of the
    support vectors plus WARM_MAX_FRESH_SHARE fresh rows (warm if the kind has a warm
    start), and for rows in the client's memory the cluster route's ``setup_seconds``
    (the direct route solves them there). Support vectors: ``sv_share`` of rows solved.

    Args:
        n_rows, sample_size, n_features: the data and the first sample.
        workers: scan workers; threads: cores a solve is offered.
        sv_share: support vectors over rows solved, in (0, 1].
        coef: Coefficients; backend: the cold solver ('libsvm' or 'onedal').
        iterations: rounds after the first solve.
        warm: the re-solves start from the previous alphas (``solvers.warm_smo.solve``).
        in_memory: the rows are in the client's memory (arrays passed to ``fit``).

    Returns:
        (route, reason).
    """
    s = max(1, int(sv_share * n_rows))
    shape = RecordedFit(workers, n_rows, n_features, (), backend=backend)

    def solve(it: IterationSizes) -> float:
        p = solve_threads(it, n_features, threads, coef, backend, "chosen")
        return _solve_seconds(it, shape, p, coef)

    every_row = IterationSizes(n_rows, s, 0, n_rows, False, n_rows, 0, 0, 0)
    t_direct = solve(every_row) + _scan_seconds(every_row, n_features, workers, coef)
    fresh = int(WARM_MAX_FRESH_SHARE * s)
    rounds = [IterationSizes(sample_size, max(1, int(sv_share * sample_size)), 0,
                             sample_size, False, n_rows, 0, 0, 0)] + \
        [IterationSizes(s + fresh, s, s if warm else 0, fresh if warm else s + fresh, warm,
                        n_rows, 0, 0, 0)] * iterations
    t_sample = sum(solve(it) + _scan_seconds(it, n_features, workers, coef)
                   + coef.iteration_seconds + coef.iteration_per_row * it.m for it in rounds)
    if in_memory:
        t_sample += coef.setup_seconds
    route = "direct" if t_direct <= t_sample else "sample"
    return route, (f"cost model: one solve of {n_rows} rows {t_direct:.1f} s vs sampling "
                   f"{t_sample:.1f} s ({workers} workers, {threads} threads a solve, "
                   f"{100 * sv_share:.0f}% support vectors)")


def plan_seconds(m: int, n_support: int, n_features: float, parts: int, threads: int,
                 coef: Coefficients, backend: str = "libsvm") -> dict[str, float]:
    """Predicted seconds of one cold working-set solve by each plan of ``PLANS``.

    'whole': one solve on the offered threads; 'cascade' and 'divide': ``parts`` parts
    solved at once on one thread each, then the final solve (see the module docstring).

    Args:
        m: working-set rows; n_support: the support vectors expected.
        n_features: d; parts: P (>= 2 for the cut plans to mean anything).
        threads: cores offered to the final (and the whole) solve.
        coef: Coefficients; backend: the cold solver ('libsvm' or 'onedal').

    Returns:
        {plan: seconds}.
    """
    shape = RecordedFit(1, m, n_features, (), backend=backend)
    s, P = max(1, int(n_support)), max(1, int(parts))

    def solve(it: IterationSizes, offered: int) -> float:
        p = solve_threads(it, n_features, offered, coef, backend, "chosen")
        return _solve_seconds(it, shape, p, coef)

    part = solve(IterationSizes(-(-m // P), -(-s // P), 0, -(-m // P), False, 0, 0, 0, 0), 1)
    changed = max(1, int(coef.divide_changed_share * s))
    final = solve(IterationSizes(m, s, s, changed, True, 0, 0, 0, 0), threads)
    united = solve(IterationSizes(s, s, 0, s, False, 0, 0, 0, 0), threads)
    feedback = coef.scan_per_term * (m - min(s, m)) * s * (n_features + KERNEL_ROW_TERMS)
    return {"whole": solve(IterationSizes(m, s, 0, m, False, 0, 0, 0, 0), threads),
            "cascade": part + 2 * united + feedback,
            "divide": coef.divide_per_row * m + part + final}
