"""Row layout: CSR or dense, chosen by density for the whole data set."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# Rows are kept as CSR below these densities (share of non-zeros), dense above. Measured
# (best of 3; a one-off timing, no script in benchmarks/ repeats it) on a scan's kernel
# block (``kernels.decision_values``, RBF, 20,000 rows x 1,000 dense support vectors), CSR
# time over dense time:
#
#   features \ density   0.02  0.05  0.10  0.20  0.30  0.50  0.70  1.00
#   120                  0.31  0.34  0.38  0.51  0.66  0.77  1.59  1.42
#   300                              0.43  1.06  1.16  2.01
#   800                  0.20  0.28  0.72  0.88  1.97  1.96
#
# Solves: libsvm-official turns every input into sparse nodes (cost ~ nnz, the same for
# both layouts, within noise: 3,000 rows, d = 120 and 800, densities 0.02-0.4); weighted
# solves (scikit-learn's LIBSVM, dense or sparse kernels) at d = 800: CSR 0.8x dense time at
# density 0.02, 0.7x at 0.2, 1.4x at 0.4; at d = 120 within 10% either way up to 0.4.
# So CSR below 0.2 everywhere, and up to 0.5 when there are few features (the exp of the
# kernel, the same in both layouts, dominates there and the sparse product is cheap).
SPARSE_DENSITY = 0.2
SPARSE_DENSITY_FEW = 0.5
FEW_FEATURES = 200


def preferred_layout(nnz: int, n_rows: int, n_features: int) -> str:
    """'csr' or 'dense': the layout scans and solves run fastest on, by density.

    LIBSVM (libsvm-official) stores rows as sparse nodes whatever the input, so its solves
    cost ~ nnz either way; the scan's kernel blocks run on BLAS for dense rows and on a
    sparse product for CSR, which wins below a density that falls with the feature count;
    weighted solves (scikit-learn's LIBSVM) follow the same trend. The measurements are
    above SPARSE_DENSITY.

    Args:
        nnz: non-zero feature values of the rows.
        n_rows, n_features: the rows' shape.

    Returns:
        'csr' when the density nnz / (n_rows x n_features) is below SPARSE_DENSITY_FEW
        (at most FEW_FEATURES features) or SPARSE_DENSITY (more), else 'dense'.
    """
    cells = max(1, int(n_rows) * int(n_features))
    limit = SPARSE_DENSITY_FEW if n_features <= FEW_FEATURES else SPARSE_DENSITY
    return "csr" if nnz < limit * cells else "dense"


def as_layout(X, layout: str):
    """X as float32 CSR ('csr') or C-ordered dense ('dense'); unchanged if already so."""
    if layout == "csr" and not sp.issparse(X):
        out = sp.csr_matrix(np.asarray(X, np.float32))
        out.sort_indices()
        return out
    if layout == "dense" and sp.issparse(X):
        return np.ascontiguousarray(X.toarray(), dtype=np.float32)
    return X
