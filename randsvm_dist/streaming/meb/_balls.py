"""Compiled ball bookkeeping of the ball-cover learners (StreamSVM, Blurred Ball SVM).

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

Here: the layout of the state vector ``st``, kernel values, the distance test, the
lookahead buffer, and storing, dropping and discarding balls; the passes that use them are
``_primal`` (explicit w), ``_dual`` (coefficients over a store) and
``_coreset`` (the Blurred Ball cover step). The small MEB solver is ``_solver``
(its docstring also explains weighted rows).

numba's on-disk cache (``cache=True``) keys a kernel on its own file only: after editing
this module, clear the ``__pycache__`` of ``streaming/meb/`` so that the kernels of the other
private modules of this package that call it are compiled again.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming.meb._solver import meb_into
from randsvm_dist.streaming.meb._types import F8, F8_1D, F8_2D, I8, kernel

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


# -- kernels inside the compiled loops (LIBSVM parameter meanings) -------------------------
@njit(cache=True)
def kval(kid, dot, nu, nv, gamma, degree, coef0):
    """k(u, v) from u.v and the squared norms nu, nv."""
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


@njit(cache=True)
def kdiag(kid, xx, gamma, degree, coef0):
    """k(x, x) from the squared norm xx."""
    return kval(kid, xx, xx, xx, gamma, degree, coef0)


@njit(cache=True)
def dot_rows(U, i, V, k):
    """U[i] . V[k] accumulated in order (float64 rows)."""
    s = 0.0
    for t in range(U.shape[1]):
        s += U[i, t] * V[k, t]
    return s


@njit(cache=True)
def buffer_kernel(K, o, BX, Bn, nbuf, kid, gamma, degree, coef0):
    """K[o + i, o + k] = k(x_i, x_k) for the buffered points i <= k (upper triangle)."""
    for i in range(nbuf):
        for k in range(i, nbuf):
            K[o + i, o + k] = kval(kid, dot_rows(BX, i, BX, k), Bn[i], Bn[k], gamma,
                                   degree, coef0)


@njit(cache=True)
def augmented_gram(K, ys, e2, beta):
    """Gram matrix of augmented points from the upper triangle of their kernel matrix K:
    ``y_a y_c (k_ac + beta^2)``, plus the squared e part ``e2_a`` on the diagonal."""
    m = K.shape[0]
    G = np.empty((m, m))
    for a in range(m):
        for c in range(a, m):
            g = ys[a] * ys[c] * (K[a, c] + beta * beta)
            if a == c:
                g += e2[a]
            G[a, c] = g
            G[c, a] = g
    return G


# -- the distance test and the lookahead buffer ---------------------------------------------
@njit(cache=True)
def outside_all(fs, Q, ee, rr, nb, y, xx, beta, invC, eps):
    """True if the point lies outside every (1+eps)-expanded ball (fs: its scores)."""
    for i in range(nb):
        d2 = Q[i] - 2.0 * y * fs[i] + xx + beta * beta + ee[i] + invC
        lim = (1.0 + eps) * rr[i]
        if d2 <= lim * lim:
            return False
    return True


@njit(cache=True)
def buffer_point(st, By, Bf, Biw, k, y, f, iw, L):
    """Label, newest-ball score and 1/weight of the point written to buffer row k; True
    when the buffer is then full."""
    By[k] = y
    Bf[k] = f
    Biw[k] = iw
    st[ST_NBUF] = k + 1
    return k + 1 >= L


# -- storing, dropping and discarding balls ----------------------------------------------------
@njit(cache=True)
def start_cover(bb, Q, ee, rr, st, y, kxx, beta, invC, iw):
    """The first ball: the first point (k(x, x) = kxx, 1/weight iw); its centre's feature
    row is the caller's to write."""
    bb[0] = beta * y
    Q[0] = kxx + beta * beta
    ee[0] = invC * iw
    spread = invC * (1.0 - iw)
    rr[0] = math.sqrt(spread if spread > 0.0 else 0.0)
    st[ST_OFF0] = invC * (1.0 - iw)
    st[ST_NB] = 1
    st[ST_NCORE] = 1
    st[ST_STARTED] = 1


@njit(cache=True)
def _drop_front(rows, bb, Q, ee, rr, nb, k):
    """Remove the first k balls (the oldest, hence smallest) by shifting."""
    for i in range(nb - k):
        _copy_row(rows, i, rows[i + k])
        bb[i] = bb[i + k]
        Q[i] = Q[i + k]
        ee[i] = ee[i + k]
        rr[i] = rr[i + k]
    return nb - k


@njit(cache=True)
def slot_for_new_ball(rows, bb, Q, ee, rr, nb, kmax):
    """(slot of the new ball, live balls): the newest ball's slot when one ball is kept,
    else appended after the live balls, the oldest dropped first when the cover is full."""
    if kmax == 1:
        return 0, nb
    if nb == kmax:
        nb = _drop_front(rows, bb, Q, ee, rr, nb, 1)
    return nb, nb


@njit(cache=True)
def _copy_row(rows, i, row):
    """rows[i] := row (element by element: no broadcasting checks to compile)."""
    for t in range(rows.shape[1]):
        rows[i, t] = row[t]


@kernel(I8(F8_2D, F8_1D, F8_1D, F8_1D, F8_1D, I8, F8))
def discard_small(rows, bb, Q, ee, rr, nb, eps):
    """Blurred ball cover rule: drop balls with radius < eps/4 of the newest one."""
    if nb <= 1 or eps <= 0.0:
        return nb
    lim = 0.25 * eps * rr[nb - 1]
    k = np.int64(0)  # not a literal: _copy_row gets one signature
    for i in range(nb):
        if i == nb - 1 or rr[i] >= lim:
            if k != i:
                _copy_row(rows, k, rows[i])
                bb[k] = bb[i]
                Q[k] = Q[i]
                ee[k] = ee[i]
                rr[k] = rr[i]
            k += 1
    return k


@njit(cache=True)
def commit_ball(rows, bb, Q, ee, rr, st, slot, nb, row, b, q, e, R, eps):
    """Store a new ball in ``slot`` (appending when slot == nb), drop small balls, empty the
    buffer; the ball count goes to ``st``."""
    _copy_row(rows, slot, row)
    bb[slot] = b
    Q[slot] = q
    ee[slot] = e
    rr[slot] = R
    if slot == nb:
        nb += 1
    st[ST_NB] = discard_small(rows, bb, Q, ee, rr, nb, eps)
    st[ST_NBUF] = 0


@njit(cache=True)
def enclose_newest(rows, bb, Q, ee, rr, st, BX, By, Bf, Bn, Biw, nbuf, kmax, beta, invC,
                   kid, gamma, degree, coef0):
    """The MEB of the newest ball and the buffered points, its slot, and the newest ball's
    share of the new centre (the buffer's shares are the caller's to add).

    Returns:
        (G, mu, R, slot, nb, row, b, e): the Gram matrix of the augmented centres (ball
        first), the centre's weights, radius, slot (see slot_for_new_ball), live balls,
        and mu_0 times the newest ball's feature row, bias and e part.
    """
    j = int(st[ST_NB]) - 1
    m = nbuf + 1
    K = np.zeros((m, m))
    buffer_kernel(K, np.int64(1), BX, Bn, nbuf, kid, gamma, degree, coef0)  # not a literal
    ys = np.zeros(m)
    e2 = np.zeros(m)
    for i in range(nbuf):
        ys[i + 1] = By[i]
        e2[i + 1] = invC * Biw[i]
    G = augmented_gram(K, ys, e2, beta)  # row and column 0 are the ball's, set next
    G[0, 0] = Q[j] + ee[j]
    for i in range(nbuf):
        G[0, i + 1] = By[i] * Bf[i]
        G[i + 1, 0] = G[0, i + 1]
    radii = np.zeros(m)
    off = np.zeros(m)
    radii[0] = rr[j]
    if st[ST_OFF0] != 0.0:  # the ball is still the first point, of weight != 1: its copies
        radii[0] = 0.0
        off[0] = st[ST_OFF0]
    for i in range(nbuf):
        off[i + 1] = invC * (1.0 - Biw[i])
    mu = np.zeros(m)
    R = meb_into(G, radii, off, mu, 1e-13)
    st[ST_OFF0] = 0.0
    slot, nb = slot_for_new_ball(rows, bb, Q, ee, rr, j + 1, kmax)
    j = nb - 1
    mu0 = mu[0]
    row = np.empty(rows.shape[1])
    for t in range(rows.shape[1]):
        row[t] = mu0 * rows[j, t]
    return G, mu, R, slot, nb, row, mu0 * bb[j], mu0 * mu0 * ee[j]


@njit(cache=True)
def quad_form(G, mu):
    """mu' G mu, summed row by row."""
    m = G.shape[0]
    s = 0.0
    for a in range(m):
        for c in range(m):
            s += mu[a] * mu[c] * G[a, c]
    return s


@njit(cache=True)
def store_point(S, Sn, Siw, BX, Bn, Biw, i, M):
    """Copy buffered point i (row, squared norm, 1/weight) to row M of the store."""
    _copy_row(S, M, BX[i])
    Sn[M] = Bn[i]
    Siw[M] = Biw[i]
