"""The RBF part of a decision value in one pass over a row's squared distances (numba).

Two ways to get a row's squared distances ||x - s_j||^2 to every support vector:

- ``rbf_accumulate``: from a block of dot products G = X S' (BLAS), as
  x_sq + s_sq - 2 G. After the GEMM, numpy would need five passes over the kernel block
  (scale, two subtractions, clip, exp) plus a matrix-vector product, and its ``exp`` runs
  one element at a time through a library call: about a third of what BLAS alone reaches.
- ``rbf_direct_accumulate``: directly from the features, for data with at most
  ``DIRECT_MAX_FEATURES`` features. There the GEMM has an inner dimension of 2-4, so it
  only writes G to memory for the exp pass to read back; computing the distances in the
  same loop skips that round trip (one core, 20,000 rows x 12,000 support vectors: 1.83
  vs 1.12 G evaluations/s at d=2, 1.45 vs 1.11 at d=4, 0.92 vs 1.01 at d=8, 0.84 vs 0.98
  at d=10; ``benchmarks/bench_scan_rate.py`` measures both kernels).

Either way each row's kernel values are formed and exponentiated in one pass (for G,
the distance in the same pass), then summed against each model's coefficients in a
second, while they are in cache (one core, 400 rows x 10,155 support vectors of G: 2.5 G
evaluations/s for one model, where four passes, the scale 2^k in a pass of its own, took
1.8), with an ``exp`` the compiler vectorises:

    e^x = 2^t, t = x log2(e) = k + f, k = round(t), f in [-1/2, 1/2]
    2^f ~ its degree-6 Taylor polynomial (remainder (ln2 / 2)^7 / 7! < 1.3e-7 on [-1/2, 1/2];
    on [0, 1) it would be 1.5e-5), 2^k set in the exponent bits.

The arguments are -gamma ||x - s||^2 <= 0, clipped at -87 (e^-87 ~ 1.6e-38, the smallest
normal float32), so the exponent bits never underflow. Partial sums run in float32 over
blocks of ``SUM_BLOCK`` coefficients and are added in float64, which keeps the rounding of a
sum over tens of thousands of support vectors at float32's relative precision.

Accuracy (why float32 serves): a kernel value's error is the exp's (1.3e-7 relative) plus
that of the float32 squared distance (a few float32 ulps of |x|^2 + |s|^2 in the GEMM
form, times gamma; of |x - s|^2 in the direct one); on scaled data every value is within
``exact.scan.screening.KERNEL_VALUE_ERROR`` (1e-6 absolute) of the float64 one, so a decision
value is within 1e-6 sum_j |coef_j| of it (``tests/numerics/test_rbf_fused.py`` checks both forms
and CSR one-hot rows against a float64 reference). The scan's decisions allow for that:
screening pads its residual norms by it and keeps rows SCREEN_SLACK clear of every
threshold (``exact.scan.partition``). Each row's value is computed on its own (one row of G, one
pass), so it is the same bytes whatever rows, tasks or threads it is scanned with.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.extending import intrinsic

LOG2E = np.float32(1.4426950408889634)
# The one signature each kernel is compiled for, when this module is imported (numba's
# ``cache=True`` keeps the machine code): C-contiguous arrays, the inputs read-only (a
# writable array converts to them, so read-only data needs no copy and no second
# specialisation), the accumulator writable.
_F4_1D = nb.types.Array(nb.float32, 1, "C", readonly=True)
_F4_2D = nb.types.Array(nb.float32, 2, "C", readonly=True)
_OUT = nb.float64[:, ::1]
SUM_BLOCK = 1024
DIRECT_MAX_FEATURES = 4


@intrinsic
def _float_bits(typingctx, bits):
    """The float32 whose bits are the int32 ``bits`` (an LLVM bitcast: free, and it
    vectorises with the loop around it)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(nb.types.float32))

    return nb.types.float32(nb.types.int32), codegen


@nb.njit(fastmath=True, cache=True, nogil=True, inline="always")
def _exp(x):
    """e^x for float32 x <= 0 (the module doc's polynomial and exponent bits)."""
    t = max(x, np.float32(-87.0)) * LOG2E
    k = np.floor(t + np.float32(0.5))
    f = t - k
    p = np.float32(1.5403530e-4)
    p = p * f + np.float32(1.3333558e-3)
    p = p * f + np.float32(9.6181291e-3)
    p = p * f + np.float32(5.5504109e-2)
    p = p * f + np.float32(2.4022650e-1)
    p = p * f + np.float32(6.9314718e-1)
    scale = _float_bits((np.int32(k) + np.int32(127)) << np.int32(23))
    return (p * f + np.float32(1.0)) * scale


@nb.njit(fastmath=True, cache=True, nogil=True, inline="always")
def _dot_rows(e, coefT, out, i):
    """out[i, q] += sum_j coefT[q, j] e[j], in float32 over blocks of SUM_BLOCK added in
    float64: each model's sum reads the same e, so a model's values are the same bits
    whatever other models share the call. The sums run over contiguous slices indexed
    from 0: indexed from a block's start, LLVM cannot rule out numba's negative-index
    wraparound and gathers every element (a third of the kernel's time at d=10,
    measured); the values are the same bits."""
    m = e.shape[0]
    for q in range(coefT.shape[0]):
        total = 0.0
        for s in range(0, m, SUM_BLOCK):
            hi = min(s + SUM_BLOCK, m)
            e_block = e[s:hi]
            c_block = coefT[q, s:hi]
            acc = np.float32(0.0)
            for j in range(hi - s):
                acc += e_block[j] * c_block[j]
            total += acc
        out[i, q] += total


@nb.njit(nb.void(_F4_2D, _F4_1D, _F4_1D, _F4_2D, nb.float64, _OUT), fastmath=True,
         cache=True, nogil=True)
def rbf_accumulate(G: np.ndarray, x_sq: np.ndarray, s_sq: np.ndarray, coefT: np.ndarray,
                   gamma: float, out: np.ndarray) -> None:
    """out[i, p] += sum_j coefT[p, j] exp(-gamma max(x_sq[i] + s_sq[j] - 2 G[i, j], 0)).

    Args:
        G: (n, m) float32 dot products x_i . s_j.
        x_sq, s_sq: (n,), (m,) float32 squared row norms of X and S.
        coefT: (P, m) float32 coefficients, one row per model.
        gamma: the RBF width (> 0).
        out: (n, P) float64, accumulated into.
    """
    n, m = G.shape
    g = np.float32(gamma)
    e = np.empty(m, np.float32)
    for i in range(n):
        xi = x_sq[i]
        for j in range(m):
            e[j] = _exp(-g * max(xi + s_sq[j] - np.float32(2.0) * G[i, j], np.float32(0.0)))
        _dot_rows(e, coefT, out, i)


@nb.njit(nb.void(_F4_2D, _F4_2D, _F4_2D, nb.float64, _OUT), fastmath=True, cache=True,
         nogil=True)
def rbf_direct_accumulate(X: np.ndarray, ST: np.ndarray, coefT: np.ndarray, gamma: float,
                          out: np.ndarray) -> None:
    """out[i, p] += sum_j coefT[p, j] exp(-gamma ||X[i] - ST[:, j]||^2), no GEMM.

    Args:
        X: (n, d) float32 rows, d >= 1 (meant for d <= DIRECT_MAX_FEATURES).
        ST: (d, m) float32 support vectors, transposed (C-contiguous).
        coefT: (P, m) float32 coefficients, one row per model.
        gamma: the RBF width (> 0).
        out: (n, P) float64, accumulated into.
    """
    n, d = X.shape
    m = ST.shape[1]
    g = np.float32(gamma)
    dd = np.empty(m, np.float32)
    e = np.empty(m, np.float32)
    for i in range(n):
        x0 = X[i, 0]
        for j in range(m):
            t = x0 - ST[0, j]
            dd[j] = t * t
        for k in range(1, d):
            xk = X[i, k]
            for j in range(m):
                t = xk - ST[k, j]
                dd[j] += t * t
        for j in range(m):
            e[j] = _exp(-g * dd[j])
        _dot_rows(e, coefT, out, i)
