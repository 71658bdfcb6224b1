"""The M-point gradient merge of :class:`.budgeted_sgd.BudgetedSGD`
(MM-GD, ``merge_method='gradient'``; numba): the merge maths and the budget maintenance
step using it.

``grad_z alpha_z = 2 gamma sum_i alpha_i k(x_i, z) (x_i - z)`` (``alpha_z`` and the weight
degradation as in :mod:`._merge`); gradient ascent on ``alpha_z^2`` with a
backtracking (Armijo) step. The paper's Algorithm 2 prints its loop condition as
``while |Delta_t| < eps``, which would stop at once; we iterate *until* the relative gain
in ``alpha_z^2`` falls below ``eps``. Its start point ``sum alpha_i x_i / sum alpha_i`` is
undefined when the coefficients cancel, so we start from the best (largest
``|alpha_z|``) of: that weighted mean (when defined), the ``|alpha|``-weighted mean, and
the M points themselves.

Each kernel is compiled for its one signature (:mod:`._types`) when this module is
imported, which the learner does only for its first gradient merge (a fit with the
default golden-section merges never compiles this module).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from randsvm_dist.streaming.bsgd._kernels import replace_merged, select_partners
from randsvm_dist.streaming.bsgd._types import (
    C_KERNEL_EVALS,
    F8,
    F8_1D,
    F8_2D,
    I8,
    I8_1D,
    MAINTAIN,
)

GD_MAX_ITERS = np.int64(200)
GD_TOL = 1e-10
#: gradient_merge's (z, alpha_z, kernel evaluations)
MERGED = types.Tuple((F8_1D, F8, I8))


@njit(F8(F8_2D, I8_1D, F8_1D, F8_1D, F8, F8_1D), cache=True, no_cfunc_wrapper=True)
def _alpha_z_multi(S, rows, a, z, gamma, kz):
    """alpha_z = sum_i a_i k(S[rows[i]], z); kernel values written to kz."""
    s = 0.0
    for i in range(rows.shape[0]):
        r = rows[i]
        d2 = 0.0
        for f in range(S.shape[1]):
            t = S[r, f] - z[f]
            d2 += t * t
        kz[i] = math.exp(-gamma * d2)
        s += a[i] * kz[i]
    return s


@njit(cache=True, inline="always")
def _best_start(S, rows, a, gamma, kz, z, best_z):
    """Write into best_z the start point of largest |alpha_z| among: the points, their
    a-weighted mean (when the coefficients do not cancel) and their |a|-weighted mean
    (z: scratch). Returns the candidates tried (each costs M kernel evaluations)."""
    M, d = rows.shape[0], S.shape[1]
    best_f = -1.0
    sa = 0.0
    sabs = 0.0
    for i in range(M):
        sa += a[i]
        sabs += abs(a[i])
    tried = 0
    for c in range(M + 2):
        if c < M:
            for q in range(d):
                z[q] = S[rows[c], q]
        else:
            if c == M and abs(sa) <= 1e-8 * sabs:
                continue
            for q in range(d):
                z[q] = 0.0
            for i in range(M):
                w = a[i] / sa if c == M else abs(a[i]) / sabs
                for q in range(d):
                    z[q] += w * S[rows[i], q]
        f = abs(_alpha_z_multi(S, rows, a, z, gamma, kz))
        tried += 1
        if f > best_f:
            best_f = f
            for q in range(d):
                best_z[q] = z[q]
    return tried


@njit(MERGED(F8_2D, I8_1D, F8_1D, F8, I8, F8), cache=True, no_cfunc_wrapper=True)
def gradient_merge(S, rows, a, gamma, max_iters, tol):
    """Merge the points S[rows] (coefficients a) into one point by gradient ascent on
    alpha_z^2.

    Args:
        S: points (n, d); rows: (M,) the rows of S to merge; a: (M,) their coefficients;
            gamma: kernel width.
        max_iters: gradient steps at most; tol: stop when the relative gain is below tol.

    Returns:
        (z, alpha_z, kernel_evaluations).
    """
    M, d = rows.shape[0], S.shape[1]
    kz = np.empty(M)
    z = np.empty(d)
    best_z = np.empty(d)
    for q in range(d):
        best_z[q] = S[rows[0], q]
    evals = _best_start(S, rows, a, gamma, kz, z, best_z) * M
    z = best_z
    g = _alpha_z_multi(S, rows, a, z, gamma, kz)
    evals += M
    F = g * g
    grad = np.empty(d)
    trial = np.empty(d)
    step = 1.0
    for _ in range(max_iters):
        # grad of F = g^2 is 2 g * 2 gamma * sum_i a_i k_i (P_i - z)
        for f in range(d):
            grad[f] = 0.0
        for i in range(M):
            w = a[i] * kz[i]
            for f in range(d):
                grad[f] += w * (S[rows[i], f] - z[f])
        gn2 = 0.0
        for f in range(d):
            grad[f] *= 4.0 * gamma * g
            gn2 += grad[f] * grad[f]
        if gn2 == 0.0:
            break
        # natural scale: the fixed-point step 1 / (4 gamma g sum a_i k_i) ~ 1 / (4 gamma F)
        step = max(step, 1.0 / (4.0 * gamma * max(F, 1e-300))) * 2.0
        improved = False
        for _ls in range(60):
            for f in range(d):
                trial[f] = z[f] + step * grad[f]
            gt = _alpha_z_multi(S, rows, a, trial, gamma, kz)
            evals += M
            if gt * gt >= F + 1e-4 * step * gn2:
                improved = True
                break
            step *= 0.5
        if not improved:
            g = _alpha_z_multi(S, rows, a, z, gamma, kz)
            evals += M
            break
        gain = gt * gt - F
        for f in range(d):
            z[f] = trial[f]
        g = gt
        F = gt * gt
        if gain <= tol * F:
            break
    return z, g, evals


@njit(MAINTAIN, cache=True)
def maintain_gradient(sv, sqn, beta, n_sv, gamma, m, counters, wd, z, partners):
    """One budget maintenance step of MM-GD (Algorithm 2): merge m points (the
    smallest-|beta| SV and its m-1 best partners) into one at once by
    :func:`gradient_merge`. Modifies sv/sqn/beta in place; ``wd``, ``partners``: scratch
    (:data:`._types.MAINTAIN`; ``z`` is unused: the merge returns its point).

    Returns:
        the new number of SVs (n_sv - m + 1).
    """
    i = select_partners(sv, sqn, beta, n_sv, gamma, wd, partners, m - 1, counters)
    rows = np.empty(m, np.int64)
    a = np.empty(m)
    rows[0] = i
    for r in range(m - 1):
        rows[r + 1] = partners[r]
    for r in range(m):
        a[r] = beta[rows[r]]
    merged, az, ev = gradient_merge(sv, rows, a, gamma, GD_MAX_ITERS, GD_TOL)
    counters[C_KERNEL_EVALS] += ev
    return replace_merged(sv, sqn, beta, n_sv, i, partners, m - 1, merged, az, counters)
