"""The dual objective of a solution (C-SVC, epsilon-SVR, one-class): from its support
vectors' kernel values or from their decision values."""

from __future__ import annotations

import numpy as np

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, ONE_CLASS


def dual_objective(sv, dual_coef: np.ndarray, kernel: Kernel, svm_type: int = C_SVC,
                   targets: np.ndarray | None = None, epsilon: float = 0.0,
                   kernel_sums: np.ndarray | None = None) -> float:
    """The dual objective (maximisation form) of a solution, from its support vectors.

    Rows that are not support vectors have zero coefficients and add nothing, so this is
    the dual objective of the whole problem at the point "this solution, all other alphas
    zero" (a feasible dual point of any superset of the sample). With b the coefficients
    and K the kernel matrix of the support vectors:

    - C-SVC (LIBSVM minimises 1/2 a'Qa - e'a, Q_ij = y_i y_j K_ij, 0 <= a_i <= C_i,
      y'a = 0): D = sum_i a_i - 1/2 a'Qa = sum_i |b_i| - 1/2 b'Kb since b_i = y_i a_i.
    - epsilon-SVR (LIBSVM minimises 1/2 (a - a*)'K(a - a*) + eps sum_i (a_i + a*_i)
      - sum_i y_i (a_i - a*_i) over 0 <= a, a* <= C_i, e'(a - a*) = 0): with b = a - a*
      and, at LIBSVM's solutions, a_i a*_i = 0 (so a_i + a*_i = |b_i|),
      D = -1/2 b'Kb - eps sum_i |b_i| + y'b. Weak duality: for any b with e'b = 0 and
      |b_i| <= C_i, D <= P = 1/2 ||w||^2 + sum_i C_i max(0, |y_i - f(x_i)| - eps).
    - one-class in LIBSVM's scaling (0 <= a_i <= C_i, C_i = 1 unweighted, sum a = nu
      sum C_i): the primal min 1/2 ||w||^2 - nu (sum_i C_i) rho + sum_i C_i xi_i with
      <w, phi(x_i)> >= rho - xi_i, xi_i >= 0 has the Lagrangian stationarity conditions
      w = sum_i a_i phi(x_i), sum_i a_i = nu sum_i C_i, a_i <= C_i, and the dual
      D = 1/2 ||w||^2 - ||w||^2 = -1/2 a'Ka. (Schoelkopf's original scaling, box
      1/(nu l) and sum a = 1, divides a, w and rho by nu l and the objectives by
      (nu l)^2: relative gaps are the same in both.)

    Args:
        sv: the support vectors (float32 ndarray or CSR).
        dual_coef: their coefficients (as in ``BinarySolution``).
        kernel: the kernel.
        svm_type: 0 C-SVC, 2 one-class, 3 epsilon-SVR.
        targets: y_i of the support vectors (epsilon-SVR only).
        epsilon: the SVR's epsilon.
        kernel_sums: K b over the support vectors when the solver has them (float64,
            from its gradient: the warm SMO's), else None: computed here (float32
            kernel values).

    Returns:
        D as a float (0.0 without support vectors).

    Raises:
        ParameterError: epsilon-SVR without targets, or an unknown svm_type.
    """
    if not len(dual_coef):
        return 0.0
    coef = np.asarray(dual_coef, dtype=np.float64)
    quad = float(coef @ (decision_values(sv, sv, coef, 0.0, kernel) if kernel_sums is None
                         else kernel_sums))
    return _objective(quad, coef, svm_type, targets, epsilon)


def dual_objective_from_values(f_sv: np.ndarray, dual_coef: np.ndarray, intercept: float,
                               svm_type: int = C_SVC, targets: np.ndarray | None = None,
                               epsilon: float = 0.0) -> float:
    """``dual_objective`` from the decision values f of the support vectors themselves
    (a scan's), without a kernel pass: f_i - b = (K b)_i, so b'Kb = sum_i b_i (f_i - b).

    Args:
        f_sv: f(x_i) of each support vector (the model's decision values, intercept in).
        dual_coef, intercept: the solution's coefficients and b.
        svm_type, targets, epsilon: as for ``dual_objective``.

    Returns:
        D as a float (0.0 without support vectors).

    Raises:
        ParameterError: as ``dual_objective``.
    """
    if not len(dual_coef):
        return 0.0
    coef = np.asarray(dual_coef, dtype=np.float64)
    quad = float(coef @ (np.asarray(f_sv, dtype=np.float64) - float(intercept)))
    return _objective(quad, coef, svm_type, targets, epsilon)


def _objective(quad: float, coef: np.ndarray, svm_type: int, targets: np.ndarray | None,
               epsilon: float) -> float:
    """The dual objective from b'Kb (``dual_objective``'s formulas)."""
    if svm_type == C_SVC:
        return float(np.abs(coef).sum() - 0.5 * quad)
    if svm_type == ONE_CLASS:
        return float(-0.5 * quad)
    if svm_type == EPSILON_SVR:
        if targets is None:
            raise ParameterError("the epsilon-SVR dual objective needs the targets")
        return float(-0.5 * quad - epsilon * np.abs(coef).sum()
                     + np.asarray(targets, dtype=np.float64) @ coef)
    raise ParameterError(f"unknown svm_type {svm_type!r}")
