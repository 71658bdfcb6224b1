"""Compiled small minimum enclosing ball (MEB) solver of the ball-cover learners.

The small problem solved when a lookahead buffer fills is the minimum enclosing ball of
balls ``B(c_j, r_j)`` (points have ``r_j = 0``), given the Gram matrix of their centres.
The optimal centre is a convex combination of the centres (KKT). For a trial radius ``r``
put ``a_j(r) = 2 r r_j - r_j^2``; then ``v(r) = min_x max_j |x - c_j|^2 + a_j(r)`` is a
point MEB with additive offsets, solved in its dual ``max_{mu in simplex} sum_j mu_j (G_jj +
a_j) - mu'G mu`` by pairwise Frank-Wolfe. The MEB radius is the unique root of
``h(r) = sqrt(v(r)) - r`` on ``[max r_j, upper bound]`` (``h`` is strictly decreasing
there: ``v`` is convex with slope <= 2 max r_j), found by Illinois regula falsi. The
returned radius is recomputed from the Gram matrix for the returned centre, so the ball
encloses its inputs whatever the solver's tolerance.

Weights. A row of weight w has slack cost ``C w`` (the weighted l2-SVM). It is treated as w
copies of the point, each with its own ``C^-1/2 e_n``: by symmetry they enter any centre
with equal shares, so the copies act as one point ``p~`` whose e part has squared norm
``1/(C w)`` (in the Gram matrix and in the centre's ``e``), at a distance
``sqrt(|x - p~|^2 + off)`` from a centre x, ``off = (1 - 1/w) / C`` (the copies' spread
around p~). The dual keeps the constant linear term ``G_jj + off_j`` of unit-weight points,
which is what makes it the weighted l2-SVM (non-integer w: the same formulas). A new point's
distance test is the copies' (``1/C``), unchanged.

numba's on-disk cache (``cache=True``) keys a kernel on its own file only: after editing
this module, clear the ``__pycache__`` of ``streaming/meb/`` so that the kernels of
``_primal``, ``_dual`` and ``_coreset`` that call it are compiled again.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming.meb._types import F8, F8_1D, F8_2D, compiled, kernel

FW_MAX_ITER = 200000  # pairwise Frank-Wolfe steps per solve (a safety cap)
ROOT_MAX_ITER = 200  # regula falsi steps on the radius (a safety cap)


@njit(cache=True)
def _pairwise_fw(G, bvec, mu, Gmu, tol, max_iter):
    """Maximise sum mu_j bvec_j - mu'G mu over the simplex (in place); return primal value."""
    m = G.shape[0]
    for _ in range(max_iter):
        best = -np.inf
        worst = np.inf
        s = 0
        v = -1
        for j in range(m):
            g = bvec[j] - 2.0 * Gmu[j]
            if g > best:
                best = g
                s = j
            if mu[j] > 0.0 and g < worst:
                worst = g
                v = j
        if v < 0 or best - worst <= tol:
            break
        denom = G[s, s] - 2.0 * G[s, v] + G[v, v]
        t = mu[v]
        if denom > 0.0:
            step = (best - worst) / (2.0 * denom)
            if step < t:
                t = step
        if t <= 0.0:
            break
        mu[s] += t
        mu[v] -= t
        for j in range(m):
            Gmu[j] += t * (G[j, s] - G[j, v])
    mgm = 0.0
    best = -np.inf
    for j in range(m):
        mgm += mu[j] * Gmu[j]
        g = bvec[j] - 2.0 * Gmu[j]
        if g > best:
            best = g
    return mgm + best  # max_j |x - c_j|^2 + a_j  at x = sum mu_j c_j


@njit(cache=True)
def _radius_for(G, radii, mu, off):
    """max_j |x - c_j| + r_j (balls) or sqrt(|x - c_j|^2 + off_j) (weighted points) for
    x = sum mu_j c_j."""
    m = G.shape[0]
    Gmu = G @ mu
    mgm = 0.0
    for j in range(m):
        mgm += mu[j] * Gmu[j]
    R = 0.0
    for j in range(m):
        d2 = mgm - 2.0 * Gmu[j] + G[j, j] + off[j]
        d = math.sqrt(d2) if d2 > 0.0 else 0.0
        if d + radii[j] > R:
            R = d + radii[j]
    return R


@njit(cache=True)
def _diag_scale(G):
    """Largest |G_jj| (at least 1e-300): the scale of the Frank-Wolfe tolerance."""
    scale = 0.0
    for j in range(G.shape[0]):
        v = abs(G[j, j])
        if v > scale:
            scale = v
    return scale if scale > 1e-300 else 1e-300


@njit(cache=True)
def _centre_distance(G):
    """(d^2, d): squared distance and distance of the first two centres."""
    d2 = G[0, 0] - 2.0 * G[0, 1] + G[1, 1]
    return d2, (math.sqrt(d2) if d2 > 0.0 else 0.0)


@njit(cache=True)
def _two_balls(G, radii, off, mu):
    """Closed form for two balls (no weighted points): the radius; mu (zeros) in place."""
    d2, d = _centre_distance(G)
    if d + radii[1] <= radii[0]:
        mu[0] = 1.0
        return radii[0]
    if d + radii[0] <= radii[1]:
        mu[1] = 1.0
        return radii[1]
    R = 0.5 * (d + radii[0] + radii[1])
    t = (R - radii[0]) / d
    mu[0] = 1.0 - t
    mu[1] = t
    return _radius_for(G, radii, mu, off)


@njit(cache=True)
def _ball_and_point(G, radii, off, mu):
    """Closed form for a ball and a (weighted) point: the radius; mu (zeros) in place.

    On the segment c = c0 + t (p - c0): t d + r0 = sqrt((1 - t)^2 d^2 + off).
    """
    d2, d = _centre_distance(G)
    r0 = radii[0]
    if d2 + off[1] <= r0 * r0:
        mu[0] = 1.0
        return r0
    t = 1.0 if d == 0.0 else (d2 + off[1] - r0 * r0) / (2.0 * d * (d + r0))
    if t < 0.0:
        t = 0.0
    if t > 1.0:
        t = 1.0
    mu[0] = 1.0 - t
    mu[1] = t
    return _radius_for(G, radii, mu, off)


@njit(cache=True)
def _fw_at_radius(G, radii, off, r, bvec, mu, Gmu, fw_tol, best_mu, best_R):
    """Solve v(r) from the warm start mu (in place) and keep the smallest enclosing ball
    seen: returns (h(r) = sqrt(v(r)) - r, radius of the best centre so far)."""
    for j in range(G.shape[0]):
        bvec[j] = G[j, j] + off[j] + 2.0 * r * radii[j] - radii[j] * radii[j]
    v = _pairwise_fw(G, bvec, mu, Gmu, fw_tol, FW_MAX_ITER)
    R = _radius_for(G, radii, mu, off)
    if R < best_R:
        best_R = R
        for j in range(mu.shape[0]):
            best_mu[j] = mu[j]
    return math.sqrt(v if v > 0.0 else 0.0) - r, best_R


@njit(cache=True)
def _radius_root(G, radii, off, mu, Gmu, bvec, best_mu, tol, fw_tol, rmax):
    """The MEB of balls (some radius > 0) by Illinois regula falsi on h(r), from the warm
    start mu (``Gmu = G mu``; bvec and best_mu are scratch): the radius, with the best
    centre's weights written to mu."""
    lo = rmax
    hi = _radius_for(G, radii, mu, off)  # any centre gives an upper bound on the radius
    for j in range(mu.shape[0]):
        best_mu[j] = mu[j]
    fhi, best_R = _fw_at_radius(G, radii, off, hi, bvec, mu, Gmu, fw_tol, best_mu, hi)
    if fhi >= -tol * hi:
        return _take(mu, best_mu, best_R)
    flo, best_R = _fw_at_radius(G, radii, off, lo, bvec, mu, Gmu, fw_tol, best_mu, best_R)
    if flo <= tol * lo:
        return _take(mu, best_mu, best_R)
    side = 0
    for _ in range(ROOT_MAX_ITER):
        r = hi - fhi * (hi - lo) / (fhi - flo)
        if not (r > lo and r < hi):
            r = 0.5 * (lo + hi)
        fr, best_R = _fw_at_radius(G, radii, off, r, bvec, mu, Gmu, fw_tol, best_mu, best_R)
        if abs(fr) <= tol * r or hi - lo <= tol * hi:
            break
        if fr > 0.0:
            lo = r
            flo = fr
            if side == 1:
                fhi *= 0.5
            side = 1
        else:
            hi = r
            fhi = fr
            if side == -1:
                flo *= 0.5
            side = -1
    return _take(mu, best_mu, best_R)


@njit(cache=True)
def _take(mu, best_mu, best_R):
    """mu := best_mu; returns best_R."""
    for j in range(mu.shape[0]):
        mu[j] = best_mu[j]
    return best_R


@njit(cache=True)
def _fw_points(G, radii, off, mu, Gmu, bvec, fw_tol):
    """MEB of (weighted) points (radii all 0) from the warm start mu (in place, ``Gmu = G
    mu``; bvec is scratch): the radius."""
    for j in range(G.shape[0]):
        bvec[j] = G[j, j] + off[j]
    _pairwise_fw(G, bvec, mu, Gmu, fw_tol, FW_MAX_ITER)
    return _radius_for(G, radii, mu, off)


@kernel(F8(F8_2D, F8_1D, F8_1D, F8_1D, F8))
def meb_into(G, radii, off, mu, tol):
    """Minimum enclosing ball of balls B(c_j, radii[j]) given the Gram matrix of the c_j.

    Args:
        G: (m, m) float64 Gram matrix of the centres.
        radii: (m,) float64 radii (points have 0).
        off: (m,) float64 offsets of weighted points (0 for balls and unit weights): the
            point j stands for copies at squared distance ``|x - c_j|^2 + off_j`` (see
            the module docstring, "weights").
        mu: (m,) float64 zeros: receives the convex weights of the new centre over the c_j.
        tol: relative tolerance of the Frank-Wolfe gap and of the radius.

    Returns:
        the radius (recomputed exactly, so every input ball is enclosed).
    """
    m = G.shape[0]
    if m == 1:
        mu[0] = 1.0
        return radii[0] + math.sqrt(off[0] if off[0] > 0.0 else 0.0)
    if m == 2 and off[0] == 0.0 and off[1] == 0.0:
        return _two_balls(G, radii, off, mu)
    if m == 2 and off[0] == 0.0 and radii[1] == 0.0:
        return _ball_and_point(G, radii, off, mu)
    j0 = 0  # start at the (first) largest ball's centre
    for j in range(m):
        if radii[j] > radii[j0]:
            j0 = j
    rmax = radii[j0]
    mu[j0] = 1.0
    Gmu = np.empty(m)
    for j in range(m):
        Gmu[j] = G[j, j0]
    bvec = np.empty(m)
    fw_tol = tol * _diag_scale(G)
    if rmax <= 0.0:
        return _fw_points(G, radii, off, mu, Gmu, bvec, fw_tol)
    return _radius_root(G, radii, off, mu, Gmu, bvec, np.empty(m), tol, fw_tol, rmax)


def meb_of_balls(G: np.ndarray, radii: np.ndarray, off: np.ndarray,
                 tol: float = 1e-13) -> tuple[np.ndarray, float]:
    """:func:`meb_into` with fresh weights (float64 inputs, as there).

    Returns:
        (mu, R): convex weights of the new centre over the c_j, and its radius.
    """
    mu = np.zeros(G.shape[0])
    R = compiled(meb_into)(np.ascontiguousarray(G, dtype=np.float64),
                 np.ascontiguousarray(radii, dtype=np.float64),
                 np.ascontiguousarray(off, dtype=np.float64), mu, tol)
    return mu, R


@njit(cache=True)
def meb_of_points_warm(G, mu, off, tol):
    """Exact MEB of (weighted) points (all radii 0; ``off`` as in meb_into) from a warm
    start mu on the simplex (in place).

    Returns:
        the radius, as meb_into.
    """
    m = G.shape[0]
    return _fw_points(G, np.zeros(m), off, mu, G @ mu, np.empty(m), tol * _diag_scale(G))
