"""LIBSVM's solver with a starting point, for C-SVC, epsilon-SVR and one-class (numba).

RandSVM re-solves working sets that are mostly the previous solution's support vectors
plus a few fresh rows. LIBSVM cannot take a starting point, so every re-solve finds the
previous optimum again from alpha = 0 (one-class: from its initial point). This solver is
LIBSVM's own algorithm (``svm.cpp``, ``Solver::Solve``) started from the previous alphas:

- the duals (``duals``): LIBSVM's three kinds as one problem, min 1/2 a'Qa + p'a
  over per-variable boxes with y'a fixed; epsilon-SVR as 2n variables; a start outside
  the feasible set repaired first;
- the iterations (``loop``): WSS2 selection, LIBSVM's two-variable update, its
  stopping rule (m(alpha) - M(alpha) < tol, its -e) and its shrinking (every min(n, 1000)
  iterations, 100 from a warm start: WARM_SHRINK_EVERY);
- the kernel rows and LIBSVM's LRU cache (``kernels``, ``cache``);
- here: the starting gradient G = Q alpha0 + p and G_bar (the gradient's part from
  alphas at their upper bound): from the previous solve's kernel sums on the rows that
  have them (``BinarySolution.kernel_sums``: its own gradient), over the nonzero alphas
  for the others (float64; dot products by BLAS, or directly for few features); the
  exact rebuild of the shrunk rows' gradient (LIBSVM's ``reconstruct_gradient``: a
  blocked kernel product, shrunk rows x free alphas) when the loop asks for it and at the
  end; LIBSVM's rho (the mean of y_i G_i over free alphas, else the middle of the
  bounds); the solution in ``solvers.solution``'s convention with its kernel sums, from
  which its dual objective follows (no kernel product over the support vectors).

Of the ``n_threads`` offered a solve takes ``threads.step_threads`` for its kernel
rows' length (WARM_SYNC_TERMS: each step's parallel loops are short, and waiting for many
threads costs more than they give); BLAS runs on one thread meanwhile. The threads never
change the result: every value is computed the same way whatever the split. A CSR working
set is densified when its float64 copy fits MAX_DENSE_BYTES (else LIBSVM solves it).
epsilon-SVR's 2n variables hold each row twice; a row of Q over more than n positions
costs the row's n kernel values once, signed per variable (LIBSVM's ``SVR_Q``;
``kernels.qrow``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np
import scipy.sparse as sp

from randsvm_dist.solvers.params import C_SVC, SolverParams
from randsvm_dist.solvers.solution import BinarySolution, degenerate_solution, finish_solution
from randsvm_dist.solvers.threads import KERNEL_ROW_TERMS, step_threads
from randsvm_dist.solvers.warm_smo.cache import BAR_EVALS, BAR_UPDATES, CST_SIZE, EVALS, cache_reset
from randsvm_dist.solvers.warm_smo.duals import (
    WarmDual,
    dual_for,
    dual_targets,
    feasible_start,
    fill_to_total,
    rebalanced,
    row_boxes,
    row_coefficients,
)
from randsvm_dist.solvers.warm_smo.kernels import (
    add_kernel_products,
    kernel_diagonal,
    kernel_params,
    threadsafe_layer,
)
from randsvm_dist.solvers.warm_smo.loop import (
    ACTIVE,
    DONE,
    FINAL_CHECK,
    ITER,
    MAX_ITER,
    RESUME,
    SCANNED,
    UNSHRINK,
    run_smo,
)

__all__ = ["WARM_SYNC_TERMS", "feasible_start", "needs_libsvm", "solve_warm",
           "solve_warm_counted"]

# dense copies of sparse working sets above this many bytes are not made (LIBSVM instead)
MAX_DENSE_BYTES = 1 << 30
# a solve's threads: ``threads.step_threads`` of the offered ones for its first
# kernel row's cost (the working set's rows), with this wait per step and extra thread:
# a step forks and joins numba's threads for its scans and long kernel rows. On 2 cores
# (benchmarks/bench_warm_threads.py) two threads re-solved a captured 15.9k-row ringnorm
# working set 1.4x faster than one and an 11k-row one 1.2x: two threads from ~4k rows of
# 20 features, a third from ~40k
WARM_SYNC_TERMS = 60_000.0
# iterations between shrinking passes: LIBSVM's min(n, 1000) from its initial point, where
# the first gradients say little about the final bounds; from a warm start they do, and
# shrinking every 100 iterations did 2-3x fewer kernel evaluations than every 1000
# (ringnorm and checkerboard, 20k rows, 20% fresh)
SHRINK_EVERY = 1000
WARM_SHRINK_EVERY = 100


def _dense64_t(X) -> np.ndarray:
    """X transposed, (d, n) float64 C-ordered: a new array (the solver permutes its
    columns)."""
    out = np.empty((X.shape[1], X.shape[0]), dtype=np.float64)
    out[:] = (X.toarray() if sp.issparse(X) else np.asarray(X)).T
    return out


def _products(XT, y, sq, kp, threads: int, tw, rows_of: np.ndarray, cols: np.ndarray,
              coefs: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, int]:
    """(y_t sum_c Q-free kernel sums K(x_t, x_c) coefs[c] for t in targets as a
    (len(targets), k) array, the kernel values computed). Variables are XT's columns;
    with twins (tw's XR has l > 0 rows; variable v is row rows_of[v] of XR) the columns
    are summed per row first and each target row is computed once, so the products cost
    rows, not variables (epsilon-SVR's a_i and a*_i: half)."""
    _, XR, ones, sqr = tw
    if not XR.shape[1]:
        acc = np.zeros((len(targets), coefs.shape[1]))
        add_kernel_products(acc, targets, XT, y, sq, cols, coefs, kp, threads)
        return acc, len(targets) * len(cols)
    per_row = np.zeros((XR.shape[1], coefs.shape[1]))
    np.add.at(per_row, rows_of[cols], coefs)
    used = np.flatnonzero(per_row.any(axis=1))
    rows, at = np.unique(rows_of[targets], return_inverse=True)
    sums = np.zeros((len(rows), coefs.shape[1]))
    add_kernel_products(sums, rows, XR, ones, sqr, used, per_row[used], kp, threads)
    return y[targets, None] * sums[at], len(rows) * len(used)


def _reconstruct(active: int, X, y, sq, alpha, G, G_bar, Cb, p, kp, threads: int, tw,
                 rows_of: np.ndarray) -> int:
    """LIBSVM's ``reconstruct_gradient``: G of the shrunk variables from G_bar, p (in the
    variables' current order) and the free alphas (all free alphas are active); returns
    the kernel values computed."""
    n = len(y)
    if active >= n:
        return 0
    a = alpha[:active]
    free = np.flatnonzero((a > 0) & (a < Cb[:active]))
    if not len(free):
        G[active:] = G_bar[active:] + p[active:]
        return 0
    acc, evals = _products(X, y, sq, kp, threads, tw, rows_of, free,
                           (alpha[free] * y[free])[:, None], np.arange(active, n))
    G[active:] = G_bar[active:] + p[active:] + acc[:, 0]
    return evals


def _rho(y: np.ndarray, alpha: np.ndarray, G: np.ndarray, Cb: np.ndarray) -> float:
    """LIBSVM's ``calculate_rho``."""
    yG = y * G
    upper, lower = alpha >= Cb, alpha <= 0
    free = ~upper & ~lower
    if free.any():
        return float(yG[free].mean())
    ub_set = (upper & (y < 0)) | (lower & (y > 0))
    lb_set = (upper & (y > 0)) | (lower & (y < 0))
    ub = yG[ub_set].min() if ub_set.any() else np.inf
    lb = yG[lb_set].max() if lb_set.any() else -np.inf
    return float((ub + lb) / 2.0)


def _twins(XR: np.ndarray | None, perm: np.ndarray) -> tuple:
    """``kernels.qrow``'s twins: (perm, XR, ones, XR's squared norms) when the
    variables are XR's rows twice (variable v is row v mod l), else with no rows."""
    if XR is None:
        XR = np.empty((0, 0))
    return perm, XR, np.ones(XR.shape[1]), np.einsum("ij,ij->j", XR, XR)


def _gradients(XT, dual: WarmDual, sq, alpha, kp, cols, threads: int, G, G_bar, tw,
               old: np.ndarray | None = None, targets: np.ndarray | None = None) -> int:
    """G += Q[:, cols] (alpha - old)[cols] and G_bar += the same for the alphas whose
    upper-bound state changed (old None: from zeros), on the variables ``targets`` (None:
    all), variables in the dual's order; returns the kernel values computed."""
    y, Cb = dual.y, dual.Cb
    targets = np.arange(len(y)) if targets is None else targets
    if not len(cols) or not len(targets):
        return 0
    a, c = alpha[cols], Cb[cols]
    up = np.where(a >= c, c, 0.0)
    if old is not None:
        a = a - old[cols]
        up = up - np.where(old[cols] >= c, c, 0.0)
    coefs = np.stack([a * y[cols], up * y[cols]], axis=1)
    acc, evals = _products(XT, y, sq, kp, threads, tw, dual.rows, cols, coefs, targets)
    G[targets] += acc[:, 0]
    G_bar[targets] += acc[:, 1]
    return evals


def _upper_sums(XT, dual: WarmDual, sq, alpha, kp, threads: int, G_bar, tw,
                targets: np.ndarray) -> int:
    """G_bar[targets] = the gradient's part from the alphas at their upper bound (the
    other alphas do not enter it); returns the kernel values computed."""
    Cb, y = dual.Cb, dual.y
    cols = np.flatnonzero(alpha >= Cb)
    G_bar[targets] = 0.0
    if not len(cols) or not len(targets):
        return 0
    acc, evals = _products(XT, y, sq, kp, threads, tw, dual.rows, cols,
                           (Cb[cols] * y[cols])[:, None], targets)
    G_bar[targets] += acc[:, 0]
    return evals


def _start(XT, dual: WarmDual, sq, kp, threads: int, tw, sums: np.ndarray | None,
           given: np.ndarray | None = None):
    """(alpha, G, G_bar, kernel values computed) at the start: G and G_bar from the rows'
    kernel sums where ``sums`` (rows x 2, NaN where unknown: ``KernelSums``) has them;
    rows with the first sum only (a scan's decision values, ``exact.solving``) get G from
    it and G_bar over the alphas at their upper bound only; the other rows both over the
    nonzero alphas; ``given``: the alphas the sums are of, where the start differs
    from them (``duals.rebalanced``: the known rows' gradients move by the
    difference); then (one-class) the deficit filled by ``fill_to_total`` and the
    gradients updated by it."""
    alpha = dual.alpha.copy()
    G, G_bar = dual.p.copy(), np.zeros(len(alpha))
    targets, evals = None, 0
    if sums is not None:
        per_var = dual.y[:, None] * sums[dual.rows]
        known = ~np.isnan(per_var[:, 0])
        known_bar = known & ~np.isnan(per_var[:, 1])
        G[known] += per_var[known, 0]
        G_bar[known_bar] = per_var[known_bar, 1]
        targets = np.flatnonzero(~known)
        if given is not None:
            evals = _gradients(XT, dual, sq, alpha, kp, np.flatnonzero(alpha != given),
                               threads, G, G_bar, tw, given, np.flatnonzero(known))
        evals += _upper_sums(XT, dual, sq, alpha, kp, threads, G_bar, tw,
                            np.flatnonzero(known & ~known_bar))
    evals += _gradients(XT, dual, sq, alpha, kp, np.flatnonzero(alpha > 0), threads, G,
                        G_bar, tw, targets=targets)
    if dual.deficit > 0:
        old = alpha.copy()
        changed = fill_to_total(alpha, G, dual.Cb, dual.deficit)
        evals += _gradients(XT, dual, sq, alpha, kp, changed, threads, G, G_bar, tw, old)
    return alpha, G, G_bar, evals


@dataclass(frozen=True)
class _Solved:
    """The SMO's end in the dual's variable order: alphas, rho, iterations, Q alpha, G_bar."""
    alpha: np.ndarray
    rho: float
    iterations: int
    q_alpha: np.ndarray
    g_bar: np.ndarray


def _smo(XT: np.ndarray, dual: WarmDual, params: SolverParams, n_threads: int,
         max_iter: int, stats: dict, XR: np.ndarray | None = None,
         sums: np.ndarray | None = None, given: np.ndarray | None = None) -> _Solved:
    """Run the solver on permuted copies of the dual and fill ``stats``. XT ((d, m): the
    variables' rows as columns) is permuted in place; XR: the distinct rows (d, l) when
    variable v is row v mod l (epsilon-SVR), else None; sums: the rows' known kernel
    sums for the start (``_start``) or None; given: as ``_start``'s."""
    t0 = time.perf_counter()
    n = len(dual.y)
    y, Cb = dual.y.copy(), dual.Cb.copy()
    sq = np.einsum("ij,ij->j", XT, XT)
    QD = kernel_diagonal(params.kernel, sq)
    kp = kernel_params(params.kernel)
    par = n_threads > 1 and threadsafe_layer()
    par_threads = n_threads if par else 1
    perm = np.arange(n, dtype=np.int64)
    tw = _twins(XR, perm)
    alpha, G, G_bar, start_evals = _start(XT, dual, sq, kp, par_threads, tw, sums, given)
    pool_size = int(min(max(params.cache_size * (1 << 20) // 4, 2 * n), n * n))
    pool = np.empty(max(pool_size, 1), dtype=np.float32)
    cm = np.empty((6, n + 1), dtype=np.int64)
    cst = np.zeros(CST_SIZE, dtype=np.int64)
    cache_reset(cm, cst, len(pool), n)
    every = WARM_SHRINK_EVERY if dual.warm else SHRINK_EVERY
    # a start with every row's gradient given (a re-solve of every row at a tighter tol)
    # knows the final bounds: shrink at once (Fashion-MNIST's re-solved pairs 11.9 -> 4.9 s)
    again = sums is not None and not np.isnan(sums[:, 0]).any()
    first = 1 if dual.warm and again else min(n, every) + 1
    ist = np.array([n, 0, first, 0, max_iter, DONE, every, 0, par_threads], dtype=np.int64)
    fst = np.zeros(2)
    scratch = np.empty(n, dtype=np.float32)  # float32 like cached rows: same G_bar either way
    t1 = time.perf_counter()
    t_rebuild, rebuild_evals = 0.0, 0
    while True:
        code = run_smo(XT, y, sq, alpha, G, G_bar, Cb, QD, perm, kp, float(params.tol),
                       bool(params.shrinking), pool, cm, cst, ist, fst, scratch, par, tw)
        if code in (UNSHRINK, FINAL_CHECK, MAX_ITER):
            tr = time.perf_counter()
            rebuild_evals += _reconstruct(int(ist[ACTIVE]), XT, y, sq, alpha, G, G_bar, Cb,
                                          dual.p[perm], kp, par_threads, tw, dual.rows[perm])
            t_rebuild += time.perf_counter() - tr
        if code in (DONE, MAX_ITER):
            break
        ist[RESUME] = code
    out, q_alpha, g_bar = np.empty(n), np.empty(n), np.empty(n)
    out[perm], q_alpha[perm], g_bar[perm] = alpha, G - dual.p[perm], G_bar
    stats.update(iterations=int(ist[ITER]), kernel_evals=int(cst[EVALS]),
                 g_bar_evals=int(cst[BAR_EVALS]), g_bar_updates=int(cst[BAR_UPDATES]),
                 start_evals=start_evals, rebuild_evals=rebuild_evals, start_s=t1 - t0,
                 mean_active=float(ist[SCANNED]) / max(int(ist[ITER]), 1),
                 smo_s=time.perf_counter() - t1, rebuild_s=t_rebuild)
    return _Solved(out, _rho(y, alpha, G, Cb), int(ist[ITER]), q_alpha, g_bar)


def needs_libsvm(X, y: np.ndarray, svm_type: int = C_SVC) -> bool:
    """True when this solver hands (X, y) to LIBSVM: C-SVC with one class only, or a CSR
    working set whose float64 dense copy would exceed MAX_DENSE_BYTES."""
    nbytes = X.shape[0] * X.shape[1] * 8
    one_class_only = svm_type == C_SVC and len(np.unique(y)) < 2
    return one_class_only or (sp.issparse(X) and nbytes > MAX_DENSE_BYTES)


def _row_sums(dual: WarmDual, solved: _Solved, n: int) -> np.ndarray:
    """Every row's kernel sums (``BinarySolution.kernel_sums``) from the solver's gradient:
    row i's first variable (a_i for SVR) has Q alpha = y_i f0_i and G_bar = y_i fb_i."""
    y = dual.y[:n]
    return np.stack([y * solved.q_alpha[:n], y * solved.g_bar[:n]], axis=1)


def _reusable(solved: _Solved, n: int) -> bool:
    """A start from this solution's coefficients has the solver's alphas (epsilon-SVR:
    no row with a_i and a*_i both nonzero), so its kernel sums hold for it."""
    a = solved.alpha
    return len(a) == n or not np.any((a[:n] > 0) & (a[n:] > 0))


def _solve_dual(X, dual: WarmDual, params: SolverParams, n_threads: int, stats: dict,
                sums: np.ndarray | None, given: np.ndarray | None = None) -> _Solved:
    """``_smo`` on the rows X (dense float64 copies, twinned for epsilon-SVR) with the
    threads a kernel row's cost takes (``step_threads``); stats also gets ``threads``;
    sums, given: as ``_start``'s."""
    from threadpoolctl import threadpool_limits

    n, m = X.shape[0], len(dual.y)  # a row of Q costs n kernel values: SVR's 2n share n
    threads = step_threads(n * (X.shape[1] + KERNEL_ROW_TERMS), n_threads, WARM_SYNC_TERMS)
    XT = XR = _dense64_t(X)
    if m != n:  # epsilon-SVR: variable v is row v mod n
        XT = np.ascontiguousarray(XT[:, dual.rows])  # the kernels take C order
    else:
        XR = None
    before = nb.get_num_threads()
    try:
        nb.set_num_threads(min(threads, nb.config.NUMBA_NUM_THREADS))
        # BLAS on one thread: its spinning threads took the cores from numba's (a 2-thread
        # start was no faster than 1 with both on, 1.6x with BLAS on one); same bytes always
        with threadpool_limits(limits=1):
            solved = _smo(XT, dual, params, threads, max(10_000_000, 100 * m), stats, XR,
                          None if sums is None else np.asarray(sums, dtype=np.float64),
                          given)
    finally:
        nb.set_num_threads(before)
    stats["threads"] = threads
    return solved


def solve_warm_counted(X, y: np.ndarray | None, params: SolverParams,
                       alpha0: np.ndarray | None = None,
                       n_threads: int = 1,
                       row_C: np.ndarray | None = None,
                       stats: dict | None = None,
                       start_sums: np.ndarray | None = None) -> tuple[BinarySolution, int]:
    """``solve_warm`` that also returns the SMO iteration count (0 when LIBSVM solved it).

    Args: as ``solve_warm``, and
        stats: a dict that receives ``iterations``, ``kernel_evals`` (kernel values the
            SMO loop computed), of those ``g_bar_evals`` in its ``g_bar_updates`` updates
            of G_bar (an alpha reaching or leaving its bound), ``start_evals`` and
            ``rebuild_evals`` (the starting gradient's and the shrunk gradient's
            rebuilds'), ``mean_active`` (the active set's mean size over the iterations),
            ``start_s``, ``smo_s`` (the SMO loop with its gradient rebuilds) and
            ``rebuild_s`` (those rebuilds) in seconds, and ``threads`` (the threads it
            took of the offered); None: none.
        start_sums: (n, 2) the rows' kernel sums at alpha0 as a previous solve's
            ``BinarySolution.kernel_sums`` gives them, NaN for rows without (fresh rows:
            computed); the starting gradient then costs the unknown rows only. A row with
            its first sum only (NaN second: f - b from a scan) costs its kernel values
            against the alphas at their upper bound. Ignored when alpha0 had to be
            repaired.

    Raises: as ``solve_warm``.

    Returns:
        (BinarySolution, with ``kernel_sums`` unless LIBSVM solved it; iterations).
    """
    from randsvm_dist.solvers.libsvm_adapter import solve_libsvm

    n = X.shape[0]
    t = dual_targets(y, n, params.svm_type)
    Cb = row_boxes(t, params, row_C)
    degenerate = None if params.svm_type == C_SVC else degenerate_solution(t, params)
    if degenerate is not None:
        return degenerate, 0
    if needs_libsvm(X, t, params.svm_type):
        if row_C is not None:
            raise ValueError("per-row bounds on one class or a huge sparse working set: "
                             "solve with solvers.weighted.solve_weighted")
        return solve_libsvm(X, t, params, n_threads), 0
    given = None
    if start_sums is not None and alpha0 is not None and params.svm_type == C_SVC:
        given = np.asarray(alpha0, dtype=np.float64)
        alpha0 = rebalanced(given, t, Cb)
    dual = dual_for(params, t, Cb, alpha0)
    sums = start_sums if dual.as_given and start_sums is not None else None
    solved = _solve_dual(X, dual, params, n_threads, {} if stats is None else stats, sums,
                         None if given is None or np.array_equal(given, dual.alpha)
                         else given)
    support, coef = row_coefficients(dual, solved.alpha, n, params.svm_type)
    sums = _row_sums(dual, solved, n)[support]
    sol = finish_solution(X, t, support, coef, -solved.rho, params, kernel_sums=sums[:, 0])
    sol.kernel_sums = sums if _reusable(solved, n) else None
    return sol, solved.iterations


def solve_warm(X, y: np.ndarray | None, params: SolverParams,
               alpha0: np.ndarray | None = None, n_threads: int = 1,
               row_C: np.ndarray | None = None,
               start_sums: np.ndarray | None = None) -> BinarySolution:
    """Solve C-SVC, epsilon-SVR or one-class (``params.svm_type``) on (X, y) from a
    starting point, with LIBSVM's SMO and conventions.

    Args:
        X: (n, d) float32 ndarray or CSR (a CSR above MAX_DENSE_BYTES as float64 dense, or
            C-SVC with one class only, goes to LIBSVM instead).
        y: (n,) labels in {-1, +1} (C-SVC), real targets (SVR), ignored (one-class: None
            or any array).
        params: SolverParams (svm_type, C, kernel, class weights, epsilon, nu, tol,
            cache_size in MB, shrinking).
        alpha0: (n,) the start in the solution's dual-coefficient terms (repaired to a
            feasible point; None: LIBSVM's initial point): alphas (C-SVC: |dual_coef|;
            one-class: dual_coef, whose sum is brought to nu x sum of the boxes) or, for
            SVR, the signed dual coefficients a_i - a*_i.
        n_threads: threads offered for the starting gradient (BLAS) and long kernel rows
            (the solve takes ``threads.step_threads`` of them).
        row_C: (n,) per-row upper bounds C_i > 0 replacing C x class weight (C-SVC), C
            (SVR) or 1 (one-class) (sample weights; ``params.C`` and the class weights
            are then not applied). Rows with C_i <= 0 must be dropped by the caller
            (``weighted.solve_weighted_warm``).
        start_sums: (n, 2) the rows' kernel sums at alpha0 (``solve_warm_counted``) or
            None.

    Returns:
        BinarySolution, as ``libsvm_adapter.solve_libsvm`` returns it for that kind, with
        ``kernel_sums`` for the next warm start (unless LIBSVM solved it).

    Raises:
        ValueError: row_C of the wrong length or with an entry <= 0.
    """
    return solve_warm_counted(X, y, params, alpha0, n_threads, row_C,
                              start_sums=start_sums)[0]
