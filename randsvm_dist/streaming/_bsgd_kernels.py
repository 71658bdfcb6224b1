"""Compiled inner loops of :class:`~randsvm_dist.streaming.bsgd.BudgetedSGD` (numba).

The model is kept *unscaled*: the Pegasos weight vector after ``t`` steps is
``w_t = (1 / (lambda * t)) * sum_j beta_j phi(sv_j)`` (see ``bsgd.py``), so one SGD step only
appends ``beta = y * weight`` for a margin violator and never rescales the budget.
Merging is linear in the coefficients, so it runs on ``beta`` directly.

Support vectors are stored dense, float64, in a (capacity, n_features) array with their
squared norms alongside; rows of X may be dense or CSR (the CSR pass never densifies X: the
dot products with the budget run over the row's non-zeros).
The merge maths (golden-section and gradient merges) is in :mod:`._bsgd_merge`; the
signatures each kernel is compiled for, once, when this module is imported, in
:mod:`._bsgd_types`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from randsvm_dist.streaming._bsgd_merge import (
    GD_MAX_ITERS,
    GD_TOL,
    GOLDEN_ITERS_MERGE,
    GOLDEN_ITERS_SELECT,
    golden_pair,
    gradient_merge,
    sqdist,
)
from randsvm_dist.streaming._bsgd_types import (
    B1,
    C_BINARY_MERGES,
    C_KERNEL_EVALS,
    C_MAINTENANCE,
    C_VIOLATIONS,
    F4_1D_IN,
    F4_2D_IN,
    F8,
    F8_1D,
    F8_1D_IN,
    F8_2D,
    I8,
    I8_1D,
    I8_1D_IN,
    MERGE_GOLDEN,
)

#: _admit's (n_sv, bias); the training passes' (n_sv, t, bias)
ADMITTED = types.Tuple((I8, F8))
TRAINED = types.Tuple((I8, I8, F8))
#: the training passes' arguments after the rows and labels: weights, row order, the
#: budget (sv, sqn, beta, n_sv), t, lambda, bias, fit_intercept, gamma, budget,
#: merge_size, method, counters
_TRAIN_TAIL = (F8_1D_IN, I8_1D_IN, F8_2D, F8_1D, F8_1D, I8, I8, F8, F8, B1, F8, I8, I8, I8,
               I8_1D)


@njit(types.void(F8_2D, I8, F8_1D, F8_1D), cache=True)
def _dot_dense(sv, n_sv, x, out):
    for j in range(n_sv):
        s = 0.0
        for f in range(x.shape[0]):
            s += sv[j, f] * x[f]
        out[j] = s


@njit(types.void(F8_2D, I8, I8_1D_IN, F4_1D_IN, I8, I8, F8_1D), cache=True)
def _dot_sparse(sv, n_sv, indices, data, start, end, out):
    """out[j] = <sv_j, x> for the CSR row x = (indices, data)[start:end]."""
    for j in range(n_sv):
        s = 0.0
        for k in range(start, end):
            s += sv[j, indices[k]] * np.float64(data[k])
        out[j] = s


@njit(F8(F8_1D, F8, F8_1D, F8_1D, I8, F8), cache=True)
def _margin(dots, xsq, sqn, beta, n_sv, gamma):
    s = 0.0
    for j in range(n_sv):
        d2 = max(xsq + sqn[j] - 2.0 * dots[j], 0.0)
        s += beta[j] * math.exp(-gamma * d2)
    return s


@njit(I8(F8_2D, F8_1D, F8_1D, I8, I8), cache=True)
def _remove(sv, sqn, beta, n_sv, p):
    """Delete slot p by moving the last SV into it; returns the new count."""
    last = n_sv - 1
    if p != last:
        for f in range(sv.shape[1]):
            sv[p, f] = sv[last, f]
        sqn[p] = sqn[last]
        beta[p] = beta[last]
    return last


@njit(B1(F8_1D, I8, I8), cache=True)
def _follows(v, j, p):
    """Whether entry j of v comes after entry p in the order (NaN last, value, index)."""
    vj, vp = v[j], v[p]
    if vj != vj or vp != vp:
        return vp == vp or (vj != vj and j > p)
    return vj > vp or (vj == vp and j > p)


@njit(types.void(F8_1D, I8_1D), cache=True)
def _smallest(v, out):
    """Write into out the indices of the out.shape[0] smallest of v in increasing order,
    ties to the lower index and NaN last: the first entries of a stable (mergesort)
    argsort, by one pass per entry, each taking the least entry after the previous one
    (a merge's partner count is a handful, so this also beats a full sort; numba's sorts
    alone compile for seconds)."""
    prev = -1
    for q in range(out.shape[0]):
        best = -1
        for j in range(v.shape[0]):
            if prev >= 0 and not _follows(v, j, prev):
                continue
            if best < 0 or v[j] < v[best] or (v[best] != v[best] and v[j] == v[j]):
                best = j
        out[q] = best
        prev = best


@njit(I8(F8_2D, F8_1D, F8_1D, I8, F8, I8_1D, I8_1D), cache=True)
def select_partners(sv, sqn, beta, n_sv, gamma, partners, counters):
    """First merge point (smallest |beta|) and its best partners by pairwise degradation,
    written into ``partners`` (as many as it holds, in increasing degradation order).

    Returns:
        the first point's index.
    """
    i = 0
    for j in range(1, n_sv):
        if abs(beta[j]) < abs(beta[i]):
            i = j
    wd = np.empty(n_sv)
    xi = sv[i]
    for j in range(n_sv):
        if j == i:
            wd[j] = np.inf
            continue
        L = gamma * sqdist(sv, j, xi, sqn[i], sqn)
        wd[j] = golden_pair(beta[i], beta[j], L, GOLDEN_ITERS_SELECT)[2]
    counters[C_KERNEL_EVALS] += n_sv - 1
    _smallest(wd, partners)
    return i


@njit(F8(F8_2D, F8_1D, F8_1D, I8, I8_1D, F8, F8_1D, I8_1D), cache=True)
def _golden_chain(sv, sqn, beta, i, partners, gamma, z, counters):
    """MM-BSGD (Algorithm 1): merge point i with each partner in turn by binary
    golden-section merges; the merged point is written into z. Returns its coefficient."""
    d = sv.shape[1]
    for f in range(d):
        z[f] = sv[i, f]
    az = beta[i]
    zsq = sqn[i]
    for q in range(partners.shape[0]):
        p = partners[q]
        L = gamma * sqdist(sv, p, z, zsq, sqn)
        counters[C_KERNEL_EVALS] += 1
        h, az, _ = golden_pair(az, beta[p], L, GOLDEN_ITERS_MERGE)
        zsq = 0.0
        for f in range(d):
            z[f] = h * z[f] + (1.0 - h) * sv[p, f]
            zsq += z[f] * z[f]
    return az


@njit(I8(F8_2D, F8_1D, F8_1D, I8, F8, I8, I8, I8_1D), cache=True)
def maintain(sv, sqn, beta, n_sv, gamma, m, method, counters):
    """One budget maintenance step: merge m points (the smallest-|beta| SV and its m-1 best
    partners) into one. Modifies sv/sqn/beta in place.

    Returns:
        the new number of SVs (n_sv - m + 1).
    """
    d = sv.shape[1]
    partners = np.empty(m - 1, np.int64)
    i = select_partners(sv, sqn, beta, n_sv, gamma, partners, counters)
    if method == MERGE_GOLDEN or m == 2:
        z = np.empty(d)
        az = _golden_chain(sv, sqn, beta, i, partners, gamma, z, counters)
    else:
        # MM-GD (Algorithm 2): one M-point merge by gradient ascent on alpha_z^2
        rows = np.empty(m, np.int64)
        a = np.empty(m)
        rows[0] = i
        for r in range(m - 1):
            rows[r + 1] = partners[r]
        for r in range(m):
            a[r] = beta[rows[r]]
        z, az, ev = gradient_merge(sv, rows, a, gamma, GD_MAX_ITERS, GD_TOL)
        counters[C_KERNEL_EVALS] += ev
    zsq = 0.0
    for f in range(d):
        zsq += z[f] * z[f]
    for f in range(d):
        sv[i, f] = z[f]
    sqn[i] = zsq
    beta[i] = az
    # remove partners from the highest slot down so swapped-in rows are never partners
    for a0 in range(1, m - 1):  # into decreasing order (insertion sort: a handful)
        v = partners[a0]
        b0 = a0 - 1
        while b0 >= 0 and partners[b0] < v:
            partners[b0 + 1] = partners[b0]
            b0 -= 1
        partners[b0 + 1] = v
    for q in range(m - 1):
        n_sv = _remove(sv, sqn, beta, n_sv, partners[q])
    counters[C_MAINTENANCE] += 1
    counters[C_BINARY_MERGES] += m - 1
    return n_sv


@njit(I8(F8_2D, F8_1D, F8_1D, I8, I8, F8, I8, I8, I8_1D), cache=True)
def shrink_to_budget(sv, sqn, beta, n_sv, budget, gamma, merge_size, method, counters):
    """Multi-merge until at most ``budget`` SVs remain (the last merge takes only as many
    points as needed). Returns the new count."""
    while n_sv > budget:
        m = min(merge_size, n_sv - budget + 1)
        n_sv = maintain(sv, sqn, beta, n_sv, gamma, m, method, counters)
    return n_sv


@njit(B1(F8_1D, F8_1D, I8, F8_1D, F8, F8, I8, F8, F8, F8, I8_1D), cache=True)
def _violates(sqn, beta, n_sv, dots, xsq, y, t, lam, bias, gamma, counters):
    """Margin test y f(x) < 1 at step t (1-based) for a row whose dots with the budget are
    known; f uses w_{t-1} = (beta, bias) / (lambda (t - 1)) and w_0 = 0."""
    counters[C_KERNEL_EVALS] += n_sv
    if t > 1:
        f = (_margin(dots, xsq, sqn, beta, n_sv, gamma) + bias) / (lam * (t - 1))
    else:
        f = 0.0
    return y * f < 1.0


@njit(ADMITTED(F8_2D, F8_1D, F8_1D, I8, F8, F8, F8, B1, F8, I8, I8, I8, I8_1D), cache=True)
def _admit(sv, sqn, beta, n_sv, xsq, yr, bias, fit_intercept, gamma, budget, merge_size,
           method, counters):
    """Admit the point already copied into ``sv[n_sv]`` as a new SV with coefficient yr
    (label x row weight); merge back to the budget when it overflows. Returns (n_sv, bias)."""
    sqn[n_sv] = xsq
    beta[n_sv] = yr
    n_sv += 1
    counters[C_VIOLATIONS] += 1
    if fit_intercept:
        bias += yr
    if n_sv > budget:
        n_sv = maintain(sv, sqn, beta, n_sv, gamma, merge_size, method, counters)
    return n_sv, bias


@njit(TRAINED(F4_2D_IN, F8_1D_IN, *_TRAIN_TAIL), cache=True)
def train_dense(X, y, w, order, sv, sqn, beta, n_sv, t, lam, bias, fit_intercept, gamma,
                budget, merge_size, method, counters):
    """One pass of budgeted Pegasos over the dense rows X[order].

    Args:
        X: (n, d) float32; y: (n,) float64 in {-1, +1}; w: (n,) row weights (> 0: a
            row's hinge gradient is scaled by its weight); order: row order (int64).
        sv, sqn, beta: the budget (capacity >= budget + 1), first n_sv rows in use.
        t: steps done so far; lam: lambda; bias: unscaled intercept (sum of added betas).

    Returns:
        (n_sv, t, bias).
    """
    d = X.shape[1]
    dots = np.empty(sv.shape[0])
    x = np.empty(d)
    for r in order:
        t += 1
        xsq = 0.0
        for f in range(d):
            x[f] = X[r, f]
            xsq += x[f] * x[f]
        _dot_dense(sv, n_sv, x, dots)
        if _violates(sqn, beta, n_sv, dots, xsq, y[r], t, lam, bias, gamma, counters):
            for f in range(d):
                sv[n_sv, f] = x[f]
            n_sv, bias = _admit(sv, sqn, beta, n_sv, xsq, y[r] * w[r], bias, fit_intercept, gamma,
                                budget, merge_size, method, counters)
    return n_sv, t, bias


@njit(TRAINED(I8_1D_IN, I8_1D_IN, F4_1D_IN, F8_1D_IN, *_TRAIN_TAIL), cache=True)
def train_sparse(indptr, indices, data, y, w, order, sv, sqn, beta, n_sv, t, lam, bias,
                 fit_intercept, gamma, budget, merge_size, method, counters):
    """As :func:`train_dense` for CSR rows (indptr, indices, data: int64, int64, float32);
    the dot products with the budget run over each row's non-zeros only."""
    dots = np.empty(sv.shape[0])
    for r in order:
        t += 1
        s, e = indptr[r], indptr[r + 1]
        xsq = 0.0
        for k in range(s, e):
            v = np.float64(data[k])
            xsq += v * v
        _dot_sparse(sv, n_sv, indices, data, s, e, dots)
        if _violates(sqn, beta, n_sv, dots, xsq, y[r], t, lam, bias, gamma, counters):
            for f in range(sv.shape[1]):
                sv[n_sv, f] = 0.0
            for k in range(s, e):
                sv[n_sv, indices[k]] = data[k]
            n_sv, bias = _admit(sv, sqn, beta, n_sv, xsq, y[r] * w[r], bias, fit_intercept, gamma,
                                budget, merge_size, method, counters)
    return n_sv, t, bias
