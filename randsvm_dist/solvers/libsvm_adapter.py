"""Solve one LIBSVM problem (C-SVC, epsilon-SVR or one-class) on one sample with
libsvm-official; return arrays (``solvers.solution.BinarySolution``).

The parameters and problem kinds are ``solvers.params``'s, the dual objective
``solvers.dual_objective``'s, the thread count ``solvers.threads``'s. Per-row box
constraints (sample weights) are in ``randsvm_dist.solvers.weighted``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randsvm_dist.solvers.params import C_SVC, ONE_CLASS, SolverParams
from randsvm_dist.solvers.solution import BinarySolution, degenerate_solution, finish_solution
from randsvm_dist.solvers.threads import kernel_row_terms, step_threads

# LIBSVM's wait per parallel step and extra thread, in terms (``solvers.threads``: about an
# OpenMP barrier)
LIBSVM_SYNC_TERMS = 100.0


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
