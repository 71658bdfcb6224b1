"""Compiled inner loops of :class:`~randsvm_dist.streaming.bsgd.BudgetedSGD` (numba).

The model is kept *unscaled*: the Pegasos weight vector after ``t`` steps is
``w_t = (1 / (lambda * t)) * sum_j beta_j phi(sv_j)`` (see ``bsgd.py``), so one SGD step only
appends ``beta = y * weight`` for a margin violator and never rescales the budget.
Merging is linear in the coefficients, so it runs on ``beta`` directly.

Support vectors are stored dense, float64, in a (capacity, n_features) array with their
squared norms alongside; rows of X may be dense or CSR (the CSR pass never densifies X: the
dot products with the budget run over the row's non-zeros).

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
- M points (MM-GD): ``grad_z alpha_z = 2 gamma sum_i alpha_i k(x_i, z) (x_i - z)``; gradient
  ascent on ``alpha_z^2`` with a backtracking (Armijo) step. The paper's Algorithm 2 prints
  its loop condition as ``while |Delta_t| < eps``, which would stop at once; we iterate
  *until* the relative gain in ``alpha_z^2`` falls below ``eps``. Its start point
  ``sum alpha_i x_i / sum alpha_i`` is undefined when the coefficients cancel, so we start
  from the best (largest ``|alpha_z|``) of: that weighted mean (when defined), the
  ``|alpha|``-weighted mean, and the M points themselves.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

INV_PHI = 0.6180339887498949  # 1 / golden ratio
# Iteration counts are numpy integers: a Python int constant reaches a jitted callee as a
# literal type, compiling one specialisation per value (numba's compile time dominates a
# first fit); np.int64 is typed int64 everywhere, so each kernel compiles once.
# partner ranking: 0.618^12 ~ 3e-3 of the bracket; the degradation is flat (quadratic) near
# its minimum, so this ranks partners like a full search at half the cost
GOLDEN_ITERS_SELECT = np.int64(12)
GOLDEN_ITERS_MERGE = np.int64(40)  # ~ 4e-9: the executed merge is solved to near machine precision
GD_MAX_ITERS = np.int64(200)
GD_TOL = 1e-10

MERGE_GOLDEN = 0
MERGE_GRADIENT = 1

# indices of the int64 counters array
C_KERNEL_EVALS = 0
C_MAINTENANCE = 1  # budget maintenance events
C_BINARY_MERGES = 2  # points removed by merging (one per binary merge / per merged partner)
C_VIOLATIONS = 3  # margin violations (SVs added)
N_COUNTERS = 4


@njit(cache=True)
def _alpha_z_pair(h, am, an, L):
    """alpha_z for z = h x_m + (1-h) x_n (see module docstring)."""
    return am * math.exp(-L * (1.0 - h) * (1.0 - h)) + an * math.exp(-L * h * h)


@njit(cache=True)
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
        return h, az, max(total - az * az, 0.0)
    swap = abs(an) > abs(am)
    if swap:  # make x_m the point with the larger |alpha|; h' = 1 - h
        am, an = an, am
    if am * an > 0.0:
        lo, hi = 0.0, 1.0
    else:
        lo = 1.0
        width = 5.0 / math.sqrt(L)
        if abs(am + an) > 0.0:  # am / (am + an) - 1 = -an / (am + an) > 0 bounds h
            width = min(width, -an / (am + an))
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
    for cand in (lo, hi, 0.0, 1.0):
        f = abs(_alpha_z_pair(cand, am, an, L))
        if f > best:
            best, h = f, cand
    az = _alpha_z_pair(h, am, an, L)
    if swap:
        h = 1.0 - h
    return h, az, max(total - az * az, 0.0)


@njit(cache=True)
def _sqdist(sv, i, z, zsq, sqn):
    """|sv[i] - z|^2 from the stored norm sqn[i] and the dot product."""
    s = 0.0
    for f in range(sv.shape[1]):
        s += sv[i, f] * z[f]
    return max(sqn[i] + zsq - 2.0 * s, 0.0)


@njit(cache=True)
def _alpha_z_multi(P, a, z, gamma, kz):
    """alpha_z = sum_i a_i k(P_i, z); kernel values written to kz."""
    s = 0.0
    for i in range(P.shape[0]):
        d2 = 0.0
        for f in range(P.shape[1]):
            t = P[i, f] - z[f]
            d2 += t * t
        kz[i] = math.exp(-gamma * d2)
        s += a[i] * kz[i]
    return s


@njit(cache=True)
def gradient_merge(P, a, gamma, max_iters, tol):
    """Merge the rows of P (coefficients a) into one point by gradient ascent on alpha_z^2.

    Args:
        P: (M, d) points; a: (M,) coefficients; gamma: kernel width.
        max_iters: gradient steps at most; tol: stop when the relative gain is below tol.

    Returns:
        (z, alpha_z, kernel_evaluations).
    """
    M, d = P.shape
    kz = np.empty(M)
    evals = 0
    # candidate start points
    best_z = P[0].copy()
    best_f = -1.0
    sa = 0.0
    sabs = 0.0
    for i in range(M):
        sa += a[i]
        sabs += abs(a[i])
    n_cand = M + 2
    z = np.empty(d)
    for c in range(n_cand):
        if c < M:
            for q in range(d):
                z[q] = P[c, q]
        elif c == M:
            if abs(sa) <= 1e-8 * sabs:
                continue
            z[:] = 0.0
            for i in range(M):
                z += (a[i] / sa) * P[i]
        else:
            z[:] = 0.0
            for i in range(M):
                z += (abs(a[i]) / sabs) * P[i]
        f = abs(_alpha_z_multi(P, a, z, gamma, kz))
        evals += M
        if f > best_f:
            best_f = f
            for q in range(d):
                best_z[q] = z[q]
    z = best_z
    g = _alpha_z_multi(P, a, z, gamma, kz)
    evals += M
    F = g * g
    grad = np.empty(d)
    trial = np.empty(d)
    step = 1.0
    for _ in range(max_iters):
        # grad of F = g^2 is 2 g * 2 gamma * sum_i a_i k_i (P_i - z)
        grad[:] = 0.0
        for i in range(M):
            w = a[i] * kz[i]
            for f in range(d):
                grad[f] += w * (P[i, f] - z[f])
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
            gt = _alpha_z_multi(P, a, trial, gamma, kz)
            evals += M
            if gt * gt >= F + 1e-4 * step * gn2:
                improved = True
                break
            step *= 0.5
        if not improved:
            g = _alpha_z_multi(P, a, z, gamma, kz)
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
        L = gamma * _sqdist(sv, j, xi, sqn[i], sqn)
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
            L = gamma * _sqdist(sv, p, z, zsq, sqn)
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
