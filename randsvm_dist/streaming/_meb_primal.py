"""Compiled ball-cover passes in primal form: linear kernel, each centre an explicit w.

The state layout and the geometry are ``_meb_balls``'s; a flush replaces (one ball) or
extends (several) the cover with the MEB of the newest ball and the lookahead buffer.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming._meb_balls import (
    LINEAR,
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_STARTED,
    buffer_point,
    commit_ball,
    dot_rows,
    enclose_newest,
    outside_all,
    start_cover,
)


@njit(cache=True)
def _primal_init(W, bb, Q, ee, rr, st, x, y, beta, invC, iw):
    """The first ball: the point (x, y) of 1/weight iw."""
    D = W.shape[1]
    q = 0.0
    for k in range(D):
        W[0, k] = y * x[k]
        q += x[k] * x[k]
    start_cover(bb, Q, ee, rr, st, y, q, beta, invC, iw)


@njit(cache=True)
def primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC):
    """Replace/extend the cover with the MEB of the newest ball and the buffered points."""
    nbuf = int(st[ST_NBUF])
    if nbuf == 0:
        return
    D = W.shape[1]
    G, mu, R, slot, nb, w_new, b_new, e_new = enclose_newest(
        W, bb, Q, ee, rr, st, BX, By, Bf, Bf, Biw, nbuf, kmax, beta, invC, LINEAR, 0.0, 0,
        0.0)
    mu0 = mu[0]
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
        q += w_new[t] * w_new[t]
    commit_ball(W, bb, Q, ee, rr, st, slot, nb, w_new, b_new, q + b_new * b_new, e_new, R,
                eps)
    if mu0 > 0.0 or kmax > 1:
        st[ST_NCORE] += added
    else:  # the old centre dropped out of the new one: only the new points remain
        st[ST_NCORE] = added


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
                fs[i] = dot_rows(W, i, X, r)
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
        if outside_all(fs, Q, ee, rr, nb, yr, xx, beta, invC, eps):
            k = int(st[ST_NBUF])
            for t in range(D):
                BX[k, t] = sc * X[r, t]
            if buffer_point(st, By, Bf, Biw, k, yr, fs[nb - 1], iw[r], L):
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
        if outside_all(fs, Q, ee, rr, nb, yr, xx, beta, invC, eps):
            k = int(st[ST_NBUF])
            BX[k, :] = 0.0
            for p in range(a, z):
                BX[k, indices[p]] = sc * data[p]
            if buffer_point(st, By, Bf, Biw, k, yr, fs[nb - 1], iw[r], L):
                primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC)
