"""Compiled merge maths of :class:`.budgeted_sgd.BudgetedSGD` (numba): the
golden-section merge of two weighted points (the M-point gradient merge is
:mod:`._gradient`'s).

Merge maths (Gaussian kernel ``k(a, b) = exp(-gamma |a - b|^2)``), derived here because the
paper states it in words only:

- For a fixed merged point ``z`` the best coefficient is ``alpha_z = sum_i alpha_i k(x_i, z)``
  (``k(z, z) = 1``), and the weight degradation is
  ``|Delta|^2 = sum_ij alpha_i alpha_j k(x_i, x_j) - alpha_z^2``. Minimizing the degradation
  is maximizing ``alpha_z^2``.
- Two points ``x_m, x_n`` (``|alpha_m| >= |alpha_n|``), ``z = h x_m + (1 - h) x_n`` and
  ``L = gamma |x_m - x_n|^2``: ``alpha_z(h) = alpha_m e^{-L (1-h)^2} + alpha_n e^{-L h^2}``.
  Same signs: the maximizer lies in [0, 1]. Opposite signs: setting the derivative to zero
  gives ``alpha_m (h-1) = |alpha_n| h e^{-L (2h-1)}`` which, for ``h > 1``, forces
  ``1 < h < alpha_m / (alpha_m + alpha_n)``; the same equation shows the derivative is
  negative at ``h = 1 + 5 / sqrt(L)``. So the golden-section bracket is
  ``[1, 1 + min(alpha_m/(alpha_m+alpha_n) - 1, 5/sqrt(L))]``. Since ``alpha_z(h)`` may be
  bimodal on [0, 1] for far-apart points, the search result is also compared with the two
  end points (``z = x_m`` or ``z = x_n``).

Each kernel is compiled for its one signature (:mod:`._types`) on import.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from randsvm_dist.streaming.bsgd._types import F8, F8_1D, F8_2D, I8

INV_PHI = 0.6180339887498949  # 1 / golden ratio
# Iteration counts are numpy integers: a Python int constant reaches a jitted callee as a
# literal type, compiling one specialisation per value (numba's compile time dominates a
# first fit); np.int64 is typed int64 everywhere, so each kernel compiles once.
# partner ranking: 0.618^12 ~ 3e-3 of the bracket; the degradation is flat (quadratic) near
# its minimum, so this ranks partners like a full search at half the cost
GOLDEN_ITERS_SELECT = np.int64(12)
GOLDEN_ITERS_MERGE = np.int64(40)  # ~ 4e-9: the executed merge is solved to near machine precision
#: golden_pair's (h, alpha_z, degradation)
PAIR = types.UniTuple(F8, 3)


@njit(F8(F8, F8, F8, F8), cache=True, no_cfunc_wrapper=True)
def _alpha_z_pair(h, am, an, L):
    """alpha_z for z = h x_m + (1-h) x_n (see module docstring)."""
    return am * math.exp(-L * (1.0 - h) * (1.0 - h)) + an * math.exp(-L * h * h)


@njit(PAIR(F8, F8, F8, I8), cache=True, no_cfunc_wrapper=True)
def golden_pair(am, an, L, iters):
    """Best merge of two points along their line.

    Args:
        am, an: coefficients of x_m and x_n (any signs, not both zero).
        L: gamma * |x_m - x_n|^2 (>= 0).
        iters: golden-section iterations.

    Returns:
        (h, alpha_z, degradation) with z = h x_m + (1 - h) x_n and
        degradation = am^2 + an^2 + 2 am an e^{-L} - alpha_z^2 (clipped at 0).
    """
    k = math.exp(-L)
    total = am * am + an * an + 2.0 * am * an * k
    if L < 1e-14 or an == 0.0 or am == 0.0:
        # identical points (any h) or nothing to merge: keep the point with the weight
        h = 1.0 if abs(am) >= abs(an) else 0.0
        az = _alpha_z_pair(h, am, an, L)
        lost = total - az * az
        return h, az, 0.0 if 0.0 > lost else lost
    swap = abs(an) > abs(am)
    if swap:  # make x_m the point with the larger |alpha|; h' = 1 - h
        am, an = an, am
    if am * an > 0.0:
        lo, hi = 0.0, 1.0
    else:
        lo = 1.0
        width = 5.0 / math.sqrt(L)
        if abs(am + an) > 0.0:  # am / (am + an) - 1 = -an / (am + an) > 0 bounds h
            bound = -an / (am + an)
            if bound < width:
                width = bound
        hi = 1.0 + width
    a, b = lo, hi
    c = b - INV_PHI * (b - a)
    d = a + INV_PHI * (b - a)
    fc = abs(_alpha_z_pair(c, am, an, L))
    fd = abs(_alpha_z_pair(d, am, an, L))
    for _ in range(iters):
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - INV_PHI * (b - a)
            fc = abs(_alpha_z_pair(c, am, an, L))
        else:
            a, c, fc = c, d, fd
            d = a + INV_PHI * (b - a)
            fd = abs(_alpha_z_pair(d, am, an, L))
    h = 0.5 * (a + b)
    best = abs(_alpha_z_pair(h, am, an, L))
    for k in range(4):  # the bracket's ends and the two points themselves
        cand = lo if k == 0 else (hi if k == 1 else float(k - 2))
        f = abs(_alpha_z_pair(cand, am, an, L))
        if f > best:
            best, h = f, cand
    az = _alpha_z_pair(h, am, an, L)
    if swap:
        h = 1.0 - h
    lost = total - az * az
    return h, az, 0.0 if 0.0 > lost else lost


@njit(F8(F8_2D, I8, F8_1D, F8, F8_1D), cache=True, no_cfunc_wrapper=True)
def sqdist(sv, i, z, zsq, sqn):
    """|sv[i] - z|^2 from the stored norm sqn[i] and the dot product."""
    s = 0.0
    for f in range(sv.shape[1]):
        s += sv[i, f] * z[f]
    d2 = sqn[i] + zsq - 2.0 * s
    return 0.0 if 0.0 > d2 else d2


