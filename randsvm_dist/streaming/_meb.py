"""Compiled geometry shared by StreamSVM and Blurred Ball SVM (minimum enclosing balls).

Every point of the stream is the augmented vector ``p_n = [y_n phi(x_n); beta y_n;
C^-1/2 e_n]`` (``beta`` = 1 with an intercept, 0 without). A ball's centre is a convex
combination ``c = sum_n a_n p_n`` and is stored as:

- ``w`` (primal, ``(D,)``) or a coefficient row over a store of kept points (dual/kernel),
  holding ``sum_n a_n y_n phi(x_n)``;
- ``b = beta sum_n a_n y_n`` (the bias coordinate; the decision is ``w.x + beta b``);
- ``Q = |w|^2 + b^2`` (feature part of ``|c|^2``);
- ``e = sum_n a_n^2 / C`` (the ``e_n`` part of ``|c|^2``; it never needs the e_n's);
- ``r`` the radius.

The squared distance of a *new* point (its ``e_n`` is orthogonal to every centre) is
``Q - 2 y f(x) + k(x,x) + beta^2 + e + 1/C`` with ``f(x) = w.x + beta b``.

The small problem solved when a lookahead buffer fills is the minimum enclosing ball of
one ball ``B(c_0, r_0)`` and points ``p_1..p_m``, given their Gram matrix. The optimal
centre is a convex combination of the centres (KKT). For a trial radius ``r`` put
``a_j(r) = 2 r r_j - r_j^2``; then ``v(r) = min_x max_j |x - c_j|^2 + a_j(r)`` is a point
MEB with additive offsets, solved in its dual ``max_{mu in simplex} sum_j mu_j (G_jj +
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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

LINEAR, POLY, RBF, SIGMOID = 0, 1, 2, 3
KERNEL_IDS = {"linear": LINEAR, "poly": POLY, "rbf": RBF, "sigmoid": SIGMOID}

# st (float64 state vector) slots
ST_NB = 0        # number of live balls
ST_NBUF = 1      # points in the lookahead buffer
ST_NCORE = 2     # points that entered a centre with non-zero weight
ST_NSTORE = 3    # dual only: points in the store
ST_STARTED = 4   # 1 once the first point initialised the first ball
ST_OFF0 = 5      # offset of the first ball while it is still the first (weighted) point
ST_SIZE = 6


# --------------------------------------------------------------------------------------
# small MEB solver
# --------------------------------------------------------------------------------------
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
            t = min(t, (best - worst) / (2.0 * denom))
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
def meb_of_balls(G, radii, off, tol=1e-13):
    """Minimum enclosing ball of balls B(c_j, radii[j]) given the Gram matrix of the c_j.

    Args:
        G: (m, m) float64 Gram matrix of the centres.
        radii: (m,) float64 radii (points have 0).
        off: (m,) float64 offsets of weighted points (0 for balls and unit weights): the
            point j stands for copies at squared distance ``|x - c_j|^2 + off_j`` (see
            the module docstring, "weights").
        tol: relative tolerance of the Frank-Wolfe gap and of the radius.

    Returns:
        (mu, R): convex weights of the new centre over the c_j, and its radius
        (recomputed exactly, so every input ball is enclosed).
    """
    m = G.shape[0]
    mu = np.zeros(m)
    if m == 1:
        mu[0] = 1.0
        return mu, radii[0] + math.sqrt(max(off[0], 0.0))
    scale = 0.0
    for j in range(m):
        scale = max(scale, abs(G[j, j]))
    scale = max(scale, 1e-300)
    if m == 2 and off[0] == 0.0 and off[1] == 0.0:  # closed form: two balls
        d2 = G[0, 0] - 2.0 * G[0, 1] + G[1, 1]
        d = math.sqrt(d2) if d2 > 0.0 else 0.0
        if d + radii[1] <= radii[0]:
            mu[0] = 1.0
            return mu, radii[0]
        if d + radii[0] <= radii[1]:
            mu[1] = 1.0
            return mu, radii[1]
        R = 0.5 * (d + radii[0] + radii[1])
        t = (R - radii[0]) / d
        mu[0] = 1.0 - t
        mu[1] = t
        return mu, _radius_for(G, radii, mu, off)
    if m == 2 and off[0] == 0.0 and radii[1] == 0.0:  # closed form: a ball, a weighted point
        # on the segment c = c0 + t (p - c0): t d + r0 = sqrt((1 - t)^2 d^2 + off)
        d2 = G[0, 0] - 2.0 * G[0, 1] + G[1, 1]
        d = math.sqrt(d2) if d2 > 0.0 else 0.0
        r0 = radii[0]
        if d2 + off[1] <= r0 * r0:
            mu[0] = 1.0
            return mu, r0
        t = 1.0 if d == 0.0 else (d2 + off[1] - r0 * r0) / (2.0 * d * (d + r0))
        t = min(max(t, 0.0), 1.0)
        mu[0] = 1.0 - t
        mu[1] = t
        return mu, _radius_for(G, radii, mu, off)
    # start at the largest ball's centre
    j0 = 0
    for j in range(m):
        if radii[j] > radii[j0]:
            j0 = j
    mu[j0] = 1.0
    Gmu = G[:, j0].copy()
    bvec = np.empty(m)
    rmax = 0.0
    for j in range(m):
        rmax = max(rmax, radii[j])
    fw_tol = tol * scale
    max_iter = 200000
    if rmax <= 0.0:
        for j in range(m):
            bvec[j] = G[j, j] + off[j]
        _pairwise_fw(G, bvec, mu, Gmu, fw_tol, max_iter)
        return mu, _radius_for(G, radii, mu, off)
    lo = rmax
    hi = _radius_for(G, radii, mu, off)  # any centre gives an upper bound on the radius
    best_mu = mu.copy()
    best_R = hi
    for j in range(m):
        bvec[j] = G[j, j] + off[j] + 2.0 * hi * radii[j] - radii[j] * radii[j]
    v = _pairwise_fw(G, bvec, mu, Gmu, fw_tol, max_iter)
    fhi = math.sqrt(max(v, 0.0)) - hi
    R = _radius_for(G, radii, mu, off)
    if R < best_R:
        best_R = R
        best_mu[:] = mu
    if fhi >= -tol * hi:
        return best_mu, best_R
    for j in range(m):
        bvec[j] = G[j, j] + off[j] + 2.0 * lo * radii[j] - radii[j] * radii[j]
    v = _pairwise_fw(G, bvec, mu, Gmu, fw_tol, max_iter)
    flo = math.sqrt(max(v, 0.0)) - lo
    R = _radius_for(G, radii, mu, off)
    if R < best_R:
        best_R = R
        best_mu[:] = mu
    if flo <= tol * lo:
        return best_mu, best_R
    side = 0
    for _ in range(200):
        r = hi - fhi * (hi - lo) / (fhi - flo)
        if not (r > lo and r < hi):
            r = 0.5 * (lo + hi)
        for j in range(m):
            bvec[j] = G[j, j] + off[j] + 2.0 * r * radii[j] - radii[j] * radii[j]
        v = _pairwise_fw(G, bvec, mu, Gmu, fw_tol, max_iter)
        R = _radius_for(G, radii, mu, off)
        if R < best_R:
            best_R = R
            best_mu[:] = mu
        fr = math.sqrt(max(v, 0.0)) - r
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
    return best_mu, best_R


@njit(cache=True)
def meb_of_points_warm(G, mu, off, tol=1e-13):
    """Exact MEB of (weighted) points (all radii 0; ``off`` as in meb_of_balls) from a warm
    start mu on the simplex (in place).

    Returns:
        (mu, R) as meb_of_balls.
    """
    m = G.shape[0]
    scale = 0.0
    for j in range(m):
        scale = max(scale, abs(G[j, j]))
    bvec = np.empty(m)
    for j in range(m):
        bvec[j] = G[j, j] + off[j]
    Gmu = G @ mu
    _pairwise_fw(G, bvec, mu, Gmu, tol * max(scale, 1e-300), 200000)
    return mu, _radius_for(G, np.zeros(m), mu, off)


# --------------------------------------------------------------------------------------
# kernels inside the compiled loops (LIBSVM parameter meanings)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _kval(kid, dot, nu, nv, gamma, degree, coef0):
    if kid == LINEAR:
        return dot
    if kid == RBF:
        d2 = nu + nv - 2.0 * dot
        if d2 < 0.0:
            d2 = 0.0
        return math.exp(-gamma * d2)
    if kid == POLY:
        return (gamma * dot + coef0) ** degree
    return math.tanh(gamma * dot + coef0)


# --------------------------------------------------------------------------------------
# ball bookkeeping shared by the primal and dual loops
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _slot_for_new_ball(nb, kmax):
    """Index the new ball goes to; shifts are done by the caller via _drop_front."""
    if kmax == 1:
        return 0
    return nb


@njit(cache=True)
def _drop_front(rows, bb, Q, ee, rr, nb, k):
    """Remove the first k balls (the oldest, hence smallest) by shifting."""
    for i in range(nb - k):
        rows[i, :] = rows[i + k, :]
        bb[i] = bb[i + k]
        Q[i] = Q[i + k]
        ee[i] = ee[i + k]
        rr[i] = rr[i + k]
    return nb - k


@njit(cache=True)
def _discard_small(rows, bb, Q, ee, rr, nb, eps):
    """Blurred ball cover rule: drop balls with radius < eps/4 of the newest one."""
    if nb <= 1 or eps <= 0.0:
        return nb
    lim = 0.25 * eps * rr[nb - 1]
    k = 0
    for i in range(nb):
        if i == nb - 1 or rr[i] >= lim:
            if k != i:
                rows[k, :] = rows[i, :]
                bb[k] = bb[i]
                Q[k] = Q[i]
                ee[k] = ee[i]
                rr[k] = rr[i]
            k += 1
    return k


# --------------------------------------------------------------------------------------
# primal (linear kernel, explicit w)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _commit_ball(A, bb, Q, ee, rr, st, slot, nb, a_new, b_new, mgm, e_new, R, M, added, eps):
    """Store a new ball in ``slot`` (appending when slot == nb), drop small balls, update
    the counters in ``st``."""
    A[slot, :] = a_new
    bb[slot] = b_new
    Q[slot] = max(mgm - e_new, 0.0)
    ee[slot] = e_new
    rr[slot] = R
    if slot == nb:
        nb += 1
    nb = _discard_small(A, bb, Q, ee, rr, nb, eps)
    st[ST_NB] = nb
    st[ST_NBUF] = 0
    st[ST_NSTORE] = M
    st[ST_NCORE] += added


@njit(cache=True)
def _primal_init(W, bb, Q, ee, rr, st, x, y, beta, invC, iw):
    D = W.shape[1]
    q = 0.0
    for k in range(D):
        W[0, k] = y * x[k]
        q += x[k] * x[k]
    bb[0] = beta * y
    Q[0] = q + beta * beta
    ee[0] = invC * iw
    rr[0] = math.sqrt(max(invC * (1.0 - iw), 0.0))
    st[ST_OFF0] = invC * (1.0 - iw)
    st[ST_NB] = 1
    st[ST_NCORE] = 1
    st[ST_STARTED] = 1


@njit(cache=True)
def _meb_ball_and_buffer(Q, ee, rr, j, BX, By, Bf, Bn, Biw, nbuf, beta, invC, kid, gamma,
                         degree, coef0, off0):
    """MEB of ball j and the buffered points: the Gram matrix of the augmented centres
    (ball j first), then meb_of_balls. Returns (G, mu, R). Bn is unused for a linear
    kernel."""
    D = BX.shape[1]
    m = nbuf + 1
    G = np.empty((m, m))
    radii = np.zeros(m)
    off = np.zeros(m)
    G[0, 0] = Q[j] + ee[j]
    radii[0] = rr[j]
    if off0 != 0.0:  # the ball is still the first point, of weight != 1: its copies
        radii[0] = 0.0
        off[0] = off0
    for i in range(nbuf):
        off[i + 1] = invC * (1.0 - Biw[i])
    for i in range(nbuf):
        G[0, i + 1] = By[i] * Bf[i]
        G[i + 1, 0] = G[0, i + 1]
        for k in range(i, nbuf):
            s = 0.0
            for t in range(D):
                s += BX[i, t] * BX[k, t]
            g = By[i] * By[k] * (_kval(kid, s, Bn[i], Bn[k], gamma, degree, coef0)
                                 + beta * beta)
            if i == k:
                g += invC * Biw[i]
            G[i + 1, k + 1] = g
            G[k + 1, i + 1] = g
    mu, R = meb_of_balls(G, radii, off)
    return G, mu, R


@njit(cache=True)
def primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC):
    """Replace/extend the cover with the MEB of the newest ball and the buffered points."""
    nbuf = int(st[ST_NBUF])
    if nbuf == 0:
        return
    nb = int(st[ST_NB])
    j = nb - 1
    D = W.shape[1]
    G, mu, R = _meb_ball_and_buffer(Q, ee, rr, j, BX, By, Bf, Bf, Biw, nbuf, beta, invC,
                                    LINEAR, 0.0, 0, 0.0, st[ST_OFF0])
    st[ST_OFF0] = 0.0
    slot = _slot_for_new_ball(nb, kmax)
    if slot == kmax:  # cover full: drop the oldest ball
        nb = _drop_front(W, bb, Q, ee, rr, nb, 1)
        j -= 1
        slot = nb
    mu0 = mu[0]
    w_new = mu0 * W[j, :]
    b_new = mu0 * bb[j]
    e_new = mu0 * mu0 * ee[j]
    added = 0
    for i in range(nbuf):
        a = mu[i + 1]
        if a > 0.0:
            added += 1
            c = a * By[i]
            for t in range(D):
                w_new[t] += c * BX[i, t]
            b_new += c * beta
            e_new += a * a * invC * Biw[i]
    q = 0.0
    for t in range(D):
        W[slot, t] = w_new[t]
        q += w_new[t] * w_new[t]
    bb[slot] = b_new
    Q[slot] = q + b_new * b_new
    ee[slot] = e_new
    rr[slot] = R
    if slot == nb:
        nb += 1
    nb = _discard_small(W, bb, Q, ee, rr, nb, eps)
    st[ST_NB] = nb
    st[ST_NBUF] = 0
    if mu0 > 0.0 or kmax > 1:
        st[ST_NCORE] += added
    else:  # the old centre dropped out of the new one: only the new points remain
        st[ST_NCORE] = added


@njit(cache=True)
def _outside_all(fs, Q, ee, rr, nb, y, xx, beta, invC, eps, fnew):
    """True if the point lies outside every (1+eps)-expanded ball; fnew = f of newest."""
    for i in range(nb):
        d2 = Q[i] - 2.0 * y * fs[i] + xx + beta * beta + ee[i] + invC
        lim = (1.0 + eps) * rr[i]
        if d2 <= lim * lim:
            return False
    return True


@njit(cache=True)
def primal_pass_dense(X, y, iw, W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, L, eps, beta,
                      invC, norm):
    """One pass of the (blurred) ball cover over dense rows, primal form.

    L == 1 with kmax == 1 and eps == 0 is StreamSVM Algorithm 1; L > 1 Algorithm 2.
    iw: per-row 1 / weight (a row of weight w has slack cost C w: its e part is
    (C w)^-1/2); Biw: the buffer's. norm: scale each row to unit L2 norm on the fly.
    """
    n, D = X.shape
    fs = np.empty(W.shape[0])
    xrow = np.empty(D)
    for r in range(n):
        yr = y[r]
        nb = int(st[ST_NB])
        xx = 0.0
        if nb == 1:
            s = 0.0
            for t in range(D):
                v = np.float64(X[r, t])
                xx += v * v
                s += W[0, t] * v
            fs[0] = s
        else:
            for t in range(D):
                v = np.float64(X[r, t])
                xx += v * v
            for i in range(nb):
                s = 0.0
                for t in range(D):
                    s += W[i, t] * X[r, t]
                fs[i] = s
        sc = 1.0
        if norm:
            sc = 1.0 / math.sqrt(xx) if xx > 0.0 else 0.0
            xx = xx * sc * sc
        if st[ST_STARTED] == 0:
            for t in range(D):
                xrow[t] = sc * X[r, t]
            _primal_init(W, bb, Q, ee, rr, st, xrow, yr, beta, invC, iw[r])
            continue
        for i in range(nb):
            fs[i] = sc * fs[i] + beta * bb[i]
        if _outside_all(fs, Q, ee, rr, nb, yr, xx, beta, invC, eps, fs[nb - 1]):
            k = int(st[ST_NBUF])
            for t in range(D):
                BX[k, t] = sc * X[r, t]
            By[k] = yr
            Bf[k] = fs[nb - 1]
            Biw[k] = iw[r]
            st[ST_NBUF] = k + 1
            if k + 1 >= L:
                primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC)


@njit(cache=True)
def primal_pass_csr(indptr, indices, data, y, iw, W, bb, Q, ee, rr, st, BX, By, Bf, Biw,
                    kmax, L, eps, beta, invC, norm):
    """primal_pass_dense for CSR rows (buffer rows are scattered to dense)."""
    n = indptr.shape[0] - 1
    D = W.shape[1]
    fs = np.empty(W.shape[0])
    xrow = np.zeros(D)
    for r in range(n):
        yr = y[r]
        a, z = indptr[r], indptr[r + 1]
        xx = 0.0
        for p in range(a, z):
            xx += np.float64(data[p]) * data[p]
        sc = 1.0
        if norm:
            sc = 1.0 / math.sqrt(xx) if xx > 0.0 else 0.0
            xx = xx * sc * sc
        if st[ST_STARTED] == 0:
            xrow[:] = 0.0
            for p in range(a, z):
                xrow[indices[p]] = sc * data[p]
            _primal_init(W, bb, Q, ee, rr, st, xrow, yr, beta, invC, iw[r])
            continue
        nb = int(st[ST_NB])
        for i in range(nb):
            s = 0.0
            for p in range(a, z):
                s += W[i, indices[p]] * data[p]
            fs[i] = sc * s + beta * bb[i]
        if _outside_all(fs, Q, ee, rr, nb, yr, xx, beta, invC, eps, fs[nb - 1]):
            k = int(st[ST_NBUF])
            BX[k, :] = 0.0
            for p in range(a, z):
                BX[k, indices[p]] = sc * data[p]
            By[k] = yr
            Bf[k] = fs[nb - 1]
            Biw[k] = iw[r]
            st[ST_NBUF] = k + 1
            if k + 1 >= L:
                primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC)


# --------------------------------------------------------------------------------------
# dual (any kernel): centres are coefficient rows A over a store S of kept points
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _kdiag(kid, xx, gamma, degree, coef0):
    return _kval(kid, xx, xx, xx, gamma, degree, coef0)


@njit(cache=True)
def dual_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, BX, By, Bf, Bn, Biw, kmax, eps, beta, invC,
               kid, gamma, degree, coef0):
    """dual counterpart of primal_flush; the store must have room for the buffer."""
    nbuf = int(st[ST_NBUF])
    if nbuf == 0:
        return
    nb = int(st[ST_NB])
    M = int(st[ST_NSTORE])
    j = nb - 1
    m = nbuf + 1
    G, mu, R = _meb_ball_and_buffer(Q, ee, rr, j, BX, By, Bf, Bn, Biw, nbuf, beta, invC, kid,
                                    gamma, degree, coef0, st[ST_OFF0])
    st[ST_OFF0] = 0.0
    slot = _slot_for_new_ball(nb, kmax)
    if slot == kmax:
        nb = _drop_front(A, bb, Q, ee, rr, nb, 1)
        j -= 1
        slot = nb
    mu0 = mu[0]
    a_new = mu0 * A[j, :]
    b_new = mu0 * bb[j]
    e_new = mu0 * mu0 * ee[j]
    added = 0
    for i in range(nbuf):
        a = mu[i + 1]
        if a > 0.0:
            S[M, :] = BX[i, :]
            Sn[M] = Bn[i]
            Siw[M] = Biw[i]
            a_new[M] = a * By[i]
            b_new += a * By[i] * beta
            e_new += a * a * invC * Biw[i]
            M += 1
            added += 1
    # |c_feat|^2 = mu'G mu minus the e parts
    mgm = 0.0
    for i in range(m):
        for k in range(m):
            mgm += mu[i] * mu[k] * G[i, k]
    _commit_ball(A, bb, Q, ee, rr, st, slot, nb, a_new, b_new, mgm, e_new, R, M, added, eps)


@njit(cache=True)
def dual_pass(X, y, iw, start, A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, BX, By, Bf, Bn, Biw, kmax,
              L, eps, beta, invC, kid, gamma, degree, coef0, coreset):
    """One pass of the ball cover over dense rows X[start:], kernel (dual) form.

    coreset: build each new ball as the MEB of the live balls' core points and the
    buffer (Blurred Ball cover) instead of the MEB of the newest ball and the buffer;
    Ks then caches the kernel matrix of the store (unused otherwise).

    Returns the index of the first unprocessed row: it stops early when the store
    might not hold the next flush (the caller grows the store and calls again).
    """
    n, D = X.shape
    cap = S.shape[0]
    kv = np.empty(cap)
    fs = np.empty(A.shape[0])
    # linear kernel: score against explicit w_i = sum_s A[i, s] S[s] (refreshed per flush)
    Wd = np.zeros((A.shape[0], D))
    stale = True
    for r in range(start, n):
        yr = y[r]
        xx = 0.0
        for t in range(D):
            xx += np.float64(X[r, t]) * X[r, t]
        M = int(st[ST_NSTORE])
        if st[ST_STARTED] == 0:
            if M + 1 > cap:
                return r
            S[M, :] = X[r, :]
            Sn[M] = xx
            Siw[M] = iw[r]
            if coreset:
                Ks[M, M] = _kdiag(kid, xx, gamma, degree, coef0)
            A[0, :] = 0.0
            A[0, M] = yr
            bb[0] = beta * yr
            Q[0] = _kdiag(kid, xx, gamma, degree, coef0) + beta * beta
            ee[0] = invC * iw[r]
            rr[0] = math.sqrt(max(invC * (1.0 - iw[r]), 0.0))
            st[ST_OFF0] = invC * (1.0 - iw[r])
            st[ST_NB] = 1
            st[ST_NCORE] = 1
            st[ST_NSTORE] = M + 1
            st[ST_STARTED] = 1
            continue
        if M + L > cap:
            return r
        nb = int(st[ST_NB])
        if kid == LINEAR:
            if stale:
                for i in range(nb):
                    for t in range(D):
                        acc = 0.0
                        for s_ in range(M):
                            acc += A[i, s_] * S[s_, t]
                        Wd[i, t] = acc
                stale = False
            for i in range(nb):
                f = 0.0
                for t in range(D):
                    f += Wd[i, t] * X[r, t]
                fs[i] = f + beta * bb[i]
        else:
            for s_ in range(M):
                d = 0.0
                for t in range(D):
                    d += S[s_, t] * X[r, t]
                kv[s_] = _kval(kid, d, Sn[s_], xx, gamma, degree, coef0)
            for i in range(nb):
                f = 0.0
                for s_ in range(M):
                    f += A[i, s_] * kv[s_]
                fs[i] = f + beta * bb[i]
        kxx = _kdiag(kid, xx, gamma, degree, coef0)
        if _outside_all(fs, Q, ee, rr, nb, yr, kxx, beta, invC, eps, fs[nb - 1]):
            k = int(st[ST_NBUF])
            for t in range(D):
                BX[k, t] = X[r, t]
            By[k] = yr
            Bf[k] = fs[nb - 1]
            Bn[k] = xx
            Biw[k] = iw[r]
            st[ST_NBUF] = k + 1
            if k + 1 >= L:
                stale = True
                if coreset:
                    coreset_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, BX, By, Bn, Biw, kmax,
                                  eps, beta, invC, kid, gamma, degree, coef0, False)
                else:
                    dual_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, BX, By, Bf, Bn, Biw, kmax,
                               eps, beta, invC, kid, gamma, degree, coef0)
    return n


@njit(cache=True)
def coreset_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, BX, By, Bn, Biw, kmax, eps, beta,
                  invC, kid, gamma, degree, coef0, force):
    """Blurred ball cover step: the new ball is the exact MEB of the core points of every
    live ball plus the buffered points; its core set = the points with weight > 0.

    The store must have room for the buffer; Ks[:M, :M] is the store's kernel matrix
    (kept up to date here). A stored point's label is the sign of any non-zero
    coefficient (coefficients are a_n y_n with a_n > 0).
    """
    nbuf = int(st[ST_NBUF])
    if nbuf == 0 and not force:
        return
    nb = int(st[ST_NB])
    M = int(st[ST_NSTORE])
    D = S.shape[1]
    cand = np.empty(M, dtype=np.int64)
    cy = np.empty(M)
    nc = 0
    for s_ in range(M):
        for i in range(nb):
            if A[i, s_] != 0.0:
                cand[nc] = s_
                cy[nc] = 1.0 if A[i, s_] > 0.0 else -1.0
                nc += 1
                break
    m = nc + nbuf
    Py = np.empty(m)
    Pic = np.empty(m)  # each point's e part squared: 1 / (C weight)
    for a in range(nc):
        Py[a] = cy[a]
        Pic[a] = invC * Siw[cand[a]]
    for i in range(nbuf):
        Py[nc + i] = By[i]
        Pic[nc + i] = invC * Biw[i]
    Kc = np.empty((m, m))
    for a in range(nc):
        for c in range(a, nc):
            Kc[a, c] = Ks[cand[a], cand[c]]
    for i in range(nbuf):
        for a in range(nc):
            d = 0.0
            for t in range(D):
                d += S[cand[a], t] * BX[i, t]
            Kc[a, nc + i] = _kval(kid, d, Sn[cand[a]], Bn[i], gamma, degree, coef0)
        for k in range(i, nbuf):
            d = 0.0
            for t in range(D):
                d += BX[i, t] * BX[k, t]
            Kc[nc + i, nc + k] = _kval(kid, d, Bn[i], Bn[k], gamma, degree, coef0)
    G = np.empty((m, m))
    for a in range(m):
        for c in range(a, m):
            g = Py[a] * Py[c] * (Kc[a, c] + beta * beta)
            if a == c:
                g += Pic[a]
            G[a, c] = g
            G[c, a] = g
    # warm start: the newest ball's weights over its core points
    mu = np.zeros(m)
    tot = 0.0
    for a in range(nc):
        w_ = abs(A[nb - 1, cand[a]])
        mu[a] = w_
        tot += w_
    if tot > 0.0:
        for a in range(nc):
            mu[a] /= tot
    else:
        mu[0] = 1.0
    off = np.empty(m)
    for a in range(m):
        off[a] = invC - Pic[a]
    mu, R = meb_of_points_warm(G, mu, off, 1e-10)  # the radius is exact for any mu
    slot = _slot_for_new_ball(nb, kmax)
    if slot == kmax:
        nb = _drop_front(A, bb, Q, ee, rr, nb, 1)
        slot = nb
    a_new = np.zeros(A.shape[1])
    b_new = 0.0
    e_new = 0.0
    added = 0
    for a in range(nc):
        if mu[a] > 0.0:
            a_new[cand[a]] = mu[a] * Py[a]
    for i in range(nbuf):
        w_ = mu[nc + i]
        if w_ > 0.0:
            S[M, :] = BX[i, :]
            Sn[M] = Bn[i]
            Siw[M] = Biw[i]
            for s_ in range(M + 1):
                d = 0.0
                for t in range(D):
                    d += S[s_, t] * S[M, t]
                kv = _kval(kid, d, Sn[s_], Sn[M], gamma, degree, coef0)
                Ks[s_, M] = kv
                Ks[M, s_] = kv
            a_new[M] = w_ * By[i]
            M += 1
            added += 1
    mgm = 0.0
    for a in range(m):
        b_new += mu[a] * Py[a] * beta
        e_new += mu[a] * mu[a] * Pic[a]
        for c in range(m):
            mgm += mu[a] * mu[c] * G[a, c]
    _commit_ball(A, bb, Q, ee, rr, st, slot, nb, a_new, b_new, mgm, e_new, R, M, added, eps)


@njit(cache=True)
def cross_gram(Sa, Sna, Sb, Snb, kid, gamma, degree, coef0):
    """Kernel matrix between two stores in float64 (exact enough for merging balls)."""
    na, nb_ = Sa.shape[0], Sb.shape[0]
    K = np.empty((na, nb_))
    for i in range(na):
        for j in range(nb_):
            d = 0.0
            for t in range(Sa.shape[1]):
                d += Sa[i, t] * Sb[j, t]
            K[i, j] = _kval(kid, d, Sna[i], Snb[j], gamma, degree, coef0)
    return K
