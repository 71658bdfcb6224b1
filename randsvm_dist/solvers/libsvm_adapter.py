"""Train a binary C-SVM on one sample with LIBSVM (libsvm-official) and return arrays.

LIBSVM models are ctypes objects that cannot be pickled, so everything that leaves this
module is numpy arrays: the rows of the sample that are support vectors, their dual
coefficients y_i alpha_i, the intercept (LIBSVM's -rho) and the dual objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.kernels import LIBSVM_KERNEL_TYPE, Kernel, decision_values


@dataclass(frozen=True)
class SolverParams:
    """C-SVM parameters with LIBSVM's meanings.

    Attributes:
        C: box constraint.
        kernel: resolved kernel.
        weight_pos, weight_neg: class weights (C is multiplied by them for the +1/-1 class).
        tol: LIBSVM's stopping tolerance (-e).
        cache_size: LIBSVM's kernel cache in MB (-m).
        shrinking: LIBSVM's shrinking heuristic (-h).
    """

    C: float = 1.0
    kernel: Kernel = Kernel()
    weight_pos: float = 1.0
    weight_neg: float = 1.0
    tol: float = 1e-3
    cache_size: float = 200.0
    shrinking: bool = True

    def options(self) -> str:
        """LIBSVM's option string for svm_train."""
        k = self.kernel
        return (
            f"-s 0 -t {LIBSVM_KERNEL_TYPE[k.name]} -c {self.C!r} -g {k.gamma!r} "
            f"-d {int(k.degree)} -r {k.coef0!r} -e {self.tol!r} -m {self.cache_size!r} "
            f"-h {int(self.shrinking)} -w1 {self.weight_pos!r} -w-1 {self.weight_neg!r} -q"
        )


@dataclass
class BinarySolution:
    """A solved binary C-SVM on one sample.

    Attributes:
        support: indices (into the sample's rows) of the support vectors, ascending.
        dual_coef: y_i alpha_i of each support vector (float64).
        intercept: b in f(x) = sum_i dual_coef_i k(x_i, x) + b (LIBSVM's -rho).
        dual_objective: sum_i alpha_i - 1/2 sum_ij dual_coef_i dual_coef_j k(x_i, x_j).
    """

    support: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    dual_objective: float


def dual_objective(sv, dual_coef: np.ndarray, kernel: Kernel) -> float:
    """sum |coef| - 1/2 coef' K coef over the support vectors."""
    if not len(dual_coef):
        return 0.0
    quad = float(dual_coef @ decision_values(sv, sv, dual_coef, 0.0, kernel))
    return float(np.abs(dual_coef).sum() - 0.5 * quad)


def solve_binary(X, y: np.ndarray, params: SolverParams, n_threads: int = 1) -> BinarySolution:
    """Solve C-SVM on (X, y) with LIBSVM.

    Args:
        X: (n, d) float32 ndarray or CSR.
        y: (n,) labels in {-1, +1}.
        params: SolverParams.
        n_threads: OpenMP threads of this solve (LIBSVM computes kernel columns in
            parallel). Set for this call only, whatever OMP_NUM_THREADS says (a Dask nanny
            sets it to 1): the driver gives a solve the cores that would otherwise idle.

    Returns:
        BinarySolution. If y holds one class only, the solution has no support vectors
        and intercept +1 or -1 (every row of that class sits on the margin).
    """
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    y = np.asarray(y, dtype=np.float64)
    present = np.unique(y)
    if len(present) < 2:
        return BinarySolution(np.empty(0, np.int64), np.empty(0), float(present[0])
                              if len(present) else 1.0, 0.0)
    Xc = X if sp.issparse(X) else sp.csr_matrix(X)
    Xc = sp.csr_matrix(Xc, dtype=np.float64)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=max(1, int(n_threads)), user_api="openmp"):
        model = svm_train(svm_problem(y, Xc), svm_parameter(params.options()))
    support = np.asarray(model.get_sv_indices(), dtype=np.int64) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()], dtype=np.float64)
    rho = float(model.rho[0])
    if model.get_labels()[0] == -1:  # LIBSVM orients f(x) towards its first label
        coef, rho = -coef, -rho
    order = np.argsort(support, kind="stable")
    support, coef = support[order], coef[order]
    return BinarySolution(support, coef, -rho, dual_objective(X[support], coef,
                                                              params.kernel))
