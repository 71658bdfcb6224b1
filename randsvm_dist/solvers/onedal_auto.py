"""When oneDAL solves a working set rather than LIBSVM: the solver 'auto' rule.

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

import scipy.sparse as sp

from randsvm_dist.solvers.onedal_backend import onedal_solves
from randsvm_dist.solvers.onedal_runtime import onedal_available
from randsvm_dist.solvers.params import SolverParams

AUTO_MIN_ROWS = 500
AUTO_MIN_DENSE_FEATURES = 10
AUTO_MIN_SPARSE_NNZ = 5  # mean non-zeros per row


def prefer_onedal(X, params: SolverParams, weighted: bool = False) -> bool:
    """The 'auto' rule: should oneDAL solve this working set (module docstring: why)?

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
    """The 'auto' rule on counts (``prefer_onedal``).

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
