"""Compiled ball-cover passes in primal form: linear kernel, each centre an explicit w.

The state layout and the geometry are ``_balls``'s. A pass returns when its lookahead
buffer fills; the learner then calls ``primal_flush``, which replaces (one ball) or
extends (several) the cover with the MEB of the newest ball and the buffer.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from randsvm_dist.streaming.meb._balls import (
    LINEAR,
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_STARTED,
    buffer_point,
    commit_ball,
    enclose_newest,
    outside_all,
    start_cover,
)
from randsvm_dist.streaming.meb._types import (
    B1,
    BALLS,
    F4_1D_IN,
    F4_2D_IN,
    F8,
    F8_1D,
    F8_1D_IN,
    F8_2D,
    I4_1D_IN,
    I8,
    I8_1D_IN,
    kernel,
)

#: a pass's arguments after its rows: labels, 1/weights, the first row, the balls, the
#: buffer (BX, By, Bf, Biw), kmax, L, eps, beta, invC, norm and the scratch fs, xrow
PASS_TAIL = (F8_1D_IN, F8_1D_IN, I8, *BALLS, F8_2D, F8_1D, F8_1D, F8_1D, I8, I8, F8, F8, F8,
             B1, F8_1D, F8_1D)


@njit(cache=True)
def _primal_init(W, bb, Q, ee, rr, st, x, y, beta, invC, iw):
    """The first ball: the point (x, y) of 1/weight iw."""
    D = W.shape[1]
    q = 0.0
    for k in range(D):
        W[0, k] = y * x[k]
        q += x[k] * x[k]
    start_cover(bb, Q, ee, rr, st, y, q, beta, invC, iw)


@kernel((*BALLS, F8_2D, F8_1D, F8_1D, F8_1D, I8, F8, F8, F8))
def primal_flush(W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, eps, beta, invC):
    """Replace/extend the cover with the MEB of the newest ball and the buffered points."""
    nbuf = int(st[ST_NBUF])
    if nbuf == 0:
        return
    D = W.shape[1]
    G, mu, R, slot, nb, w_new, b_new, e_new = enclose_newest(
        W, bb, Q, ee, rr, st, BX, By, Bf, Bf, Biw, nbuf, kmax, beta, invC, np.int64(LINEAR),
        0.0, 0.0,
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


@kernel(I8(F4_2D_IN, *PASS_TAIL))
def primal_pass_dense(X, y, iw, start, W, bb, Q, ee, rr, st, BX, By, Bf, Biw, kmax, L, eps,
                      beta, invC, norm, fs, xrow):
    """One pass of the (blurred) ball cover over dense rows X[start:], primal form.

    L == 1 with kmax == 1 and eps == 0 is StreamSVM Algorithm 1; L > 1 Algorithm 2.
    iw: per-row 1 / weight (a row of weight w has slack cost C w: its e part is
    (C w)^-1/2); Biw: the buffer's. norm: scale each row to unit L2 norm on the fly.
    fs (max balls) and xrow (features) are scratch.

    Returns the index of the first unprocessed row: it stops after a row that fills the
    lookahead buffer (the caller encloses it with primal_flush and calls again).
    """
    n, D = X.shape
    for r in range(start, n):
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
        if outside_all(fs, Q, ee, rr, nb, yr, xx, beta, invC, eps):
            k = int(st[ST_NBUF])
            for t in range(D):
                BX[k, t] = sc * X[r, t]
            if buffer_point(st, By, Bf, Biw, k, yr, fs[nb - 1], iw[r], L):
                return r + 1
    return n


@kernel(I8(I8_1D_IN, I4_1D_IN, F4_1D_IN, *PASS_TAIL))
def primal_pass_csr(indptr, indices, data, y, iw, start, W, bb, Q, ee, rr, st, BX, By, Bf,
                    Biw, kmax, L, eps, beta, invC, norm, fs, xrow):
    """primal_pass_dense for CSR rows (buffer rows are scattered to dense)."""
    n = indptr.shape[0] - 1
    D = W.shape[1]
    for r in range(start, n):
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
            for t in range(D):
                xrow[t] = 0.0
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
            for t in range(D):
                BX[k, t] = 0.0
            for p in range(a, z):
                BX[k, indices[p]] = sc * data[p]
            if buffer_point(st, By, Bf, Biw, k, yr, fs[nb - 1], iw[r], L):
                return r + 1
    return n
