"""oneDAL (scikit-learn-intelex) as an optional exact solver of a working set.

LIBSVM (``libsvm_adapter``, ``weighted``) is the default and the reference. This module
solves the same problem with oneDAL's SVM ("thunder" method) through scikit-learn-intelex's
public estimators ``sklearnex.svm.SVC`` (C-SVC) and ``sklearnex.svm.SVR`` (epsilon-SVR),
installed with randsvm-dist on x86-64 (its wheels are x86-64 only), and returns the
same ``BinarySolution``: support ascending, dual_coef = y_i alpha_i (C-SVC) or alpha_i -
alpha_i* (SVR), intercept = -rho, the dual objective computed from the duals with the
project's kernel over the support vectors (``libsvm_adapter.finish_solution``, as for
LIBSVM), so the certificate is built from the same quantities.

What runs where (scikit-learn-intelex 2026.2; ``tests/test_onedal_backend.py``):

- C-SVC, linear/rbf/poly kernels, dense or CSR, with or without sample_weight: oneDAL.
  Per-row boxes (C x class weight x sample weight) go in as ``sample_weight`` with C = 1:
  oneDAL's box of row i is C x sample_weight_i, as LIBSVM's (same optimum measured,
  relative dual difference ~1e-8). Class weights without sample weights are such boxes too.
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
(``MAX_ITER``) without converging.

Precision and tolerance: oneDAL solves in the dtype of its input; in float32 it cannot
reach LIBSVM's KKT condition below ~3e-4 on checkerboard (C=100) and spins to its
iteration cap (62 s at tol 1e-6 on 2,000 rows), so rows are passed in float64, as LIBSVM
computes. oneDAL's ``accuracy_threshold`` (sklearnex's ``tol``) is LIBSVM's -e: both stop
when max_{I_up} -y_t grad_t - min_{I_low} -y_t grad_t < tol. Measured on checkerboard 2,000
rows (C=100, gamma=1), LIBSVM's measure at oneDAL's float64 solution: 9.6e-4, 9.1e-5,
8.9e-6, 9.8e-7 at tol 1e-3, 1e-4, 1e-5, 1e-6, so the driver's tightened tol holds for
oneDAL's duals too (``tests/test_onedal_backend.py`` checks it).

Threads: oneDAL runs on TBB, which ignores OMP_NUM_THREADS and threadpoolctl, and
sklearnex's ``n_jobs`` is ignored off the main thread (a Dask task's thread). A solve sets
oneDAL's process-wide thread count (``daal4py.daalinit``) to the sum of the ``n_threads``
of the oneDAL solves running in this process (one solve: its own ``n_threads``) and puts
back the previous count when the last one ends (a sum, not a maximum: TBB has one pool
per process, and concurrent solves share it). Of the threads offered a solve takes
``libsvm_adapter.step_threads`` for its rows (ONEDAL_SYNC_TERMS: oneDAL's steps work on
blocks of kernel rows, so its wait weighs less than LIBSVM's per column; not yet measured
beyond 2 threads, the rule caps small problems only). sklearnex's warning about ``n_jobs`` off the
main thread ("'Threading' parallel backend is not supported") is silenced.

The 'auto' rule (``prefer_onedal``): oneDAL for working sets of at least AUTO_MIN_ROWS
rows that carry per-row boxes, or are CSR with at least AUTO_MIN_SPARSE_NNZ non-zeros per
row on average, or dense with at least AUTO_MIN_DENSE_FEATURES features; LIBSVM otherwise
(and always for one-class and the sigmoid kernel). Why: LIBSVM evaluates the kernel one
pair at a time (O(d) scalar work per entry, slower still through its sparse index merge),
oneDAL evaluates kernel blocks with BLAS but pays ~0.2-0.4 s of fixed cost per solve at a
few thousand rows; so oneDAL wins where kernel evaluations are expensive and loses on low-
dimensional dense rows. Measured by hand (no script in benchmarks/) on 2 cores with other
jobs running, so the ratios matter, not the seconds: one process, the two solvers back to
back on the same rows, float64 for both, tol 1e-3, one thread each (daal4py.daalinit(1),
LIBSVM's OpenMP 1), best or median of 2-3; seconds LIBSVM / oneDAL (ratio > 1: oneDAL
faster); dual objectives agreed to a relative 3e-6 or better in every case (5e-7 or better
except on checkerboard, C=100):

The threshold of 10 dense features (and the weighted case) come from whole RandSVM fits
with nothing else running (2 workers, ``benchmarks/bench_ahead.py``; its table is in
benchmarks/README.md), which overrule the one-thread table below (measured with other jobs
running) for d = 20: ringnorm 3e5 (d=20), the weighted skin_nonskin (d=3, duplicates
collapsed into weights), Fashion-MNIST 0 vs 6 (d=784) and a9a (CSR) fit faster with oneDAL
solves; checkerboard 1e6 (d=2) about as fast.

    dense, few features (LIBSVM faster)        rows    LIBSVM   oneDAL  ratio
    checkerboard d=2 (C=100, g=1)               1k     0.021    0.040   0.52
                                                3k     0.044    0.266   0.17
                                               10k     0.197    0.613   0.32
    twonorm d=20 (C=1, g=0.05)                  1k     0.031    0.025   1.27
                                                3k     0.062    0.259   0.24
                                               10k     0.418    1.295   0.32
    ringnorm d=20 (C=1, g=0.05)                 3k     0.122    0.464   0.26
                                               10k     0.592    1.038   0.57
    twonorm d=20, linear kernel                10k     0.973    1.257   0.77
    Gaussian d=5 (C=1, g=1/d)                   3k     0.180    0.480   0.38
    Friedman #1 d=10, epsilon-SVR (C=10, eps=1) 3k     0.173    0.320   0.54
                                               10k     1.885    1.756   1.07
    dense, many features (oneDAL faster)
    Gaussian d=50 (C=1, g=1/d)                  3k     0.769    0.523   1.47
                                               10k     8.460    2.240   3.78
    Gaussian d=100                              3k     1.501    0.606   2.48
    Gaussian d=200                              3k     4.049    0.820   4.94
                                               10k    43.6      4.41    9.89
    CSR, 2,000 columns (oneDAL faster)
    binary, 5 non-zeros per row (C=1, g=0.2)    3k     0.827    0.435   1.90
    binary, 20 per row (g=0.05)                0.5k    0.047    0.012   4.11
                                                1k     0.167    0.033   5.00
                                                3k     2.983    0.571   5.22
    binary, 50 per row (g=0.02)                 3k     6.937    0.543   12.8
    real-valued, 20 per row (g=0.5)            10k    66.4      4.87    13.6

With two threads each, with the same other jobs running, LIBSVM's OpenMP suffered much
more than oneDAL's TBB (checkerboard 10k: 1.42 s vs 1.09 s; Gaussian d=20 3k: 5.7 s vs 0.47 s;
d=50 3k: 4.9 s vs 0.60 s), but a busy machine is no basis for a rule about threads: the
rule above rests on the one-thread rows and the whole fits of bench_ahead.py.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import decision_values
from randsvm_dist.solvers.libsvm_adapter import (
    C_SVC,
    EPSILON_SVR,
    SOLVER_BACKENDS,
    BinarySolution,
    SolverParams,
    degenerate_solution,
    finish_solution,
    kernel_row_terms,
    step_threads,
)
from randsvm_dist.solvers.weighted import check_row_C

log = logging.getLogger("randsvm_dist")

BACKENDS = SOLVER_BACKENDS
INSTALL_HINT = ("pip install 'scikit-learn-intelex>=2025.0' (the default install has it on "
                "x86-64; it has no wheels for other machines)")
ONEDAL_KERNELS = ("linear", "rbf", "poly")
ONEDAL_SVM_TYPES = (C_SVC, EPSILON_SVR)
MAX_ITER = 10_000  # oneDAL outer iterations (sklearnex's own default cap)
ONEDAL_SYNC_TERMS = 50.0
# A C-SVC solution whose margins miss LIBSVM's optimality conditions by more than this
# (or 100 x tol) on any row is not taken (benchmarks/bench_ahead.py: oneDAL returned a point
# with a certified gap stuck at 0.39 on w8a's CSR rows with cache_size=1000, 1e-4 with 200).
KKT_SLACK = 0.1
AUTO_MIN_ROWS = 500
AUTO_MIN_DENSE_FEATURES = 10
AUTO_MIN_SPARSE_NNZ = 5  # mean non-zeros per row

_ACCELERATED = "running accelerated version"


def onedal_available() -> bool:
    """Whether scikit-learn-intelex (oneDAL) is installed, without importing it.

    Returns:
        True when the ``sklearnex`` package can be imported.
    """
    return importlib.util.find_spec("sklearnex") is not None


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


def prefer_onedal(X, params: SolverParams, weighted: bool = False) -> bool:
    """The 'auto' rule: should oneDAL solve this working set (module docstring: why)?

    Args:
        X: the working set's rows (ndarray or CSR).
        params: the problem.
        weighted: the rows carry per-row boxes (LIBSVM's alternative is then scikit-learn's
            single-threaded copy, ``solvers.weighted``).

    Returns:
        True when oneDAL is installed, solves this problem (``onedal_solves``), and the
        working set has at least AUTO_MIN_ROWS rows that are weighted, or CSR with at least
        AUTO_MIN_SPARSE_NNZ non-zeros per row on average, or dense with at least
        AUTO_MIN_DENSE_FEATURES features.
    """
    n = X.shape[0]
    if n < AUTO_MIN_ROWS or not onedal_solves(params):
        return False
    heavy = weighted or (X.nnz >= AUTO_MIN_SPARSE_NNZ * n if sp.issparse(X)
                         else X.shape[1] >= AUTO_MIN_DENSE_FEATURES)
    return heavy and onedal_available()


class _ThreadBudget:
    """oneDAL's process-wide thread count while oneDAL solves run in this process: the sum
    of their n_threads (TBB has one pool per process), or the count ``pin`` holds, the
    previous count put back when the last one ends and nothing is pinned."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active: dict[int, int] = {}
        self._saved: int | None = None
        self._pinned: int | None = None
        self._next = 0

    def enter(self, n_threads: int) -> int:
        import daal4py

        with self._lock:
            self._save(daal4py)
            key, self._next = self._next, self._next + 1
            self._active[key] = max(1, int(n_threads))
            self._apply(daal4py)
            return key

    def leave(self, key: int) -> None:
        import daal4py

        with self._lock:
            self._active.pop(key, None)
            self._apply(daal4py)

    def pin(self, n_threads: int | None) -> None:
        """Hold the count at n_threads whatever the solves ask (None: release it)."""
        import daal4py

        with self._lock:
            self._save(daal4py)
            self._pinned = None if n_threads is None else max(1, int(n_threads))
            self._apply(daal4py)

    def _save(self, daal4py) -> None:
        if not self._active and self._pinned is None and self._saved is None:
            self._saved = int(daal4py.num_threads())

    def _apply(self, daal4py) -> None:
        if self._pinned is None and not self._active:
            if self._saved is not None:
                daal4py.daalinit(self._saved)
                self._saved = None
            return
        total = self._pinned or sum(self._active.values())
        if total != daal4py.num_threads():
            daal4py.daalinit(total)


_THREADS = _ThreadBudget()


@contextmanager
def onedal_threads_pinned(n_threads: int):
    """oneDAL's process-wide thread count held at n_threads while the block runs (nothing
    when oneDAL is not installed). oneDAL's solution depends on that count at fit time, not
    on which solves share the pool: solves run concurrently inside the block give the bytes
    each gives alone with n_threads.

    Args:
        n_threads: the count (>= 1).
    """
    if not onedal_available():
        yield
        return
    _THREADS.pin(n_threads)
    try:
        yield
    finally:
        _THREADS.pin(None)


class _PatchLog(logging.Filter):
    """Collects the ``sklearnex`` log records of the calling thread (and keeps them off
    the console: sklearnex attaches its own stream handler)."""

    def __init__(self):
        super().__init__()
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            return True
        self.messages.append(record.getMessage())
        return False


_LOG_LOCK = threading.Lock()
_LOG_USERS = [0, None]  # active captures, the sklearnex logger's level before the first


def _capture_start(logger: logging.Logger) -> _PatchLog:
    f = _PatchLog()
    with _LOG_LOCK:
        if _LOG_USERS[0] == 0:
            _LOG_USERS[1] = logger.level
        _LOG_USERS[0] += 1
        # the per-fit records are INFO (the fallback's causes DEBUG): below WARNING they
        # are dropped before any filter sees them
        logger.setLevel(logging.DEBUG)
        logger.addFilter(f)
    return f


def _capture_stop(logger: logging.Logger, f: _PatchLog) -> None:
    with _LOG_LOCK:
        logger.removeFilter(f)
        _LOG_USERS[0] -= 1
        if _LOG_USERS[0] == 0:
            logger.setLevel(_LOG_USERS[1])


def _estimator(params: SolverParams, C: float):
    from sklearnex.svm import SVC, SVR

    # Every fit off the main thread (a Dask task) warns that sklearnex's n_jobs is ignored
    # there; _ThreadBudget sets the threads. A permanent filter for exactly that message:
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
                 n_threads: int = 1) -> BinarySolution | None:
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
            ``libsvm_adapter.step_threads`` of them (ONEDAL_SYNC_TERMS).

    Returns:
        BinarySolution as ``libsvm_adapter.solve_libsvm`` returns it (support indices
        into the rows of X, ascending), or None when oneDAL did not solve it (sklearnex
        fell back to scikit-learn, or oneDAL hit MAX_ITER; a warning says which): the
        caller then solves with LIBSVM.

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
    est, messages = _fit(rows, t[keep], weights, params, C, n_threads)
    refusal = _refusal(est, messages, params)
    if refusal is None:
        # sklearn's public binary dual_coef_/intercept_ point towards classes_[1] = +1
        coef = est.dual_coef_
        coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef, dtype=np.float64)[0]
        sv = np.asarray(est.support_, dtype=np.int64)
        intercept = float(np.ravel(est.intercept_)[0])
        if params.svm_type == 0:
            worst = kkt_violation(rows, t[keep], sv, coef, intercept, params,
                                  None if box is None else box[keep])
            if worst > max(KKT_SLACK, 100 * params.tol):
                refusal = (f"oneDAL's solution misses the optimality conditions by "
                           f"{worst:.3g} on some row; solving this working set with LIBSVM")
    if refusal is not None:
        warnings.warn(refusal, RuntimeWarning, stacklevel=2)
        return None
    return finish_solution(X, t, keep[sv], coef, intercept, params)


def _fit(rows, t: np.ndarray, weights: np.ndarray | None, params: SolverParams, C: float,
         n_threads: int):
    """Fit sklearnex's SVC or SVR to ``rows`` (in float64) under oneDAL's thread share.

    Returns:
        (the fitted estimator, the sklearnex log messages of the fit).
    """
    # float64: in float32 oneDAL cannot reach small tolerances (module docstring)
    Xk = sp.csr_matrix(rows, dtype=np.float64) if sp.issparse(rows) else \
        np.ascontiguousarray(rows, dtype=np.float64)
    est = _estimator(params, C)
    logger = logging.getLogger("sklearnex")
    capture = _capture_start(logger)
    key = _THREADS.enter(step_threads(kernel_row_terms(Xk), n_threads, ONEDAL_SYNC_TERMS))
    try:
        est.fit(Xk, t, sample_weight=weights)
    finally:
        _THREADS.leave(key)
        _capture_stop(logger, capture)
    return est, capture.messages


def _refusal(est, messages: list[str], params: SolverParams) -> str | None:
    """Why oneDAL's fit ``est`` is not used (sklearnex fell back to scikit-learn, or oneDAL
    hit MAX_ITER) as the warning to give, or None when it is used."""
    scope = f"sklearn.svm.{type(est).__name__}.fit: "
    if f"{scope}{_ACCELERATED}" not in " | ".join(messages):
        causes = [m.split("cause - ", 1)[-1] for m in messages if "cause - " in m]
        said = [m for m in messages if m.startswith(scope)]
        return (f"oneDAL did not solve this working set (scikit-learn-intelex fell "
                f"back to scikit-learn: {'; '.join(causes or said) or 'no log'}); "
                "solving it with LIBSVM")
    if int(np.max(est.n_iter_)) >= MAX_ITER:
        return (f"oneDAL stopped at its iteration cap ({MAX_ITER}) without reaching "
                f"tol={params.tol:g}; solving this working set with LIBSVM")
    return None


def kkt_violation(X, t: np.ndarray, support: np.ndarray, coef: np.ndarray, intercept: float,
                  params: SolverParams, box: np.ndarray | None) -> float:
    """The largest violation of C-SVC's optimality conditions over the rows X, t (+-1) of a
    solution (support indices into X, coef = t alpha, intercept b): margin t f(x) >= 1 where
    alpha = 0, <= 1 at the box, = 1 in between (float32 decision values).

    Returns:
        max over rows of the violation (0 at the exact optimum).
    """
    X = X.astype(np.float32) if sp.issparse(X) else np.asarray(X, np.float32)
    f = decision_values(X, X[support], coef, intercept, params.kernel) if len(support) \
        else np.full(X.shape[0], intercept)
    margin = t * f
    alpha = np.zeros(X.shape[0])
    alpha[support] = np.abs(coef)
    upper = (box if box is not None else
             params.C * np.where(t > 0, params.weight_pos, params.weight_neg))
    at_zero, at_box = alpha <= 0, alpha >= upper * (1 - 1e-9)
    viol = np.where(at_zero, np.maximum(0.0, 1 - margin),
                    np.where(at_box, np.maximum(0.0, margin - 1), np.abs(margin - 1)))
    return float(viol.max()) if len(viol) else 0.0
