"""When oneDAL solves a working set rather than LIBSVM: the solver 'auto' rule
(``onedal_pays`` states it; every other text links there).

Why: LIBSVM evaluates the kernel one pair at a time, oneDAL kernel blocks with BLAS at a
fixed cost per solve, so oneDAL wins where kernel evaluations are expensive. The
measurements behind the thresholds: docs/decisions.md ("oneDAL or LIBSVM").
"""

from __future__ import annotations

import scipy.sparse as sp

from randsvm_dist.solvers.onedal_backend import onedal_solves
from randsvm_dist.solvers.onedal_runtime import onedal_available
from randsvm_dist.solvers.params import SolverParams

AUTO_MIN_ROWS = 500  # below: oneDAL's fixed cost per solve outweighs its faster kernel
AUTO_MIN_DENSE_FEATURES = 10  # whole fits: d=20 faster with oneDAL, d=2 about even
AUTO_MIN_SPARSE_NNZ = 5  # mean non-zeros per row; from 5 oneDAL was ~2x faster


def prefer_onedal(X, params: SolverParams, weighted: bool = False) -> bool:
    """Should oneDAL solve this working set? (``onedal_pays`` on X's counts)

    Args:
        X: the working set's rows (ndarray or CSR).
        params: the problem.
        weighted: the rows carry per-row boxes (LIBSVM's alternative is then scikit-learn's
            single-threaded copy, ``solvers.weighted``).

    Returns:
        ``onedal_pays`` for X's rows, features and (CSR) non-zeros.
    """
    return onedal_pays(X.shape[0], X.shape[1], X.nnz if sp.issparse(X) else None, params,
                       weighted)


def onedal_pays(n_rows: int, n_features: int, nnz: int | None, params: SolverParams,
                weighted: bool = False) -> bool:
    """The 'auto' rule: oneDAL solves a working set when this is True (the one statement of
    the rule; why: docs/decisions.md).

    Args:
        n_rows, n_features: the working set's shape.
        nnz: its non-zeros when CSR, None when dense.
        params: the problem.
        weighted: the rows carry per-row boxes.

    Returns:
        True when oneDAL is installed, solves this problem (``onedal_solves``), and the
        working set has at least AUTO_MIN_ROWS rows that are weighted, or CSR with at least
        AUTO_MIN_SPARSE_NNZ non-zeros per row on average, or dense with at least
        AUTO_MIN_DENSE_FEATURES features.
    """
    if n_rows < AUTO_MIN_ROWS or not onedal_solves(params):
        return False
    heavy = weighted or (nnz >= AUTO_MIN_SPARSE_NNZ * n_rows if nnz is not None
                         else n_features >= AUTO_MIN_DENSE_FEATURES)
    return heavy and onedal_available()
