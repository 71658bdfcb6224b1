"""Compiled inner loops of :class:`~randsvm_dist.streaming.bsgd.BudgetedSGD` (numba).

The model is kept *unscaled*: the Pegasos weight vector after ``t`` steps is
``w_t = (1 / (lambda * t)) * sum_j beta_j phi(sv_j)`` (see ``bsgd.py``), so one SGD step only
appends ``beta = y * weight`` for a margin violator and never rescales the budget.
Merging is linear in the coefficients, so it runs on ``beta`` directly.

Support vectors are stored dense, float64, in a (capacity, n_features) array with their
squared norms alongside; rows of X may be dense or CSR (the CSR pass never densifies X: the
dot products with the budget run over the row's non-zeros).
The merge maths (golden-section and gradient merges) is in :mod:`._bsgd_merge`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming._bsgd_merge import (
    GD_MAX_ITERS,
    GD_TOL,
    GOLDEN_ITERS_MERGE,
    GOLDEN_ITERS_SELECT,
    golden_pair,
    gradient_merge,
    sqdist,
)

MERGE_GOLDEN = 0
MERGE_GRADIENT = 1

# indices of the int64 counters array
C_KERNEL_EVALS = 0
C_MAINTENANCE = 1  # budget maintenance events
C_BINARY_MERGES = 2  # points removed by merging (one per binary merge / per merged partner)
C_VIOLATIONS = 3  # margin violations (SVs added)
N_COUNTERS = 4



@njit(cache=True)
def _dot_dense(sv, n_sv, x, out):
    for j in range(n_sv):
        s = 0.0
        for f in range(x.shape[0]):
            s += sv[j, f] * x[f]
        out[j] = s


@njit(cache=True)
def _dot_sparse(sv, n_sv, idx, val, out):
    for j in range(n_sv):
        s = 0.0
        for k in range(idx.shape[0]):
            s += sv[j, idx[k]] * val[k]
        out[j] = s


@njit(cache=True)
def _margin(dots, xsq, sqn, beta, n_sv, gamma):
    s = 0.0
    for j in range(n_sv):
        d2 = max(xsq + sqn[j] - 2.0 * dots[j], 0.0)
        s += beta[j] * math.exp(-gamma * d2)
    return s


@njit(cache=True)
def _remove(sv, sqn, beta, n_sv, p):
    """Delete slot p by moving the last SV into it; returns the new count."""
    last = n_sv - 1
    if p != last:
        for f in range(sv.shape[1]):
            sv[p, f] = sv[last, f]
        sqn[p] = sqn[last]
        beta[p] = beta[last]
    return last


@njit(cache=True)
def _smallest(v, k):
    """Indices of the k smallest of v in increasing order, ties to the lower index and NaN
    last: the first k of a stable (mergesort) argsort, by k passes (k is a merge's partner
    count, a handful, so this also beats a full sort; numba's sorts alone compile for
    seconds)."""
    taken = np.zeros(v.shape[0], np.bool_)
    out = np.empty(k, np.int64)
    for q in range(k):
        best = -1
        for j in range(v.shape[0]):
            if taken[j]:
                continue
            if best < 0 or v[j] < v[best] or (v[best] != v[best] and v[j] == v[j]):
                best = j
        taken[best] = True
        out[q] = best
    return out


@njit(cache=True)
def select_partners(sv, sqn, beta, n_sv, gamma, n_partners, counters, near=0.0):
    """First merge point (smallest |beta|) and its best partners by pairwise degradation.

    near > 0: partners after the first are kept only while their pairwise degradation is
    at most ``near * (beta_i^2 + beta_j^2)`` (a near point; a far one would be removed,
    not merged), so fewer than n_partners may come back.

    Returns:
        (first index, partner indices (<= n_partners,) in increasing degradation order).
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
    order = _smallest(wd, n_partners)
    k = n_partners
    if near > 0.0:
        k = 1
        while k < n_partners:
            j = order[k]
            if wd[j] > near * (beta[i] * beta[i] + beta[j] * beta[j]):
                break
            k += 1
    return i, order[:k].copy()


@njit(cache=True)
def maintain(sv, sqn, beta, n_sv, gamma, m, method, counters, near=0.0):
    """One budget maintenance step: merge m points (the smallest-|beta| SV and its m-1 best
    partners) into one. Modifies sv/sqn/beta in place.

    Returns:
        the new number of SVs (n_sv - m + 1).
    """
    d = sv.shape[1]
    i, partners = select_partners(sv, sqn, beta, n_sv, gamma, m - 1, counters, near)
    m = partners.shape[0] + 1
    z = sv[i].copy()
    az = beta[i]
    if method == MERGE_GOLDEN or m == 2:
        # MM-BSGD (Algorithm 1): a chain of binary golden-section merges
        zsq = sqn[i]
        for p in partners:
            L = gamma * sqdist(sv, p, z, zsq, sqn)
            counters[C_KERNEL_EVALS] += 1
            h, az, _ = golden_pair(az, beta[p], L, GOLDEN_ITERS_MERGE)
            zsq = 0.0
            for f in range(d):
                z[f] = h * z[f] + (1.0 - h) * sv[p, f]
                zsq += z[f] * z[f]
    else:
        # MM-GD (Algorithm 2): one M-point merge by gradient ascent on alpha_z^2
        P = np.empty((m, d))
        a = np.empty(m)
        for f in range(d):
            P[0, f] = sv[i, f]
        a[0] = beta[i]
        for r in range(m - 1):
            for f in range(d):
                P[r + 1, f] = sv[partners[r], f]
            a[r + 1] = beta[partners[r]]
        z, az, ev = gradient_merge(P, a, gamma, GD_MAX_ITERS, GD_TOL)
        counters[C_KERNEL_EVALS] += ev
    zsq = 0.0
    for f in range(d):
        zsq += z[f] * z[f]
    for f in range(d):
        sv[i, f] = z[f]
    sqn[i] = zsq
    beta[i] = az
    # remove partners from the highest slot down so swapped-in rows are never partners
    ps = partners.copy()  # into decreasing order (insertion sort: a handful of entries)
    for a0 in range(1, ps.shape[0]):
        v = ps[a0]
        b0 = a0 - 1
        while b0 >= 0 and ps[b0] < v:
            ps[b0 + 1] = ps[b0]
            b0 -= 1
        ps[b0 + 1] = v
    for p in ps:
        n_sv = _remove(sv, sqn, beta, n_sv, p)
    counters[C_MAINTENANCE] += 1
    counters[C_BINARY_MERGES] += m - 1
    return n_sv


@njit(cache=True)
def shrink_to_budget(sv, sqn, beta, n_sv, budget, gamma, merge_size, method, counters,
                     near=0.0):
    """Multi-merge until at most ``budget`` SVs remain (the last merge takes only as many
    points as needed; ``near`` as in :func:`select_partners`). Returns the new count."""
    while n_sv > budget:
        m = min(merge_size, n_sv - budget + 1)
        n_sv = maintain(sv, sqn, beta, n_sv, gamma, m, method, counters, near)
    return n_sv


@njit(cache=True)
def _violates(sqn, beta, n_sv, dots, xsq, y, t, lam, bias, gamma, counters):
    """Margin test y f(x) < 1 at step t (1-based) for a row whose dots with the budget are
    known; f uses w_{t-1} = (beta, bias) / (lambda (t - 1)) and w_0 = 0."""
    counters[C_KERNEL_EVALS] += n_sv
    if t > 1:
        f = (_margin(dots, xsq, sqn, beta, n_sv, gamma) + bias) / (lam * (t - 1))
    else:
        f = 0.0
    return y * f < 1.0


@njit(cache=True)
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
        n_sv = maintain(sv, sqn, beta, n_sv, gamma, merge_size, method, counters, 0.0)
    return n_sv, bias


@njit(cache=True)
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


@njit(cache=True)
def train_sparse(indptr, indices, data, y, w, order, sv, sqn, beta, n_sv, t, lam, bias,
                 fit_intercept, gamma, budget, merge_size, method, counters):
    """As :func:`train_dense` for CSR rows (indptr, indices, data); the dot products with
    the budget run over each row's non-zeros only."""
    dots = np.empty(sv.shape[0])
    for r in order:
        t += 1
        s, e = indptr[r], indptr[r + 1]
        idx = indices[s:e]
        val = data[s:e].astype(np.float64)
        xsq = 0.0
        for k in range(val.shape[0]):
            xsq += val[k] * val[k]
        _dot_sparse(sv, n_sv, idx, val, dots)
        if _violates(sqn, beta, n_sv, dots, xsq, y[r], t, lam, bias, gamma, counters):
            sv[n_sv, :] = 0.0
            for k in range(idx.shape[0]):
                sv[n_sv, idx[k]] = val[k]
            n_sv, bias = _admit(sv, sqn, beta, n_sv, xsq, y[r] * w[r], bias, fit_intercept, gamma,
                                budget, merge_size, method, counters)
    return n_sv, t, bias
