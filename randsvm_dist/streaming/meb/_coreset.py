"""Compiled core-set step of the Blurred Ball cover (kernel/store form, any kernel).

A new ball is the exact MEB of the core points of every live ball (the stored points some
ball's centre uses) plus the lookahead buffer; its core set is the points of weight > 0.
The state layout and the geometry are ``_balls``'s, the solver ``_solver``'s.

The learner (``_cover``) calls ``coreset_flush`` when a pass of ``_dual`` has
filled the buffer, at the end of the stream and when merging covers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from randsvm_dist.streaming.meb._balls import (
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_NSTORE,
    augmented_gram,
    buffer_kernel,
    commit_ball,
    dot_rows,
    kval,
    quad_form,
    slot_for_new_ball,
    store_point,
)
from randsvm_dist.streaming.meb._solver import meb_of_points_warm
from randsvm_dist.streaming.meb._types import B1, BALLS, F8, F8_1D, F8_2D, I8, KERNEL, kernel


@njit(cache=True)
def _core_points(A, nb, M):
    """(store indices some live ball uses, their labels, their count). A stored point's
    label is the sign of any non-zero coefficient (coefficients are a_n y_n, a_n > 0)."""
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
    return cand, cy, nc


@njit(cache=True)
def _core_gram(S, Sn, Siw, Ks, cand, cy, nc, BX, By, Bn, Biw, nbuf, beta, invC, kid, gamma,
               degree, coef0):
    """Augmented Gram matrix of the core points then the buffered points.

    Returns:
        (G, labels, squared e parts 1 / (C weight)).
    """
    m = nc + nbuf
    Py = np.empty(m)
    Pic = np.empty(m)
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
            Kc[a, nc + i] = kval(kid, dot_rows(S, cand[a], BX, i), Sn[cand[a]], Bn[i], gamma,
                                 degree, coef0)
    buffer_kernel(Kc, nc, BX, Bn, nbuf, kid, gamma, degree, coef0)
    return augmented_gram(Kc, Py, Pic, beta), Py, Pic


@njit(cache=True)
def _warm_start(A, nb, cand, nc, m):
    """The newest ball's weights over the core points (normalised), as a start."""
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
    return mu


@njit(cache=True)
def _store_with_kernel_row(S, Sn, Siw, Ks, BX, Bn, Biw, i, M, kid, gamma, degree, coef0):
    """store_point, plus the new point's row and column of the store's kernel matrix."""
    store_point(S, Sn, Siw, BX, Bn, Biw, i, M)
    for s_ in range(M + 1):
        kv = kval(kid, dot_rows(S, s_, S, M), Sn[s_], Sn[M], gamma, degree, coef0)
        Ks[s_, M] = kv
        Ks[M, s_] = kv


@kernel((*BALLS, F8_2D, F8_1D, F8_1D, F8_2D, F8_2D, F8_1D, F8_1D, F8_1D, I8, F8, F8, F8,
       *KERNEL, B1))
def coreset_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, BX, By, Bn, Biw, kmax, eps, beta,
                  invC, kid, gamma, degree, coef0, force):
    """Blurred ball cover step: the new ball is the exact MEB of the core points of every
    live ball plus the buffered points; its core set = the points with weight > 0.

    The store must have room for the buffer; Ks[:M, :M] is the store's kernel matrix
    (kept up to date here).
    """
    nbuf = int(st[ST_NBUF])
    if nbuf == 0 and not force:
        return
    nb = int(st[ST_NB])
    M = int(st[ST_NSTORE])
    cand, cy, nc = _core_points(A, nb, M)
    G, Py, Pic = _core_gram(S, Sn, Siw, Ks, cand, cy, nc, BX, By, Bn, Biw, nbuf, beta, invC,
                            kid, gamma, degree, coef0)
    m = nc + nbuf
    mu = _warm_start(A, nb, cand, nc, m)
    off = np.empty(m)
    for a in range(m):
        off[a] = invC - Pic[a]
    R = meb_of_points_warm(G, mu, off, 1e-10)  # the radius is exact for any mu
    slot, nb = slot_for_new_ball(A, bb, Q, ee, rr, nb, kmax)
    a_new = np.zeros(A.shape[1])
    added = 0
    for a in range(nc):
        if mu[a] > 0.0:
            a_new[cand[a]] = mu[a] * Py[a]
    for i in range(nbuf):
        w_ = mu[nc + i]
        if w_ > 0.0:
            _store_with_kernel_row(S, Sn, Siw, Ks, BX, Bn, Biw, i, M, kid, gamma, degree,
                                   coef0)
            a_new[M] = w_ * By[i]
            M += 1
            added += 1
    b_new = 0.0
    e_new = 0.0
    for a in range(m):
        b_new += mu[a] * Py[a] * beta
        e_new += mu[a] * mu[a] * Pic[a]
    commit_ball(A, bb, Q, ee, rr, st, slot, nb, a_new, b_new,
                max(quad_form(G, mu) - e_new, 0.0), e_new, R, eps)
    st[ST_NSTORE] = M
    st[ST_NCORE] += added
