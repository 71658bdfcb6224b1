"""oneDAL (scikit-learn-intelex) as an optional exact solver of a working set.

LIBSVM (``libsvm_adapter``, ``weighted``) is the default and the reference. This module
solves the same problem with oneDAL's SVM ("thunder" method) through scikit-learn-intelex's
public estimators ``sklearnex.svm.SVC`` (C-SVC) and ``sklearnex.svm.SVR`` (epsilon-SVR),
installed with randsvm-dist on x86-64 (its wheels are x86-64 only), and returns the
same ``BinarySolution``: support ascending, dual_coef = y_i alpha_i (C-SVC) or alpha_i -
alpha_i* (SVR), coefficients within AT_BOX_RTOL of their box put on it (a float32 solve
returns the box rounded to float32), intercept = -rho, the dual objective computed from
the duals with the project's kernel over the support vectors
(``solution.finish_solution``, as for LIBSVM), so the certificate is built from the
same quantities. A solve whose caller scans every row right after (``scanned``: the
in-process direct route, ``exact.in_process``) leaves the dual objective and the
optimality check below to that scan's decision values (``exact.solving.finish_scanned``):
one pass over the rows instead of three.

What runs where (scikit-learn-intelex 2026.2; ``tests/solvers/test_onedal_backend.py``):

- C-SVC, linear/rbf/poly kernels, dense or CSR, with or without sample_weight: oneDAL.
  Per-row boxes (C x class weight x sample weight) go in as ``sample_weight`` with C = 1:
  oneDAL's box of row i is C x sample_weight_i, as LIBSVM's (same optimum measured,
  relative dual difference ~1e-8). Class weights without sample weights are such boxes too.
- one-vs-one's pairs of three or more classes without class or sample weights, when
  every pair is solved cold at once (the client's direct route): one fit of all classes
  (``solve_onedal_pairs``), each pair's solution read from its layout.
- epsilon-SVR, same kernels, with or without sample_weight: oneDAL.
- one-class: no oneDAL solver (sklearnex has no OneClassSVM): LIBSVM, always.
- sigmoid kernel: oneDAL runs, but the kernel is not positive semi-definite and oneDAL's
  point differs from LIBSVM's (relative dual difference 4e-3 on 1,500 rows): LIBSVM.
- rows with C_i <= 0 are dropped first (as LIBSVM's ``remove_zero_weight``); a C-SVC whose
  kept rows hold one class is ``degenerate_solution`` (no solver call), so sklearnex's
  own conditions (positive weights, two classes) always hold.

scikit-learn-intelex silently falls back to scikit-learn for what it does not accelerate.
The call above is made only for cases it accelerates, and every fit is checked: its
``sklearnex`` log record for this thread must say "running accelerated version"; one that
says otherwise is refused (a warning names the cause) and the working set is solved by
LIBSVM instead. The same happens when oneDAL stops at its iteration cap
(``MAX_ITER``) without converging in float64, and when a C-SVC point misses the
optimality conditions on some row by more than KKT_SLACK (``kkt_violation``; oneDAL once
returned such a point on w8a's CSR rows with cache_size=1000).

Precision and tolerance: oneDAL solves in the dtype of its input. It gets the float32 rows
as they are when the tol is at least FLOAT32_MIN_TOL and the box C x class weight at most
FLOAT32_MAX_C (epsilon-SVR: FLOAT32_MAX_C_SVR); float64 otherwise, as LIBSVM computes, and
again in float64 when a float32 fit stops at MAX_ITER. The certificate decides; the
measurements behind these limits: docs/decisions.md ("oneDAL in float32").

Threads: a solve takes ``threads.step_threads`` of the threads offered for its
rows (ONEDAL_SYNC_TERMS: oneDAL's steps work on blocks of kernel rows, so its wait weighs
less than LIBSVM's per column; not yet measured beyond 2 threads, the rule caps small
problems only) and holds them in oneDAL's process-wide pool while it runs
(``onedal_runtime``). sklearnex's warning about ``n_jobs`` off the main thread
("'Threading' parallel backend is not supported") is silenced.

The 'auto' rule (when oneDAL solves rather than LIBSVM, and why) is ``solvers.onedal_auto``.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import decision_values
from randsvm_dist.numerics.multiclass import ovo_pairs, pair_coef_matrix
from randsvm_dist.solvers.onedal_runtime import (
    THREADS,
    capture_start,
    capture_stop,
    onedal_available,
)
from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, SOLVER_BACKENDS, SolverParams
from randsvm_dist.solvers.solution import BinarySolution, degenerate_solution, finish_solution
from randsvm_dist.solvers.threads import kernel_row_terms, step_threads
from randsvm_dist.solvers.weighted import check_row_C

BACKENDS = SOLVER_BACKENDS
INSTALL_HINT = ("pip install 'scikit-learn-intelex>=2025.0' (the default install has it on "
                "x86-64; it has no wheels for other machines)")
ONEDAL_KERNELS = ("linear", "rbf", "poly")
ONEDAL_SVM_TYPES = (C_SVC, EPSILON_SVR)
MAX_ITER = 10_000  # oneDAL outer iterations (sklearnex's own default cap)
# float32 first from this tol up, for boxes (C x class weight) up to these (module doc)
FLOAT32_MIN_TOL = 1e-4
FLOAT32_MAX_C = 32.0
FLOAT32_MAX_C_SVR = 64.0
ONEDAL_SYNC_TERMS = 50.0
# A C-SVC solution whose margins miss LIBSVM's optimality conditions by more than this
# (or 100 x tol) on any row is not taken (benchmarks/bench_ahead.py: oneDAL returned a point
# with a certified gap stuck at 0.39 on w8a's CSR rows with cache_size=1000, 1e-4 with 200).
KKT_SLACK = 0.1
# oneDAL's coefficients within this relative distance of their box are put on it: a float32
# solve returns the box rounded to float32
AT_BOX_RTOL = 1e-6


def check_backend(backend: str) -> None:
    """Validate a solver backend name ('libsvm', 'onedal' or 'auto').

    Args:
        backend: the name.

    Raises:
        ParameterError: an unknown name, or 'onedal' without scikit-learn-intelex.
    """
    if backend not in BACKENDS:
        raise ParameterError(f"solver must be one of {', '.join(map(repr, BACKENDS))}; "
                             f"got {backend!r}")
    if backend == "onedal" and not onedal_available():
        raise ParameterError("solver='onedal' needs scikit-learn-intelex (oneDAL), which is "
                             f"not installed: {INSTALL_HINT}")


def onedal_solves(params: SolverParams) -> bool:
    """Whether oneDAL solves this problem exactly as LIBSVM does (else LIBSVM must).

    Args:
        params: the problem (svm_type and kernel matter).

    Returns:
        True for C-SVC and epsilon-SVR with a linear, rbf or poly kernel.
    """
    return params.svm_type in ONEDAL_SVM_TYPES and params.kernel.name in ONEDAL_KERNELS


def _estimator(params: SolverParams, C: float):
    from sklearnex.svm import SVC, SVR

    # Every fit off the main thread (a Dask task) warns that sklearnex's n_jobs is ignored
    # there; onedal_runtime.THREADS sets the threads. A permanent filter for exactly that message:
    # warnings.catch_warnings is not thread-safe.
    warnings.filterwarnings("ignore", message="'Threading' parallel backend is not "
                            "supported by Extension for scikit-learn")

    k = params.kernel
    common = dict(C=float(C), kernel=k.name, gamma=float(k.gamma), degree=int(k.degree),
                  coef0=float(k.coef0), tol=float(params.tol),
                  cache_size=float(params.cache_size), shrinking=bool(params.shrinking),
                  max_iter=MAX_ITER)
    if params.svm_type == C_SVC:
        return SVC(**common)
    return SVR(epsilon=float(params.epsilon), **common)


def _boxes(t: np.ndarray, params: SolverParams, row_C) -> np.ndarray | None:
    """Per-row boxes of the problem, or None when every row has the box params.C."""
    if row_C is not None:
        return check_row_C(row_C, len(t))
    if params.svm_type == C_SVC and (params.weight_pos != 1.0 or params.weight_neg != 1.0):
        return np.where(t > 0, params.C * params.weight_pos, params.C * params.weight_neg)
    return None


def solve_onedal(X, t: np.ndarray, params: SolverParams, row_C=None,
                 n_threads: int = 1, scanned: bool = False) -> BinarySolution | None:
    """Solve a C-SVC or epsilon-SVR problem with oneDAL, as LIBSVM would.

    Args:
        X: (n, d) float32 ndarray or CSR.
        t: (n,) targets: {-1, +1} (C-SVC) or real (SVR).
        params: SolverParams (C, class weights, kernel, tol, cache_size, shrinking,
            epsilon). With ``row_C``, C and the class weights are NOT applied: they must
            be in row_C (as ``weighted.solve_weighted``).
        row_C: None, or (n,) per-row boxes C_i (C x class weight x sample weight);
            rows with C_i <= 0 are dropped.
        n_threads: oneDAL threads offered to this solve; it takes
            ``threads.step_threads`` of them (ONEDAL_SYNC_TERMS).
        scanned: the caller scans every row of X right after (the in-process direct
            route): the solve leaves out its own passes over decision values, the
            optimality check (``kkt_violation``) and the dual objective (None), which the
            caller derives from its scan's values (``margin_violation``,
            ``dual_objective.dual_objective_from_values``).

    Returns:
        BinarySolution as ``libsvm_adapter.solve_libsvm`` returns it (support indices
        into the rows of X, ascending), or None when oneDAL did not solve it (sklearnex
        fell back to scikit-learn, oneDAL hit MAX_ITER, or its C-SVC point misses the
        optimality conditions; a warning says which): the caller then solves with LIBSVM.

    Raises:
        ParameterError: a problem oneDAL does not solve (see ``onedal_solves``),
            scikit-learn-intelex not installed, or bad row_C (``weighted.check_row_C``).
    """
    if not onedal_solves(params):
        raise ParameterError(f"oneDAL does not solve svm_type {params.svm_type} with the "
                             f"{params.kernel.name} kernel as LIBSVM does; use LIBSVM")
    if not onedal_available():
        raise ParameterError(f"scikit-learn-intelex (oneDAL) is not installed: {INSTALL_HINT}")
    t = np.asarray(t, dtype=np.float64)
    n = X.shape[0]
    box = _boxes(t, params, row_C)
    keep = np.arange(n) if box is None else np.flatnonzero(box > 0)
    degenerate = degenerate_solution(t[keep], params)
    if degenerate is not None:
        return degenerate
    rows = X if len(keep) == n else X[keep]
    weights, C = (None, params.C) if box is None else (box[keep], 1.0)
    est, refusal = _solved(rows, t[keep], weights, params, C, n_threads)
    if refusal is None:
        sv, coef, intercept = _fitted_solution(
            est, box[keep] if box is not None else np.full(len(keep), params.C))
        if params.svm_type == C_SVC and not scanned:
            worst = kkt_violation(rows, t[keep], sv, coef, intercept, params,
                                  None if box is None else box[keep])
            refusal = missed_optimum(worst, params.tol)
    if refusal is not None:
        warnings.warn(refusal, RuntimeWarning, stacklevel=2)
        return None
    return finish_solution(X, t, keep[sv], coef, intercept, params, objective=not scanned)


def solve_onedal_pairs(X, codes: np.ndarray, n_classes: int, params: SolverParams,
                       n_threads: int = 1) -> list[BinarySolution] | None:
    """Every one-vs-one pair of a C-SVC by one oneDAL fit of all classes.

    scikit-learn-intelex's SVC given k classes has oneDAL train the k(k-1)/2 pairs in one
    call, which took less time than a call per pair on the pair's rows (Fashion-MNIST's
    60,000 rows, 10 classes, float32, tol 1e-4, 2 cores: 25.6 s against 28.5 s, of which
    1.2 s copied the pairs' rows). Each pair's solution is read from the shared layout
    (``numerics.multiclass.pair_coef_matrix``) as the pair's own: the same problem, the
    same solver, the same tol; the precision and the refusals are ``solve_onedal``'s
    (``fit_dtypes``, ``_solved``). Like ``solve_onedal(scanned=True)``, no dual objective
    and no optimality check: the caller scans every row right after.

    Args:
        X: (n, d) float32 ndarray or CSR, the rows of every class.
        codes: (n,) class codes 0..n_classes-1, each class present.
        n_classes: k.
        params: the pairs' SolverParams (C-SVC, C, kernel, tol, cache_size, shrinking;
            class weights 1: every row's box is C).
        n_threads: oneDAL threads offered (``step_threads`` of them are taken).

    Returns:
        per pair (i, j) in ``numerics.multiclass.ovo_pairs`` order, the BinarySolution
        on the pair's rows (the rows of classes i and j in row order; class i is +1), dual
        objective None; or None when oneDAL did not solve it (a warning says why, as
        ``solve_onedal``'s): the caller then solves the pairs one by one.

    Raises:
        ParameterError: not a C-SVC oneDAL solves, class weights, or scikit-learn-intelex
            not installed.
        ValueError: fewer than 3 classes, codes outside 0..n_classes-1 or a class without
            rows.
    """
    if params.svm_type != C_SVC or not onedal_solves(params) or \
            params.weight_pos != 1.0 or params.weight_neg != 1.0:
        raise ParameterError("one oneDAL fit of every pair takes a C-SVC without class "
                             f"weights and a {', '.join(ONEDAL_KERNELS)} kernel")
    if not onedal_available():
        raise ParameterError(f"scikit-learn-intelex (oneDAL) is not installed: {INSTALL_HINT}")
    codes = np.asarray(codes)
    if n_classes < 3 or not np.array_equal(np.unique(codes), np.arange(n_classes)):
        raise ValueError(f"three or more classes 0..{n_classes - 1}, each with rows; got "
                         f"codes {np.unique(codes).tolist()}")
    est, refusal = _solved(X, codes.astype(np.float64), None, params, params.C, n_threads)
    if refusal is not None:
        warnings.warn(refusal, RuntimeWarning, stacklevel=2)
        return None
    support = np.asarray(est.support_, dtype=np.int64)
    dual = est.dual_coef_
    dual = np.asarray(dual.toarray() if sp.issparse(dual) else dual, dtype=np.float64)
    coef = pair_coef_matrix(dual.T, est.n_support_)
    intercepts = np.ravel(est.intercept_)
    out = []
    for p, (i, j) in enumerate(ovo_pairs(n_classes)):
        rows = np.flatnonzero((codes == i) | (codes == j))
        nz = np.flatnonzero(coef[:, p])
        c = _on_box(coef[nz, p], np.full(len(nz), params.C))
        out.append(finish_solution(None, None, np.searchsorted(rows, support[nz]), c,
                                   float(intercepts[p]), params, objective=False))
    return out


def _on_box(coef: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The coefficients with those within AT_BOX_RTOL of their box (``upper``) on it."""
    at_box = np.abs(coef) >= upper * (1 - AT_BOX_RTOL)
    return np.where(at_box, np.sign(coef) * upper, coef)


def missed_optimum(worst: float, tol: float) -> str | None:
    """The refusal of a C-SVC point whose largest optimality violation is ``worst`` (more
    than KKT_SLACK or 100 x tol), as the warning to give, or None when it is taken."""
    if worst <= max(KKT_SLACK, 100 * tol):
        return None
    return (f"oneDAL's solution misses the optimality conditions by {worst:.3g} on some "
            "row; solving this working set with LIBSVM")


def fit_dtypes(params: SolverParams) -> tuple:
    """The precisions a oneDAL solve of ``params`` tries, in order (module docstring):
    float32 then float64 when its tol is at least FLOAT32_MIN_TOL and its box C x class
    weight (before sample weights) at most FLOAT32_MAX_C (epsilon-SVR: FLOAT32_MAX_C_SVR),
    else float64 alone."""
    box = params.C * max(params.weight_pos, params.weight_neg)
    cap = FLOAT32_MAX_C_SVR if params.svm_type == EPSILON_SVR else FLOAT32_MAX_C
    if params.tol >= FLOAT32_MIN_TOL and box <= cap:
        return np.float32, np.float64
    return (np.float64,)


def _solved(rows, t: np.ndarray, weights: np.ndarray | None, params: SolverParams,
            C: float, n_threads: int):
    """oneDAL's fit of the rows, in float32 first where ``fit_dtypes`` says so,
    again in float64 when float32 stops at MAX_ITER.

    Returns:
        (the fitted estimator, None), or (None, why it is refused: the warning to give).
    """
    for dtype in fit_dtypes(params):
        est, messages = _fit(rows, t, weights, params, C, n_threads, dtype)
        fallback = _fallback(est, messages)
        if fallback is not None:
            return None, fallback
        if int(np.max(est.n_iter_)) < MAX_ITER:
            return est, None
    return None, (f"oneDAL stopped at its iteration cap ({MAX_ITER}) without reaching "
                  f"tol={params.tol:g}; solving this working set with LIBSVM")


def _fitted_solution(est, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(support, coefficients put on their box ``upper`` when within rounding, intercept)
    of a fitted sklearnex SVC/SVR (sklearn's public binary dual_coef_ and intercept_ point
    towards classes_[1] = +1)."""
    coef = est.dual_coef_
    coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef, dtype=np.float64)[0]
    sv = np.asarray(est.support_, dtype=np.int64)
    return sv, _on_box(coef, upper[sv]), float(np.ravel(est.intercept_)[0])


def _fit(rows, t: np.ndarray, weights: np.ndarray | None, params: SolverParams, C: float,
         n_threads: int, dtype=np.float64):
    """Fit sklearnex's SVC or SVR to ``rows`` (in ``dtype``) under oneDAL's thread share.

    Returns:
        (the fitted estimator, the sklearnex log messages of the fit).
    """
    Xk = _table_ready(rows, dtype)
    est = _estimator(params, C)
    logger = logging.getLogger("sklearnex")
    capture = capture_start(logger)
    key = THREADS.enter(step_threads(kernel_row_terms(Xk), n_threads, ONEDAL_SYNC_TERMS))
    try:
        est.fit(Xk, t, sample_weight=weights)
    finally:
        THREADS.leave(key)
        capture_stop(logger, capture)
    return est, capture.messages


def _table_ready(rows, dtype):
    """The rows as oneDAL takes them, copied only when they are not already: ``dtype``,
    C-contiguous, aligned (a Dask task's arrays can sit unaligned in the message that
    brought them, and oneDAL refuses those)."""
    if not sp.issparse(rows):
        return np.require(rows, dtype, ("C", "A"))
    rows = sp.csr_matrix(rows)
    return sp.csr_matrix((np.require(rows.data, dtype, ("C", "A")),
                          np.require(rows.indices, None, ("C", "A")),
                          np.require(rows.indptr, None, ("C", "A"))), shape=rows.shape)


def _fallback(est, messages: list[str]) -> str | None:
    """The warning to give when sklearnex fell back to scikit-learn for the fit ``est``
    (it made no oneDAL estimator, which is what sklearnex's own predict dispatches on),
    else None. The log only names the cause: it is empty where the application disabled
    logging."""
    if hasattr(est, "_onedal_estimator"):
        return None
    scope = f"sklearn.svm.{type(est).__name__}.fit: "
    causes = [m.split("cause - ", 1)[-1] for m in messages if "cause - " in m]
    said = [m for m in messages if m.startswith(scope)]
    return (f"oneDAL did not solve this working set (scikit-learn-intelex fell "
            f"back to scikit-learn: {'; '.join(causes or said) or 'no log'}); "
            "solving it with LIBSVM")


def kkt_violation(X, t: np.ndarray, support: np.ndarray, coef: np.ndarray, intercept: float,
                  params: SolverParams, box: np.ndarray | None) -> float:
    """The largest violation of C-SVC's optimality conditions over the rows X, t (+-1) of a
    solution (support indices into X, coef = t alpha, intercept b), from float32 decision
    values (``margin_violation``).

    Returns:
        max over rows of the violation (0 at the exact optimum).
    """
    X = X.astype(np.float32) if sp.issparse(X) else np.asarray(X, np.float32)
    f = decision_values(X, X[support], coef, intercept, params.kernel) if len(support) \
        else np.full(X.shape[0], intercept)
    alpha = np.zeros(X.shape[0])
    alpha[support] = np.abs(coef)
    upper = (box if box is not None else
             params.C * np.where(t > 0, params.weight_pos, params.weight_neg))
    return margin_violation(f, t, alpha, upper)


def margin_violation(f: np.ndarray, t: np.ndarray, alpha: np.ndarray, upper: np.ndarray
                     ) -> float:
    """The largest violation of C-SVC's optimality conditions given every row's decision
    value f, target t (+-1), alpha and box: margin t f >= 1 where alpha = 0, <= 1 at the
    box, = 1 in between.

    Returns:
        max over rows of the violation (0 at the exact optimum; 0 without rows).
    """
    margin = t * f
    at_zero, at_box = alpha <= 0, alpha >= upper * (1 - 1e-9)
    viol = np.where(at_zero, np.maximum(0.0, 1 - margin),
                    np.where(at_box, np.maximum(0.0, margin - 1), np.abs(margin - 1)))
    return float(viol.max()) if len(viol) else 0.0
