"""A solved problem as arrays (``BinarySolution``): LIBSVM models are ctypes objects that
cannot be pickled, so every solver returns the rows of the sample that are support
vectors, their dual coefficients, the intercept (LIBSVM's -rho) and the dual objective;
the solutions of problems no solver needs to run (``degenerate_solution``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.solvers.dual_objective import dual_objective
from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, SolverParams


@dataclass
class BinarySolution:
    """A solved LIBSVM problem on one sample (any supported svm_type).

    Attributes:
        support: indices (into the sample's rows) of the support vectors, ascending.
        dual_coef: per support vector (float64): y_i alpha_i (C-SVC), alpha_i - alpha_i*
            (epsilon-SVR), alpha_i (one-class, LIBSVM's scaling).
        intercept: b in f(x) = sum_i dual_coef_i k(x_i, x) + b (LIBSVM's -rho).
        dual_objective: the dual objective at this point (maximisation form; see
            ``dual_objective``), or None when the solve left it to its caller, who scans
            every row right after (``finish_solution(objective=False)``).
        kernel_sums: (n_SV, 2) float64 per support vector, when the solver knows them
            (the warm SMO, from its gradient): sum_j coef_j K(x_i, x_j) over every support
            vector (f(x_i) - b) and over those at their bound (|coef_j| = C_j); a warm
            start from these coefficients reuses them (``warm_smo.solve.solve_warm``). None:
            unknown.
    """

    support: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    dual_objective: float | None
    kernel_sums: np.ndarray | None = None


def _empty_solution(intercept: float) -> BinarySolution:
    return BinarySolution(np.empty(0, np.int64), np.empty(0), float(intercept), 0.0)


def degenerate_solution(t: np.ndarray, params: SolverParams) -> BinarySolution | None:
    """The solution of a problem LIBSVM cannot or need not solve, else None.

    - no rows: no support vectors, intercept 0 (C-SVC: +1);
    - C-SVC with one class present: no support vectors and intercept +1 or -1 (every
      row of that class sits on the margin), as LIBSVM would have no second class.

    Args:
        t: targets of the rows that enter the problem.
        params: the problem's parameters.

    Returns:
        a BinarySolution or None (solve normally).
    """
    t = np.asarray(t, dtype=np.float64)
    if params.svm_type == C_SVC:
        present = np.unique(t)
        if len(present) < 2:
            return _empty_solution(float(present[0]) if len(present) else 1.0)
        return None
    if not len(t):
        return _empty_solution(0.0)
    return None


def finish_solution(X, t: np.ndarray, support: np.ndarray, coef: np.ndarray,
                    intercept: float, params: SolverParams, *, objective: bool = True,
                    kernel_sums: np.ndarray | None = None) -> BinarySolution:
    """Sort the support vectors ascending and compute the dual objective.

    Args:
        X: the sample's rows; t: its targets.
        support: support-vector indices into X (any order).
        coef: their dual coefficients (``BinarySolution`` meaning).
        intercept: b = -rho.
        params: the problem's parameters.
        objective: compute the dual objective (a kernel pass over the support vectors);
            False leaves it None for a caller that scans every row right after and takes
            it from the scan's decision values (``dual_objective_from_values``).
        kernel_sums: (n_SV,) sum_j coef_j K(x_i, x_j) per support vector, in ``support``'s
            order, when the solver knows them (``dual_objective``); None: computed.

    Returns:
        BinarySolution.
    """
    order = np.argsort(support, kind="stable")
    support = np.asarray(support, dtype=np.int64)[order]
    coef = np.asarray(coef, dtype=np.float64)[order]
    if not objective:
        return BinarySolution(support, coef, float(intercept), None)
    targets = np.asarray(t, dtype=np.float64)[support] if params.svm_type == EPSILON_SVR \
        else None
    sums = None if kernel_sums is None else np.asarray(kernel_sums, np.float64)[order]
    return BinarySolution(support, coef, float(intercept),
                          dual_objective(X[support], coef, params.kernel, params.svm_type,
                                         targets, params.epsilon, sums))
