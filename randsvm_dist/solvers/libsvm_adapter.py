"""Solve one LIBSVM problem (C-SVC, epsilon-SVR or one-class) on one sample; return arrays.

LIBSVM models are ctypes objects that cannot be pickled, so everything that leaves this
module is numpy arrays: the rows of the sample that are support vectors, their dual
coefficients, the intercept (LIBSVM's -rho) and the dual objective.

Supported LIBSVM ``svm_type`` values (``SolverParams.svm_type``):

- 0, C-SVC: targets in {-1, +1}; dual_coef = y_i alpha_i; f(x) > 0 predicts +1.
- 3, epsilon-SVR: real targets; dual_coef = alpha_i - alpha_i*; f(x) is the prediction.
- 2, one-class (nu): targets ignored; dual_coef = alpha_i in LIBSVM's scaling (box 1,
  sum alpha = nu l); f(x) >= 0 is an inlier.

In every case f(x) = sum_i dual_coef_i k(x_i, x) + intercept with intercept = -rho.
Per-row box constraints (sample weights) are in ``randsvm_dist.solvers.weighted``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import LIBSVM_KERNEL_TYPE, Kernel, decision_values

C_SVC, ONE_CLASS, EPSILON_SVR = 0, 2, 3
SVM_TYPES = {C_SVC: "c_svc", ONE_CLASS: "one_class", EPSILON_SVR: "epsilon_svr"}
# who solves a working set (``exact.solving.solve_rows``; ``solvers.onedal_backend``)
SOLVER_BACKENDS = ("libsvm", "onedal", "auto")
# Threads of a solve (``step_threads``). A solver's parallel loops each do one step's work
# w (a kernel row or column: rows x (features + KERNEL_ROW_TERMS) terms) and then every
# thread waits for the slowest; that wait grows with the threads, so a step with p threads
# costs about w / p + sync x (p - 1)^2 terms. The sync costs come from the solve times of
# the 16-core reference fits (``exact.cost_model``): the warm SMO's numba kernel rows were
# fastest at 2-4 threads on 16-22k rows and 5-7x slower at 16; LIBSVM's OpenMP kernel
# columns kept gaining up to 16 threads on 22k rows x 20 features. The reference hardly
# tells LIBSVM's apart (its fit is within 2% from 0 to 400 terms): 100, about an OpenMP
# barrier, which leaves 11-15 of 16 threads to the reference's 22-25k-row solves.
KERNEL_ROW_TERMS = 8
LIBSVM_SYNC_TERMS = 100.0


@dataclass(frozen=True)
class SolverParams:
    """LIBSVM parameters with LIBSVM's meanings (``svm-train`` option in brackets).

    Attributes:
        C: box constraint (-c; C-SVC and SVR, unused by one-class).
        kernel: resolved kernel (-t, -g, -d, -r).
        weight_pos, weight_neg: class weights (C is multiplied by them for the +1/-1
            class; C-SVC only: -w1, -w-1).
        tol: LIBSVM's stopping tolerance (-e).
        cache_size: LIBSVM's kernel cache in MB (-m).
        shrinking: LIBSVM's shrinking heuristic (-h).
        svm_type: 0 C-SVC, 2 one-class, 3 epsilon-SVR (-s).
        epsilon: epsilon of the epsilon-insensitive loss (-p; SVR only).
        nu: nu of the one-class SVM (-n; one-class only), in (0, 1].
        backend: who solves a working set: 'libsvm' (libsvm-official, the reference),
            'onedal' (scikit-learn-intelex where it solves the problem, see
            ``solvers.onedal_backend``) or 'auto' (oneDAL where it was measured faster).
            Not a LIBSVM option: ``options()`` leaves it out.

    Raises:
        ParameterError: an svm_type other than 0, 2, 3, nu / epsilon out of range, or an
            unknown backend.
    """

    C: float = 1.0
    kernel: Kernel = Kernel()
    weight_pos: float = 1.0
    weight_neg: float = 1.0
    tol: float = 1e-3
    cache_size: float = 200.0
    shrinking: bool = True
    svm_type: int = C_SVC
    epsilon: float = 0.1
    nu: float = 0.5
    backend: str = "libsvm"

    def __post_init__(self):
        if self.svm_type not in SVM_TYPES:
            raise ParameterError(f"svm_type must be one of {sorted(SVM_TYPES)} (LIBSVM's -s: "
                                 f"0 C-SVC, 2 one-class, 3 epsilon-SVR); got {self.svm_type!r}")
        if self.svm_type == ONE_CLASS and not 0.0 < self.nu <= 1.0:
            raise ParameterError(f"nu must be in (0, 1]; got {self.nu!r}")
        if self.svm_type == EPSILON_SVR and not self.epsilon >= 0.0:
            raise ParameterError(f"epsilon must be >= 0; got {self.epsilon!r}")
        if self.backend not in SOLVER_BACKENDS:
            raise ParameterError(f"backend must be one of {SOLVER_BACKENDS}; "
                                 f"got {self.backend!r}")

    def options(self) -> str:
        """LIBSVM's option string for svm_train."""
        k, f = self.kernel, float  # every number as a plain float's repr (no numpy repr)
        opts = (f"-s {int(self.svm_type)} -t {LIBSVM_KERNEL_TYPE[k.name]} -c {f(self.C)!r} "
                f"-g {f(k.gamma)!r} -d {int(k.degree)} -r {f(k.coef0)!r} -e {f(self.tol)!r} "
                f"-m {f(self.cache_size)!r} -h {int(self.shrinking)}")
        if self.svm_type == C_SVC:
            opts += f" -w1 {f(self.weight_pos)!r} -w-1 {f(self.weight_neg)!r}"
        elif self.svm_type == EPSILON_SVR:
            opts += f" -p {f(self.epsilon)!r}"
        else:
            opts += f" -n {self.nu!r}"
        return opts + " -q"


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
            start from these coefficients reuses them (``warm_smo.solve_warm``). None:
            unknown.
    """

    support: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    dual_objective: float | None
    kernel_sums: np.ndarray | None = None


Solution = BinarySolution


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


def from_libsvm_model(model, X, t: np.ndarray, params: SolverParams) -> BinarySolution:
    """A BinarySolution from a trained libsvm-official model on (X, t).

    C-SVC coefficients and rho are oriented towards +1 (LIBSVM orients f towards its
    first label); support indices are sorted ascending.
    """
    support = np.asarray(model.get_sv_indices(), dtype=np.int64) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()], dtype=np.float64)
    rho = float(model.rho[0])
    if params.svm_type == C_SVC and model.get_labels()[0] == -1:
        coef, rho = -coef, -rho
    return finish_solution(X, t, support, coef, -rho, params)


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


def host_cores() -> int:
    """Cores this process may run on: its CPU affinity (a worker pinned with ``taskset``
    has the cores it was given), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def step_threads(work_per_step: float, offered: int, sync_terms: float) -> int:
    """Threads for a solve whose parallel loops each do ``work_per_step`` terms.

    The p in 1..min(offered, host_cores()) minimising w / p + sync_terms x (p - 1)^2
    (a step's share per thread plus the wait for the slowest thread): more threads only
    while each still has enough work, never more than the host's cores.

    Args:
        work_per_step: terms of one parallel step (rows x (features + KERNEL_ROW_TERMS)).
        offered: threads the caller offers (``exact.placement_of_solves``).
        sync_terms: the backend's wait per step and extra thread, in terms.

    Returns:
        the thread count (at least 1).
    """
    return best_threads(work_per_step, min(int(offered), host_cores()), sync_terms)


def best_threads(work_per_step: float, most: int, sync_terms: float) -> int:
    """The p in 1..most minimising work_per_step / p + sync_terms x (p - 1)^2 (the rule of
    ``step_threads`` without the host's cap, for models of other machines)."""
    w = max(float(work_per_step), 0.0)
    costs = [w / p + sync_terms * (p - 1) ** 2 for p in range(1, max(1, int(most)) + 1)]
    return 1 + int(np.argmin(costs))


def kernel_row_terms(X) -> float:
    """Terms of one kernel row or column over the rows of X: rows x (stored features per
    row + KERNEL_ROW_TERMS)."""
    n = X.shape[0]
    per_row = X.nnz / max(n, 1) if sp.issparse(X) else X.shape[1]
    return float(n) * (per_row + KERNEL_ROW_TERMS)


def solve_libsvm(X, t: np.ndarray | None, params: SolverParams,
                 n_threads: int = 1) -> BinarySolution:
    """Solve one LIBSVM problem (C-SVC, epsilon-SVR or one-class) on (X, t).

    Args:
        X: (n, d) float32 ndarray or CSR.
        t: (n,) targets: labels in {-1, +1} (C-SVC), real values (SVR), ignored
            (one-class; any array of length n, e.g. ones).
        params: SolverParams; ``params.svm_type`` selects the problem.
        n_threads: OpenMP threads offered to this solve (LIBSVM computes kernel columns in
            parallel); it takes ``step_threads`` of them for its columns' length. Set for
            this call only, whatever OMP_NUM_THREADS says (a Dask nanny sets it to 1): the
            driver offers a solve the cores that would otherwise idle.

    Returns:
        BinarySolution. C-SVC with one class present: no support vectors and intercept +1
        or -1 (every row of that class sits on the margin); no rows: no support vectors.
    """
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    if params.svm_type == ONE_CLASS and (t is None or len(t) != X.shape[0]):
        t = np.ones(X.shape[0])
    t = np.asarray(t, dtype=np.float64)
    degenerate = degenerate_solution(t, params)
    if degenerate is not None:
        return degenerate
    Xc = X if sp.issparse(X) else sp.csr_matrix(X)
    Xc = sp.csr_matrix(Xc, dtype=np.float64)
    from threadpoolctl import threadpool_limits

    threads = step_threads(kernel_row_terms(X), n_threads, LIBSVM_SYNC_TERMS)
    with threadpool_limits(limits=threads, user_api="openmp"):
        model = svm_train(svm_problem(t, Xc), svm_parameter(params.options()))
    return from_libsvm_model(model, X, t, params)


def solve_binary(X, y: np.ndarray, params: SolverParams, n_threads: int = 1) -> BinarySolution:
    """The C-SVC name of ``solve_libsvm`` (kept for its callers; any svm_type works).

    Args and Returns: as ``solve_libsvm``.
    """
    return solve_libsvm(X, y, params, n_threads)
