"""Compiled ball-cover passes in dual (kernel) form: centres are coefficient rows A over a
store S of kept points, for any kernel.

The state layout and the geometry are ``_balls``'s. The pass returns when its
lookahead buffer fills; the learner then encloses the buffer with ``dual_flush``
(StreamSVM) or the Blurred Ball cover step of ``_coreset``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from randsvm_dist.streaming.meb._balls import (
    LINEAR,
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_NSTORE,
    ST_STARTED,
    buffer_point,
    commit_ball,
    dot_rows,
    enclose_newest,
    kdiag,
    kval,
    outside_all,
    quad_form,
    start_cover,
    store_point,
)
from randsvm_dist.streaming.meb._types import (
    B1,
    BALLS,
    F4_2D_IN,
    F8,
    F8_1D,
    F8_1D_IN,
    F8_2D,
    I8,
    KERNEL,
    kernel,
)


@kernel((*BALLS, F8_2D, F8_1D, F8_1D, F8_2D, F8_1D, F8_1D, F8_1D, F8_1D, I8, F8, F8, F8,
       *KERNEL))
def dual_flush(A, bb, Q, ee, rr, st, S, Sn, Siw, BX, By, Bf, Bn, Biw, kmax, eps, beta, invC,
               kid, gamma, degree, coef0):
    """StreamSVM's step when the buffer is full (or at the end): the MEB of the newest ball
    and the buffered points replaces (one ball) or extends (several) the cover; the store
    must have room for the buffer."""
    nbuf = int(st[ST_NBUF])
    if nbuf == 0:
        return
    M = int(st[ST_NSTORE])
    G, mu, R, slot, nb, a_new, b_new, e_new = enclose_newest(
        A, bb, Q, ee, rr, st, BX, By, Bf, Bn, Biw, nbuf, kmax, beta, invC, kid, gamma,
        degree, coef0)
    added = 0
    for i in range(nbuf):
        a = mu[i + 1]
        if a > 0.0:
            store_point(S, Sn, Siw, BX, Bn, Biw, i, M)
            a_new[M] = a * By[i]
            b_new += a * By[i] * beta
            e_new += a * a * invC * Biw[i]
            M += 1
            added += 1
    # |c_feat|^2 = mu'G mu minus the e parts
    commit_ball(A, bb, Q, ee, rr, st, slot, nb, a_new, b_new,
                max(quad_form(G, mu) - e_new, 0.0), e_new, R, eps)
    st[ST_NSTORE] = M
    st[ST_NCORE] += added


@njit(cache=True)
def _dual_start(A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, X, r, y, xx, iw, beta, invC, kid, gamma,
                degree, coef0, coreset):
    """The first ball: the row X[r] with label y, squared norm xx and 1/weight iw, stored."""
    M = int(st[ST_NSTORE])
    for t in range(S.shape[1]):
        S[M, t] = X[r, t]
    Sn[M] = xx
    Siw[M] = iw
    if coreset:
        Ks[M, M] = kdiag(kid, xx, gamma, degree, coef0)
    for t in range(A.shape[1]):
        A[0, t] = 0.0
    A[0, M] = y
    start_cover(bb, Q, ee, rr, st, y, kdiag(kid, xx, gamma, degree, coef0), beta, invC, iw)
    st[ST_NSTORE] = M + 1


@njit(cache=True)
def _kernel_scores(fs, kv, A, bb, S, Sn, X, r, xx, nb, M, beta, kid, gamma, degree, coef0):
    """fs[i] = f_i(x_r) for the live balls from one kernel row against the store."""
    D = X.shape[1]
    for s_ in range(M):
        dot = 0.0
        for t in range(D):
            dot += S[s_, t] * X[r, t]
        kv[s_] = kval(kid, dot, Sn[s_], xx, gamma, degree, coef0)
    for i in range(nb):
        f = 0.0
        for s_ in range(M):
            f += A[i, s_] * kv[s_]
        fs[i] = f + beta * bb[i]


@njit(cache=True)
def _linear_scores(fs, Wd, bb, X, r, nb, beta):
    """fs[i] = w_i . x_r + beta b_i from the explicit w's of the linear kernel."""
    for i in range(nb):
        s = 0.0
        for t in range(X.shape[1]):
            s += Wd[i, t] * X[r, t]
        fs[i] = s + beta * bb[i]


@njit(cache=True)
def _explicit_w(Wd, A, S, nb, M):
    """Wd[i] = sum_s A[i, s] S[s]: the live balls' w for the linear kernel."""
    for i in range(nb):
        for t in range(S.shape[1]):
            acc = 0.0
            for s_ in range(M):
                acc += A[i, s_] * S[s_, t]
            Wd[i, t] = acc


@kernel(I8(F4_2D_IN, F8_1D_IN, F8_1D_IN, I8, *BALLS, F8_2D, F8_1D, F8_1D, F8_2D, F8_2D, F8_1D,
         F8_1D, F8_1D, F8_1D, I8, I8, F8, F8, F8, *KERNEL, B1, F8_1D, F8_1D, F8_2D))
def dual_pass(X, y, iw, start, A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, BX, By, Bf, Bn, Biw, kmax,
              L, eps, beta, invC, kid, gamma, degree, coef0, coreset, kv, fs, Wd):
    """One pass of the ball cover over dense rows X[start:], kernel (dual) form.

    coreset: the cover keeps the kernel matrix of its store in Ks (the Blurred Ball
    cover step needs it; unused otherwise). kv (store capacity), fs (max balls) and Wd
    (max balls x features) are scratch.

    Returns the index of the first unprocessed row: it stops after a row that fills the
    lookahead buffer (the caller encloses the buffer) and before a row when the store
    might not hold the next flush (the caller grows the store), then is called again.
    """
    n, D = X.shape
    cap = S.shape[0]
    # linear kernel: score against explicit w_i = sum_s A[i, s] S[s] (set on the first row)
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
            _dual_start(A, bb, Q, ee, rr, st, S, Sn, Siw, Ks, X, r, yr, xx, iw[r], beta,
                        invC, kid, gamma, degree, coef0, coreset)
            continue
        if M + L > cap:
            return r
        nb = int(st[ST_NB])
        if kid == LINEAR:
            if stale:
                _explicit_w(Wd, A, S, nb, M)
                stale = False
            _linear_scores(fs, Wd, bb, X, r, nb, beta)
        else:
            _kernel_scores(fs, kv, A, bb, S, Sn, X, r, xx, nb, M, beta, kid, gamma, degree,
                           coef0)
        kxx = kdiag(kid, xx, gamma, degree, coef0)
        if outside_all(fs, Q, ee, rr, nb, yr, kxx, beta, invC, eps):
            k = int(st[ST_NBUF])
            for t in range(D):
                BX[k, t] = X[r, t]
            Bn[k] = xx
            if buffer_point(st, By, Bf, Biw, k, yr, fs[nb - 1], iw[r], L):
                return r + 1
    return n


@kernel(F8_2D(F8_2D, F8_1D, F8_2D, F8_1D, *KERNEL))
def cross_gram(Sa, Sna, Sb, Snb, kid, gamma, degree, coef0):
    """Kernel matrix between two stores in float64 (exact enough for merging balls)."""
    na, nb_ = Sa.shape[0], Sb.shape[0]
    K = np.empty((na, nb_))
    for i in range(na):
        for j in range(nb_):
            K[i, j] = kval(kid, dot_rows(Sa, i, Sb, j), Sna[i], Snb[j], gamma, degree, coef0)
    return K
