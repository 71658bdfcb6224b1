"""Solves with a per-row box constraint C_i (class weight x sample weight x C).

libsvm-official (the pip ``libsvm`` package) has no per-instance weights. scikit-learn
ships LIBSVM's solver patched with them (``svm.cpp``: ``C[i] = prob->W[i] * Cp`` for
C-SVC, ``C[i] = C[i + l] = prob->W[i] * C`` for epsilon-SVR, ``C[i] = prob->W[i]`` with
``sum alpha = nu sum_i W[i]`` for one-class), reached through its public API
``SVC.fit(sample_weight=)``, ``SVR.fit(sample_weight=)``, ``OneClassSVM.fit(
sample_weight=)``. ``solve_weighted`` calls that API with C = 1 and sample_weight = C_i,
so LIBSVM's box of row i is exactly C_i.

Why scikit-learn and not the project's warm-start SMO (``warm_smo``, which takes per-row
bounds too): measured once by hand on 2 cores (rough ratios; no script in
benchmarks/), cold solves at tol 1e-3, weights uniform in [0.5, 2]:
checkerboard 4,000 rows (C=100, gamma=1, ~420 SVs): libsvm-official unweighted 0.05 s,
scikit-learn weighted 0.05 s, warm_smo weighted 0.16 s (~3x slower; measured before
warm_smo had shrinking);
3,000 x 10 Gaussian rows (C=1, gamma=0.1, ~1,850 SVs): all three ~0.13 s. So the
weighted solve costs what the unweighted LIBSVM solve costs, warm_smo only pays off
from a warm start (``solve_weighted_warm`` keeps that for re-solves of every kind), and
scikit-learn's cold solves are the very LIBSVM code with its zero/negative-weight
semantics by construction. Its costs: a float64 copy of the working
set (libsvm-official copies to float64 too), and no OpenMP: scikit-learn's LIBSVM computes
kernel columns on one core, where libsvm-official with ``n_threads=2`` uses two (4.8 s vs
6.5 s on ijcnn1, measured by hand). So unweighted problems should keep using
``libsvm_adapter.solve_libsvm``. Tests: ``tests/solvers/test_weighted.py``.

Zero and negative weights behave as in scikit-learn: a row with C_i <= 0 is removed from
the problem (LIBSVM's ``remove_zero_weight``): it is never a support vector and does not
enter rho. All rows removed is an error (scikit-learn's message).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.solvers.libsvm_adapter import LIBSVM_SYNC_TERMS, solve_libsvm
from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, ONE_CLASS, SolverParams
from randsvm_dist.solvers.solution import BinarySolution, degenerate_solution, finish_solution
from randsvm_dist.solvers.threads import kernel_row_terms, step_threads


def check_row_C(row_C, n: int) -> np.ndarray:
    """Validate per-row box constraints.

    Args:
        row_C: (n,) array-like of C_i (finite; any sign).
        n: the number of rows.

    Returns:
        float64 array (n,).

    Raises:
        ParameterError: wrong length, not finite, or no entry > 0 ("Invalid input - all
            samples have zero or negative weights.", as scikit-learn).
    """
    c = np.asarray(row_C, dtype=np.float64).ravel()
    if c.shape != (n,):
        raise ParameterError(f"row_C has {c.size} entries for {n} rows")
    if not np.isfinite(c).all():
        raise ParameterError("row_C (C x class weight x sample weight) must be finite")
    if n and not (c > 0).any():
        raise ParameterError("Invalid input - all samples have zero or negative weights.")
    return c


def _estimator(params: SolverParams):
    from sklearn.svm import SVC, SVR, OneClassSVM

    k = params.kernel
    common = dict(kernel=k.name, gamma=float(k.gamma), degree=int(k.degree),
                  coef0=float(k.coef0), tol=float(params.tol),
                  cache_size=float(params.cache_size), shrinking=bool(params.shrinking))
    if params.svm_type == C_SVC:
        return SVC(C=1.0, **common)
    if params.svm_type == EPSILON_SVR:
        return SVR(C=1.0, epsilon=float(params.epsilon), **common)
    return OneClassSVM(nu=float(params.nu), **common)


def solve_weighted(X, t: np.ndarray | None, params: SolverParams, row_C,
                   n_threads: int = 1) -> BinarySolution:
    """Solve a LIBSVM problem whose row i has the box 0 <= alpha_i (, alpha_i*) <= C_i.

    Args:
        X: (n, d) float32 ndarray or CSR.
        t: (n,) targets as in ``libsvm_adapter.solve_libsvm`` ({-1, +1} for C-SVC, real
            for SVR, ignored for one-class).
        params: SolverParams; ``svm_type``, kernel, tol, cache_size, shrinking, epsilon,
            nu are used. ``C``, ``weight_pos`` and ``weight_neg`` are NOT applied: they
            must already be in row_C.
        row_C: (n,) the box of each row: C x class weight x sample weight (C-SVC, SVR);
            for one-class the weight in LIBSVM's scaling (1 = an unweighted row), with
            sum_i alpha_i = nu sum_{C_i > 0} C_i. Rows with C_i <= 0 are dropped.
        n_threads: BLAS threads offered (scikit-learn's dense kernel rows use BLAS) for
            this call; it takes ``threads.step_threads`` of them.

    Returns:
        BinarySolution with support indices into the rows of X (ascending; dropped rows
        never appear), dual coefficients, intercept (-rho) and dual objective, exactly as
        ``solve_libsvm`` returns them. C-SVC whose kept rows hold one class only: no
        support vectors, intercept +1/-1 (as ``solve_libsvm``). Boxes that are only
        class weights (C-SVC) or one constant (SVR) go to ``solve_libsvm`` instead
        (``as_unweighted``): the same problem, with LIBSVM's OpenMP.

    Raises:
        ParameterError: bad row_C (see ``check_row_C``).
    """
    from threadpoolctl import threadpool_limits

    n = X.shape[0]
    c = check_row_C(row_C, n)
    if params.svm_type == ONE_CLASS and (t is None or len(t) != n):
        t = np.ones(n)
    t = np.asarray(t, dtype=np.float64)
    keep = np.flatnonzero(c > 0)
    degenerate = degenerate_solution(t[keep], params)
    if degenerate is not None:
        return degenerate
    plain = as_unweighted(t[keep], c[keep], params)
    if plain is not None:  # the same problem, solved by libsvm-official (with OpenMP)
        sol = solve_libsvm(X[keep], t[keep], plain, n_threads)
        return _on_rows(sol, keep)
    Xk = X[keep]
    Xk = sp.csr_matrix(Xk, dtype=np.float64) if sp.issparse(Xk) else \
        np.ascontiguousarray(Xk, dtype=np.float64)
    est = _estimator(params)
    threads = step_threads(kernel_row_terms(Xk), n_threads, LIBSVM_SYNC_TERMS)
    with threadpool_limits(limits=threads):
        if params.svm_type == ONE_CLASS:
            est.fit(Xk, sample_weight=c[keep])
        else:
            est.fit(Xk, t[keep], sample_weight=c[keep])
    # scikit-learn's public dual_coef_/intercept_ of a binary SVC are oriented towards
    # classes_[1] = +1 already (it negates LIBSVM's, which point at its first label)
    coef = est.dual_coef_
    coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef, dtype=np.float64)[0]
    support = keep[np.asarray(est.support_, dtype=np.int64)]
    return finish_solution(X, t, support, coef, float(np.ravel(est.intercept_)[0]), params)


def solve_weighted_warm(X, y: np.ndarray | None, params: SolverParams, row_C,
                        alpha0: np.ndarray | None = None,
                        n_threads: int = 1,
                        start_sums: np.ndarray | None = None) -> BinarySolution:
    """Any kind with per-row boxes, warm-started (``warm_smo`` with per-row upper bounds).

    Same problem and result as ``solve_weighted`` (rows with C_i <= 0 dropped), starting
    from alpha0 (repaired to a feasible point). Use it for re-solves of a working set that
    mostly holds the previous support vectors.

    Args:
        X: (n, d) float32 ndarray or CSR; y: (n,) targets as in ``solve_weighted``.
        params: SolverParams (C and class weights NOT applied).
        row_C: (n,) boxes C_i.
        alpha0: (n,) the start as ``warm_smo.solve.solve_warm`` takes it (alphas; SVR: signed
            dual coefficients) or None.
        n_threads: threads for the starting gradient and long kernel rows.
        start_sums: (n, 2) the rows' kernel sums at alpha0 (``warm_smo.solve.solve_warm``) or
            None.

    Returns:
        BinarySolution.

    Raises:
        ParameterError: bad row_C.
    """
    from randsvm_dist.solvers.warm_smo.solve import needs_libsvm, solve_warm

    n = X.shape[0]
    c = check_row_C(row_C, n)
    if params.svm_type == ONE_CLASS and (y is None or len(y) != n):
        y = np.ones(n)
    y = np.where(np.asarray(y) > 0, 1.0, -1.0) if params.svm_type == C_SVC else \
        np.asarray(y, dtype=np.float64)
    keep = np.flatnonzero(c > 0)
    degenerate = degenerate_solution(y[keep], params)
    if degenerate is not None:
        return degenerate
    if needs_libsvm(X[keep], y[keep], params.svm_type):
        return solve_weighted(X, y, params, c, n_threads)
    a0 = None if alpha0 is None else np.asarray(alpha0, dtype=np.float64)[keep]
    sums = None if start_sums is None else np.asarray(start_sums)[keep]
    return _on_rows(solve_warm(X[keep], y[keep], params, a0, n_threads, row_C=c[keep],
                               start_sums=sums), keep)


def _on_rows(sol: BinarySolution, keep: np.ndarray) -> BinarySolution:
    """A solution on the rows ``keep`` (ascending) re-indexed to all rows."""
    return BinarySolution(keep[sol.support], sol.dual_coef, sol.intercept,
                          sol.dual_objective, sol.kernel_sums)


def as_unweighted(t: np.ndarray, row_C: np.ndarray, params: SolverParams):
    """The plain LIBSVM parameters of a per-row-box problem that needs no per-row boxes,
    else None.

    C-SVC whose boxes are constant within each class is LIBSVM's ``-c 1 -w1 C+ -w-1 C-``;
    epsilon-SVR with one box for all rows is ``-c C``. (One-class is left to
    scikit-learn: its weights also set sum alpha.)

    Args:
        t: targets of the kept rows; row_C: their boxes (> 0); params: the problem.

    Returns:
        SolverParams for ``solve_libsvm``, or None.
    """
    from dataclasses import replace

    if not len(row_C):
        return None
    if params.svm_type == C_SVC:
        pos = t > 0
        cp, cn = row_C[pos], row_C[~pos]
        if len(cp) and len(cn) and np.all(cp == cp[0]) and np.all(cn == cn[0]):
            return replace(params, C=1.0, weight_pos=float(cp[0]), weight_neg=float(cn[0]))
    elif params.svm_type == EPSILON_SVR and np.all(row_C == row_C[0]):
        return replace(params, C=float(row_C[0]))
    return None
