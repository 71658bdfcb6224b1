"""Compiled budget maintenance and row steps of
:class:`.budgeted_sgd.BudgetedSGD` (numba).

The model is kept *unscaled*: the Pegasos weight vector after ``t`` steps is
``w_t = (1 / (lambda * t)) * sum_j beta_j phi(sv_j)`` (see ``bsgd.py``), so one SGD step only
appends ``beta = y * weight`` for a margin violator and never rescales the budget.
Merging is linear in the coefficients, so it runs on ``beta`` directly.

Support vectors are stored dense, float64, in a (capacity, n_features) array with their
squared norms alongside. Here: the budget maintenance by a chain of golden-section merges
(:func:`maintain_golden`) and the parts of an SGD step both training passes share (the
margin test, the admission of a violator); the passes over dense and CSR rows are
:mod:`._pass_dense` and :mod:`._pass_csr`, the pair merge maths
:mod:`._merge`, the M-point gradient merge :mod:`._gradient`.

Compilation: :func:`maintain_golden` is compiled for its one signature
(:mod:`._types`) when this module is imported; the helpers marked ``inline="always"``
are compiled into their callers only. A callee compiled on its own is optimised and
translated to machine code again inside each of its callers, so a deep chain of them
(pass, admission, maintenance, partner search, pair merge) more than doubled a first
fit's compilation; inlining the bigger :func:`maintain_golden` or the pair maths instead
costs more in numba's type inference than it saves.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming.bsgd._merge import (
    GOLDEN_ITERS_MERGE,
    GOLDEN_ITERS_SELECT,
    golden_pair,
    sqdist,
)
from randsvm_dist.streaming.bsgd._types import (
    C_BINARY_MERGES,
    C_KERNEL_EVALS,
    C_MAINTENANCE,
    C_VIOLATIONS,
    MAINTAIN,
)


@njit(cache=True, inline="always")
def _remove(sv, sqn, beta, n_sv, p):
    """Delete slot p by moving the last SV into it; returns the new count."""
    last = n_sv - 1
    if p != last:
        for f in range(sv.shape[1]):
            sv[p, f] = sv[last, f]
        sqn[p] = sqn[last]
        beta[p] = beta[last]
    return last


@njit(cache=True, inline="always")
def _follows(v, j, p):
    """Whether entry j of v comes after entry p in the order (NaN last, value, index)."""
    vj, vp = v[j], v[p]
    if vj != vj or vp != vp:
        return vp == vp or (vj != vj and j > p)
    return vj > vp or (vj == vp and j > p)


@njit(cache=True, inline="always")
def _smallest(v, n, out, k):
    """Write into out[:k] the indices of the k smallest of v[:n] in increasing order,
    ties to the lower index and NaN last: the first entries of a stable (mergesort)
    argsort, by one pass per entry, each taking the least entry after the previous one
    (a merge's partner count is a handful, so this also beats a full sort; numba's sorts
    alone compile for seconds)."""
    prev = -1
    for q in range(k):
        best = -1
        for j in range(n):
            if prev >= 0 and not _follows(v, j, prev):
                continue
            if best < 0 or v[j] < v[best] or (v[best] != v[best] and v[j] == v[j]):
                best = j
        out[q] = best
        prev = best


@njit(cache=True, inline="always")
def select_partners(sv, sqn, beta, n_sv, gamma, wd, partners, k, counters):
    """First merge point (smallest |beta|) and its k best partners by pairwise degradation,
    written into ``partners[:k]`` in increasing degradation order (``wd``: scratch of at
    least n_sv entries, the degradations).

    Returns:
        the first point's index.
    """
    i = 0
    for j in range(1, n_sv):
        if abs(beta[j]) < abs(beta[i]):
            i = j
    xi = sv[i]
    for j in range(n_sv):
        if j == i:
            wd[j] = np.inf
            continue
        L = gamma * sqdist(sv, j, xi, sqn[i], sqn)
        wd[j] = golden_pair(beta[i], beta[j], L, GOLDEN_ITERS_SELECT)[2]
    counters[C_KERNEL_EVALS] += n_sv - 1
    _smallest(wd, n_sv, partners, k)
    return i


@njit(cache=True, inline="always")
def replace_merged(sv, sqn, beta, n_sv, i, partners, k, z, az, counters):
    """Store the merged point z (coefficient az) in slot i and delete the k partners'
    slots (``partners[:k]`` is left in decreasing order). Returns the new number of SVs."""
    d = sv.shape[1]
    zsq = 0.0
    for f in range(d):
        zsq += z[f] * z[f]
    for f in range(d):
        sv[i, f] = z[f]
    sqn[i] = zsq
    beta[i] = az
    # remove partners from the highest slot down so swapped-in rows are never partners
    for a0 in range(1, k):  # into decreasing order (insertion sort: a handful of entries)
        v = partners[a0]
        b0 = a0 - 1
        while b0 >= 0 and partners[b0] < v:
            partners[b0 + 1] = partners[b0]
            b0 -= 1
        partners[b0 + 1] = v
    for q in range(k):
        n_sv = _remove(sv, sqn, beta, n_sv, partners[q])
    counters[C_MAINTENANCE] += 1
    counters[C_BINARY_MERGES] += k
    return n_sv


@njit(cache=True, inline="always")
def _golden_chain(sv, sqn, beta, i, partners, k, gamma, z, counters):
    """Merge point i with each of its k partners in turn by binary golden-section merges; the
    merged point is written into z. Returns its coefficient."""
    d = sv.shape[1]
    for f in range(d):
        z[f] = sv[i, f]
    az = beta[i]
    zsq = sqn[i]
    for q in range(k):
        p = partners[q]
        L = gamma * sqdist(sv, p, z, zsq, sqn)
        counters[C_KERNEL_EVALS] += 1
        h, az, _ = golden_pair(az, beta[p], L, GOLDEN_ITERS_MERGE)
        zsq = 0.0
        for f in range(d):
            z[f] = h * z[f] + (1.0 - h) * sv[p, f]
            zsq += z[f] * z[f]
    return az


@njit(MAINTAIN, cache=True)
def maintain_golden(sv, sqn, beta, n_sv, gamma, m, counters, wd, z, partners):
    """One budget maintenance step of MM-BSGD (Algorithm 1): merge m points (the
    smallest-|beta| SV and its m-1 best partners) into one by a chain of binary
    golden-section merges. Modifies sv/sqn/beta in place; ``wd``, ``z``, ``partners``:
    scratch (:data:`._types.MAINTAIN`).

    Returns:
        the new number of SVs (n_sv - m + 1).
    """
    i = select_partners(sv, sqn, beta, n_sv, gamma, wd, partners, m - 1, counters)
    az = _golden_chain(sv, sqn, beta, i, partners, m - 1, gamma, z, counters)
    return replace_merged(sv, sqn, beta, n_sv, i, partners, m - 1, z, az, counters)


@njit(cache=True, inline="always")
def _margin(dots, xsq, sqn, beta, n_sv, gamma):
    s = 0.0
    for j in range(n_sv):
        d2 = xsq + sqn[j] - 2.0 * dots[j]
        if 0.0 > d2:  # max(d2, 0.0) without numba's max overload (NaN stays NaN)
            d2 = 0.0
        s += beta[j] * math.exp(-gamma * d2)
    return s


@njit(cache=True, inline="always")
def violates(sqn, beta, n_sv, dots, xsq, y, t, lam, bias, gamma, counters):
    """Margin test y f(x) < 1 at step t (1-based) for a row whose dots with the budget are
    known; f uses w_{t-1} = (beta, bias) / (lambda (t - 1)) and w_0 = 0."""
    counters[C_KERNEL_EVALS] += n_sv
    if t > 1:
        f = (_margin(dots, xsq, sqn, beta, n_sv, gamma) + bias) / (lam * (t - 1))
    else:
        f = 0.0
    return y * f < 1.0


@njit(cache=True, inline="always")
def admit(sv, sqn, beta, n_sv, xsq, yr, bias, fit_intercept, gamma, budget, merge_size,
          maintain, counters, wd, z, partners):
    """Admit the point already copied into ``sv[n_sv]`` as a new SV with coefficient yr
    (label x row weight); when it overflows the budget, merge back to the budget by the
    step ``maintain`` (:data:`._types.MAINTAIN_FN`). Returns (n_sv, bias)."""
    sqn[n_sv] = xsq
    beta[n_sv] = yr
    n_sv += 1
    counters[C_VIOLATIONS] += 1
    if fit_intercept:
        bias += yr
    if n_sv > budget:
        n_sv = maintain(sv, sqn, beta, n_sv, gamma, merge_size, counters, wd, z, partners)
    return n_sv, bias

