"""Kernels with LIBSVM's parameter meanings, evaluated in chunked float32 BLAS.

- linear:  u'v
- poly:    (gamma u'v + coef0) ** degree
- rbf:     exp(-gamma |u - v|^2)
- sigmoid: tanh(gamma u'v + coef0)

``gamma`` may be a number, ``'scale'`` (1 / (n_features * X.var())) or ``'auto'``
(1 / n_features), as in scikit-learn.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError

KERNELS = ("linear", "poly", "rbf", "sigmoid")
LIBSVM_KERNEL_TYPE = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
CHUNK_ROWS = 16384
# Kernel blocks of about this many entries stay in cache: 4x faster than 16k-row blocks
# against thousands of SVs (measured by hand on 2 cores; benchmarks/bench_scan_rate.py times
# the scan built on them).
BLOCK_ENTRIES = 1 << 20


_blas_lock = threading.Lock()
_blas_users = 0
_blas_state: dict = {}


@contextmanager
def single_threaded_blas():
    """Run the block below with one BLAS thread, restoring the count afterwards.

    The kernel blocks are small by design (BLOCK_ENTRIES): a multi-threaded GEMM per block
    spends its time waking and syncing threads, and far more when the cores are busy
    (measured by hand on 2 busy cores: 4-10x slower decision values in a process
    whose BLAS had 2 threads, as a driver or an in-process worker has). Dask's worker
    processes already run one BLAS thread. Nested and concurrent uses share one limit; the
    last to leave restores the count.
    """
    global _blas_users
    with _blas_lock:
        if _blas_users == 0:
            try:
                from threadpoolctl import ThreadpoolController

                controller = _blas_state.get("controller")
                if controller is None:
                    controller = _blas_state["controller"] = ThreadpoolController()
                _blas_state["limit"] = controller.limit(limits=1, user_api="blas")
            except Exception:   # no threadpoolctl or no BLAS found: nothing to limit
                _blas_state["limit"] = None
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_state.get("limit") is not None:
                _blas_state.pop("limit").restore_original_limits()


@dataclass(frozen=True)
class Kernel:
    """A kernel with resolved numeric parameters (as LIBSVM takes them)."""

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ParameterError(f"kernel must be one of {KERNELS}; got {self.name!r}")
        if self.name != "linear" and not (np.isfinite(self.gamma) and self.gamma > 0):
            raise ParameterError(f"gamma must be > 0; got {self.gamma!r}")
        if self.name == "poly" and (int(self.degree) != self.degree or self.degree < 1):
            raise ParameterError(f"degree must be a positive integer; got {self.degree!r}")

    def __call__(self, X, Y) -> np.ndarray:
        """Kernel matrix K[i, j] = k(X[i], Y[j]) as float32 (X, Y dense or CSR)."""
        return kernel_matrix(X, Y, self)


def resolve_gamma(gamma, X=None, n_features: int | None = None,
                  x_var: float | None = None) -> float:
    """Turn ``gamma`` ('scale', 'auto' or a number) into a float.

    Args:
        gamma: number, 'scale' or 'auto'.
        X: sample of the data (used for 'scale' when x_var is not given).
        n_features: feature count (taken from X if None).
        x_var: variance of all feature values (for 'scale' without X).

    Raises:
        ParameterError: unknown string, non-positive number, or 'scale' without data.
    """
    if n_features is None and X is not None:
        n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "auto":
            return 1.0 / n_features
        if gamma == "scale":
            if x_var is None:
                if X is None:
                    raise ParameterError("gamma='scale' needs the data's variance")
                x_var = moments_variance([value_moments(X)])
            return float(1.0 / (n_features * x_var)) if x_var > 0 else 1.0
        raise ParameterError(f"gamma must be a number, 'scale' or 'auto'; got {gamma!r}")
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ParameterError(f"gamma must be a number, 'scale' or 'auto'; got {gamma!r}") from None
    if not (np.isfinite(g) and g > 0):
        raise ParameterError(f"gamma must be > 0; got {gamma!r}")
    return g


def value_moments(X) -> tuple[int, float, float]:
    """Moments of all feature values of X, for gamma='scale' over many blocks.

    Returns:
        (number of values incl. a sparse matrix's implicit zeros, their sum, sum of squares),
        in float64.
    """
    d = X.data if sp.issparse(X) else X
    d = np.asarray(d, dtype=np.float64).ravel()
    return X.shape[0] * X.shape[1], float(d.sum()), float(d @ d)


def moments_variance(moments) -> float:
    """Variance of all feature values from the ``value_moments`` of the blocks holding them
    (the one formula behind gamma='scale' = 1 / (n_features * variance))."""
    moments = list(moments)
    n = sum(m[0] for m in moments)
    if not n:
        return 0.0
    s = sum(m[1] for m in moments)
    ss = sum(m[2] for m in moments)
    return max(ss / n - (s / n) ** 2, 0.0)


def row_sq_norms(X) -> np.ndarray:
    """Squared Euclidean norm of each row, float32 (dense or CSR)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float32).ravel()
    return np.einsum("ij,ij->i", X, X, dtype=np.float32)


def kernel_diagonal(X, kernel: Kernel) -> np.ndarray:
    """k(x_i, x_i) of each row of X, float64 (dense or CSR)."""
    dots = row_sq_norms(X).astype(np.float64)
    if kernel.name == "linear":
        return dots
    if kernel.name == "rbf":
        return np.ones(len(dots))
    inner = kernel.gamma * dots + kernel.coef0
    return inner ** int(kernel.degree) if kernel.name == "poly" else np.tanh(inner)


def _dot(X, Y) -> np.ndarray:
    out = X @ Y.T
    if sp.issparse(out):
        out = out.toarray()
    return np.asarray(out, dtype=np.float32)


def kernel_matrix(X, Y, kernel: Kernel, y_sq_norms: np.ndarray | None = None) -> np.ndarray:
    """Kernel matrix between the rows of X and Y in float32.

    Args:
        X, Y: float32 ndarray or CSR, same feature count.
        kernel: a resolved Kernel.
        y_sq_norms: precomputed row_sq_norms(Y) (rbf only).

    Returns:
        ndarray (len(X), len(Y)) float32.
    """
    return _kernel_of_dots(_dot(X, Y), X, Y, kernel, y_sq_norms)


def _kernel_of_dots(K: np.ndarray, X, Y, kernel: Kernel,
                    y_sq_norms: np.ndarray | None = None) -> np.ndarray:
    """The kernel matrix from the dot products K = X Y' (float32, overwritten)."""
    if kernel.name == "linear":
        return K
    g = np.float32(kernel.gamma)
    if kernel.name == "rbf":
        yn = row_sq_norms(Y) if y_sq_norms is None else y_sq_norms
        xn = row_sq_norms(X)
        K *= np.float32(2.0)
        K -= xn[:, None]
        K -= yn[None, :]
        np.minimum(K, 0, out=K)
        K *= g
        np.exp(K, out=K)
        return K
    K *= g
    K += np.float32(kernel.coef0)
    if kernel.name == "poly":
        return K ** int(kernel.degree)
    np.tanh(K, out=K)
    return K


# A kernel block's dot products with the support vectors are a sparse product (CSR rows
# times the dense SVs) when the support vectors have fewer non-zeros than this share of
# their cells, else a dense GEMM (CSR rows are densified block by block). The support
# vectors are rows of the data, and deciding by them gives every block and every task of
# a scan the same product: a row's value never depends on the rows it is scanned with
# (nor on the workers). The sparse product costs ~ nnz x |SV| multiply-adds at scipy's
# rate, the GEMM d x |SV| per row at BLAS's; ``benchmarks/bench_scan_sparse.py`` measures
# both and prints the crossover density.
# The values are those of the RBF scan measurements in ``engine/layout.py`` (CSR ahead
# below 0.2 at 300-800 features, below 0.5 at 120, where the exp dominates).
SPARSE_PRODUCT_DENSITY = 0.2
SPARSE_PRODUCT_DENSITY_FEW = 0.5
FEW_FEATURES = 200


def sparse_product_pays(X) -> bool:
    """Whether kernel blocks against the rows X (dense or CSR; the support vectors) run as
    a sparse product: their density is below SPARSE_PRODUCT_DENSITY_FEW (at most
    FEW_FEATURES features) or SPARSE_PRODUCT_DENSITY (more)."""
    cells = X.shape[0] * X.shape[1]
    if not cells:
        return False
    nnz = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    limit = SPARSE_PRODUCT_DENSITY_FEW if X.shape[1] <= FEW_FEATURES else SPARSE_PRODUCT_DENSITY
    return nnz < limit * cells


# CSR support vectors of at most this many float32 bytes are densified once per call: a
# CSR x CSR product is ~8x slower than CSR rows against dense support vectors (a9a's
# 32,561 rows against 11,338 support vectors: 10.7 s against 1.3 s)
DENSE_SV_BYTES = 256 << 20


def dense_support_vectors(S):
    """S as a C-contiguous float32 array when it is CSR of at most DENSE_SV_BYTES dense
    bytes (or already dense); larger CSR support vectors unchanged."""
    if sp.issparse(S) and S.shape[0] * S.shape[1] * 4 <= DENSE_SV_BYTES:
        return np.ascontiguousarray(S.toarray(), dtype=np.float32)
    return S


class _BlockDots:
    """Dot products of row blocks of X with the support vectors S, in float32, by the
    product ``sparse_product_pays`` picks for S: CSR blocks against S' (made C-contiguous
    once: scipy would copy a transposed view for every block), or a GEMM into one buffer
    (a fresh one per block costs page faults when glibc's mmap threshold is fixed, as in
    Dask's worker processes (MALLOC_TRIM_THRESHOLD_ set by the nanny): 2x slower scans,
    measured). CSR support vectors too large to densify (``dense_support_vectors``) take
    scipy's sparse product."""

    def __init__(self, X, S, chunk_rows: int):
        S = dense_support_vectors(S)
        self.S = S
        self.mode = "sparse_sv" if sp.issparse(S) else (
            "csr" if sparse_product_pays(S) else "dense")
        if self.mode == "csr":
            self.ST = np.ascontiguousarray(np.asarray(S, dtype=np.float32).T)
        elif self.mode == "dense":
            self.S = np.asarray(S, dtype=np.float32)
            self.G = np.empty((min(chunk_rows, X.shape[0]), S.shape[0]), dtype=np.float32)

    def __call__(self, block) -> np.ndarray:
        """(len(block), |S|) float32 dot products (a view of a reused buffer when dense)."""
        if self.mode == "sparse_sv":
            return _dot(block, self.S)
        if self.mode == "csr":
            rows = block if sp.issparse(block) else sp.csr_matrix(block)
            return np.asarray(rows @ self.ST, dtype=np.float32)
        rows = block.toarray() if sp.issparse(block) else block
        return np.matmul(np.asarray(rows, dtype=np.float32), self.S.T,
                         out=self.G[:rows.shape[0]])


def block_rows(n_sv: int) -> int:
    """Rows per kernel block of ``decision_values`` against n_sv support vectors (about
    BLOCK_ENTRIES entries); a row's value depends only on its block, so callers that cut
    rows at multiples of it get the values of one call over all of them."""
    return int(np.clip(BLOCK_ENTRIES // max(n_sv, 1), 64, CHUNK_ROWS))


def decision_values(X, support_vectors, coef: np.ndarray, intercept: float | np.ndarray,
                    kernel: Kernel, chunk_rows: int | None = None) -> np.ndarray:
    """f(x) = sum_j coef[j] k(sv_j, x) + intercept, chunked over the rows of X.

    Args:
        X: rows to score (float32 dense or CSR).
        support_vectors: (n_sv, n_features) float32 dense or CSR.
        coef: (n_sv,) or (n_sv, n_models) dual coefficients (y_j alpha_j).
        intercept: scalar or (n_models,) (LIBSVM's -rho).
        kernel: resolved Kernel.
        chunk_rows: rows per kernel block (default: blocks of about BLOCK_ENTRIES).

    Returns:
        float64 array (n_rows,) or (n_rows, n_models).
    """
    coef = np.asarray(coef, dtype=np.float32)
    squeeze = coef.ndim == 1
    coef2 = coef[:, None] if squeeze else coef
    n = X.shape[0]
    if chunk_rows is None:
        chunk_rows = block_rows(coef2.shape[0])
    out = np.empty((n, coef2.shape[1]), dtype=np.float64)
    with single_threaded_blas():
        _accumulate(X, support_vectors, coef2, kernel, chunk_rows, out)
    out += np.asarray(intercept, dtype=np.float64)
    return out[:, 0] if squeeze else out


def _accumulate(X, support_vectors, coef2: np.ndarray, kernel: Kernel, chunk_rows: int,
                out: np.ndarray) -> None:
    """out = the kernel part of the decision values (see ``decision_values``)."""
    n = X.shape[0]
    if kernel.name == "linear":
        w = np.asarray(support_vectors.T @ coef2, dtype=np.float32)
        for s in range(0, n, chunk_rows):
            out[s:s + chunk_rows] = np.asarray(X[s:s + chunk_rows] @ w)
        return
    out[:] = 0.0
    if not support_vectors.shape[0]:
        return
    if kernel.name == "rbf":
        from randsvm_dist.numerics.rbf_fused import (
            DIRECT_MAX_FEATURES,
            rbf_accumulate,
            rbf_direct_accumulate,
        )

        coefT = np.ascontiguousarray(coef2.T)
        if (not sp.issparse(X) and not sp.issparse(support_vectors)
                and 1 <= X.shape[1] <= DIRECT_MAX_FEATURES):
            ST = np.ascontiguousarray(np.asarray(support_vectors, dtype=np.float32).T)
            rbf_direct_accumulate(np.ascontiguousarray(X, dtype=np.float32), ST, coefT,
                                  float(kernel.gamma), out)
            return
    yn = row_sq_norms(support_vectors)
    dots = _BlockDots(X, support_vectors, chunk_rows)
    for s in range(0, n, chunk_rows):
        block = X[s:s + chunk_rows]
        if kernel.name == "rbf":
            rbf_accumulate(np.ascontiguousarray(dots(block)), row_sq_norms(block), yn, coefT,
                           float(kernel.gamma), out[s:s + chunk_rows])
        else:
            out[s:s + chunk_rows] = _kernel_of_dots(dots(block), block, support_vectors,
                                                    kernel, yn) @ coef2


def dense_if_compact(X):
    """A CSR matrix of at most 4096 columns and over 25% non-zeros as a dense float32
    array (dense kernel evaluations are faster then); anything else unchanged."""
    if sp.issparse(X) and X.shape[1] <= 4096 and X.nnz > 0.25 * X.shape[0] * X.shape[1]:
        return np.ascontiguousarray(X.toarray(), dtype=np.float32)
    return X


def decision_values_float64(X, support_vectors, coef: np.ndarray,
                            intercept: float | np.ndarray, kernel: Kernel,
                            chunk_rows: int = 4096) -> np.ndarray:
    """``decision_values`` computed in float64 throughout, as LIBSVM computes them (for
    probabilities that must match stock LIBSVM's to 1e-6; the float32 path is faster and
    decides the same labels).

    Returns:
        float64 array (n_rows,) or (n_rows, n_models).
    """
    from sklearn.metrics.pairwise import pairwise_kernels

    metric = {"linear": "linear", "rbf": "rbf", "poly": "polynomial",
              "sigmoid": "sigmoid"}[kernel.name]
    params = {} if kernel.name == "linear" else {"gamma": kernel.gamma}
    if kernel.name in ("poly", "sigmoid"):
        params["coef0"] = kernel.coef0
    if kernel.name == "poly":
        params["degree"] = kernel.degree
    coef = np.asarray(coef, dtype=np.float64)
    sv = support_vectors.astype(np.float64)
    out = np.empty((X.shape[0], *coef.shape[1:]), dtype=np.float64)
    for s in range(0, X.shape[0], chunk_rows):
        K = pairwise_kernels(X[s:s + chunk_rows].astype(np.float64), sv, metric=metric,
                             **params)
        out[s:s + chunk_rows] = K @ coef + intercept
    return out
