"""Compiled inner loops of OnlineSVMR (numba): kernel rows/columns, SMO steps, CCCP loop.

State layout (owned by :class:`randsvm_dist.streaming.ramp._RampBinary`): kept points live in
*slots* ``0 .. n_slots-1`` (``state`` 0 = dead slot, 1 = kept but outside the active set V,
2 = in V). ``G[r, k]`` caches ``k(x_owner[r], x_k)`` in float64 for every live slot ``k``;
every slot with ``alpha != 0`` owns a row (invariant), so a single-variable SMO step or a
decremental unlearning step costs O(|kept|) flops and no kernel evaluation.

Integer counters ``cnt``: see the ``C_*`` indices. Float parameters ``fpar``: ``F_*``;
integer parameters ``ipar``: ``I_*``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from randsvm_dist.streaming._select import first_of_stable_sort

# cnt indices
C_SLOTS, C_NNZ, C_KEVALS, C_SMO, C_OUTER, C_CAPHIT, C_DEAD = 0, 1, 2, 3, 4, 5, 6
N_CNT = 7
# fpar indices
F_GAMMA, F_COEF0, F_DEGREE, F_C, F_THR, F_TOL, F_GAIN, F_S = 0, 1, 2, 3, 4, 5, 6, 7
N_FPAR = 8
# ipar indices
I_KIND, I_SPARSE, I_MAXNONSV, I_ACTIVE, I_MAXOUTER = 0, 1, 2, 3, 4
N_IPAR = 5
# status codes returned by _ramp_stream
ST_DONE, ST_NEED_ROW = 0, 1

KIND_CODES = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}


@njit(cache=True)
def _ramp_kval(kind, gamma, coef0, degree, dot, sqa, sqb):
    """Kernel value from the dot product and squared norms (LIBSVM meanings)."""
    if kind == 0:
        return dot
    if kind == 2:
        d2 = sqa + sqb - 2.0 * dot
        if d2 < 0.0:
            d2 = 0.0
        return np.exp(-gamma * d2)
    if kind == 1:
        return (gamma * dot + coef0) ** degree
    return np.tanh(gamma * dot + coef0)


@njit(cache=True)
def _ramp_k(a, b, Xs, s_start, s_len, s_ind, s_val, sqn, fpar, ipar):
    """k(x_a, x_b) between two stored slots, accumulated in float64."""
    kind = ipar[I_KIND]
    if ipar[I_SPARSE] == 0:
        d = Xs.shape[1]
        if kind == 2:
            acc = 0.0
            for j in range(d):
                t = np.float64(Xs[a, j]) - np.float64(Xs[b, j])
                acc += t * t
            return np.exp(-fpar[F_GAMMA] * acc)
        acc = 0.0
        for j in range(d):
            acc += np.float64(Xs[a, j]) * np.float64(Xs[b, j])
        return _ramp_kval(kind, fpar[F_GAMMA], fpar[F_COEF0], fpar[F_DEGREE], acc,
                          sqn[a], sqn[b])
    pa, ea = s_start[a], s_start[a] + s_len[a]
    pb, eb = s_start[b], s_start[b] + s_len[b]
    acc = 0.0
    while pa < ea and pb < eb:
        ia, ib = s_ind[pa], s_ind[pb]
        if ia == ib:
            acc += np.float64(s_val[pa]) * np.float64(s_val[pb])
            pa += 1
            pb += 1
        elif ia < ib:
            pa += 1
        else:
            pb += 1
    return _ramp_kval(kind, fpar[F_GAMMA], fpar[F_COEF0], fpar[F_DEGREE], acc, sqn[a], sqn[b])


@njit(cache=True)
def _ramp_fill_row(r, j, Xs, s_start, s_len, s_ind, s_val, sqn, state, G, cnt, fpar, ipar):
    """G[r, k] = k(x_j, x_k) for every live slot k; counts the kernel evaluations."""
    n = cnt[C_SLOTS]
    ev = 0
    for k in range(n):
        if state[k] != 0:
            G[r, k] = _ramp_k(j, k, Xs, s_start, s_len, s_ind, s_val, sqn, fpar, ipar)
            ev += 1
    cnt[C_KEVALS] += ev


@njit(cache=True)
def _ramp_update_g(r, delta_signed, y, state, g, G, n):
    """g_k -= delta_signed * y_k * G[r, k] over live slots (eq. 15 with delta*y_j folded in)."""
    for k in range(n):
        if state[k] != 0:
            g[k] -= delta_signed * y[k] * G[r, k]


@njit(cache=True)
def _ramp_free_row(owner):
    for r in range(owner.shape[0]):
        if owner[r] < 0:
            return r
    return -1


SHRINK_MARGIN = 0.5


@njit(cache=True)
def _ramp_select(idx, n_idx, qdiag, alpha, cb, g, state, fpar):
    """Working-set choice over slots idx[:n_idx] in V: the KKT violator (beyond tol) with the
    largest dual gain (eq. 13, derived form: gain = g d - Q_jj d^2 / 2 with
    d = clip(alpha + g/Q_jj, 0, C) - alpha). Returns (slot or -1, new alpha, gain, max viol)."""
    tol = fpar[F_TOL]
    best = -1
    best_gain = 0.0
    best_new = 0.0
    max_viol = 0.0
    for t in range(n_idx):
        k = idx[t]
        if state[k] != 2:
            continue
        gk = g[k]
        ak = alpha[k]
        C = cb[k]
        if gk > 0.0 and ak < C:
            viol = gk
        elif gk < 0.0 and ak > 0.0:
            viol = -gk
        else:
            continue
        if viol <= tol:
            continue
        if viol > max_viol:
            max_viol = viol
        q = qdiag[k]
        if q > 1e-12:
            new = ak + gk / q
            if new < 0.0:
                new = 0.0
            elif new > C:
                new = C
        else:
            new = C if gk > 0.0 else 0.0
        d = new - ak
        gain = gk * d - 0.5 * q * d * d
        if gain > best_gain:
            best_gain = gain
            best = k
            best_new = new
    return best, best_new, best_gain, max_viol


@njit(cache=True)
def _ramp_smo(act, na, Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state,
              row_of, G, owner, cnt, fpar, ipar):
    """Single-variable SMO steps (eqs. 12-15) on the slots act[:na] until the KKT rule
    (max violation <= tol) or the dual-gain rule (best gain < gain_tol) stops it.

    Gradients are kept up to date on act only (the caller reconstructs the others).
    Returns False when a Gram row is needed and none is free.
    """
    gain_tol, tol = fpar[F_GAIN], fpar[F_TOL]
    while True:
        best, best_new, best_gain, max_viol = _ramp_select(act, na, qdiag, alpha, cb, g, state,
                                                           fpar)
        if best < 0 or max_viol <= tol or best_gain < gain_tol:
            return True
        r = row_of[best]
        if r < 0:
            r = _ramp_free_row(owner)
            if r < 0:
                return False
            _ramp_fill_row(r, best, Xs, s_start, s_len, s_ind, s_val, sqn, state, G, cnt,
                           fpar, ipar)
            owner[r] = best
            row_of[best] = r
        d = best_new - alpha[best]
        alpha[best] = best_new
        c = d * y[best]
        for t in range(na):
            k = act[t]
            g[k] -= c * y[k] * G[r, k]
        cnt[C_SMO] += 1


@njit(cache=True)
def _ramp_solve_v(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state, row_of,
                  G, owner, cnt, fpar, ipar):
    """Solve the SVM dual on V (eq. 11) by SMO with shrinking.

    The steps run on the shrunk set A = {i in V: alpha_i > 0 or g_i > -SHRINK_MARGIN}; the
    gradients of the other kept points are then rebuilt from the net alpha changes (one
    cached row per changed point), and SMO resumes on a new A while any point of V still
    breaks the stopping rules. Same stopping rules and result as SMO over all of V, at
    O(|A|) per step instead of O(|kept|). Returns False when a Gram row is needed.
    """
    n = cnt[C_SLOTS]
    act = np.empty(n, dtype=np.int64)
    a0 = np.empty(n, dtype=np.float64)
    inact = np.zeros(n, dtype=np.bool_)
    all_idx = np.arange(n)
    while True:
        na = np.int64(0)  # not a literal: a literal 0 argument compiles _ramp_smo twice
        for k in range(n):
            inact[k] = False
            if state[k] == 2 and (alpha[k] > 0.0 or g[k] > -SHRINK_MARGIN):
                act[na] = k
                a0[na] = alpha[k]
                inact[k] = True
                na += 1
        ok = _ramp_smo(act, na, Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g,
                       state, row_of, G, owner, cnt, fpar, ipar)
        for t in range(na):
            j = act[t]
            d = alpha[j] - a0[t]
            if d == 0.0:
                continue
            c = d * y[j]
            r = row_of[j]
            for k in range(n):
                if state[k] != 0 and not inact[k]:
                    g[k] -= c * y[k] * G[r, k]
        if not ok:
            return False
        best, best_new, best_gain, max_viol = _ramp_select(all_idx, n, qdiag, alpha, cb, g, state,
                                                           fpar)
        if best < 0 or max_viol <= fpar[F_TOL] or best_gain < fpar[F_GAIN]:
            return True


@njit(cache=True)
def _ramp_cccp(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state, row_of,
               G, owner, cnt, fpar, ipar):
    """Online CCCP (Algorithm 1, steps 9-27): solve on V, then relocate V, until V is stable.

    Points with g <= 1 - s join V; points of V with g > 1 - s leave it and are unlearned
    (alpha set to 0, gradients updated) after the whole relocation pass, as in the paper.
    Returns False when a Gram row is needed (the caller grows the cache and calls again).
    """
    thr = fpar[F_THR]
    n = cnt[C_SLOTS]
    removed = np.empty(n, dtype=np.int64)
    for _ in range(ipar[I_MAXOUTER]):
        if not _ramp_solve_v(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g,
                             state, row_of, G, owner, cnt, fpar, ipar):
            return False
        cnt[C_OUTER] += 1
        changed = False
        nrem = 0
        for k in range(n):
            if state[k] == 1 and g[k] <= thr:
                state[k] = 2
                changed = True
            elif state[k] == 2 and g[k] > thr:
                state[k] = 1
                changed = True
            if state[k] == 1 and alpha[k] != 0.0:
                removed[nrem] = k
                nrem += 1
                changed = True
        for t in range(nrem):
            k = removed[t]
            d = -alpha[k]
            alpha[k] = 0.0
            _ramp_update_g(row_of[k], d * y[k], y, state, g, G, n)
        if not changed:
            return True
    cnt[C_CAPHIT] += 1
    return True


@njit(cache=True)
def _ramp_remove_non_sv(g, alpha, state, row_of, owner, cnt, m):
    """Algorithm 2: keep at most m non-SVs (alpha = 0), the ones with the smallest |1 - g|."""
    n = cnt[C_SLOTS]
    n_non = 0
    for k in range(n):
        if state[k] != 0 and alpha[k] == 0.0:
            n_non += 1
    excess = n_non - m
    if excess <= 0:
        return
    idx = np.empty(n_non, dtype=np.int64)
    key = np.empty(n_non, dtype=np.float64)
    t = 0
    for k in range(n):
        if state[k] != 0 and alpha[k] == 0.0:
            idx[t] = k
            key[t] = -abs(1.0 - g[k])
            t += 1
    drop = idx[first_of_stable_sort(key, excess)]
    for t in range(drop.shape[0]):
        k = drop[t]
        state[k] = 0
        r = row_of[k]
        if r >= 0:
            owner[r] = -1
            row_of[k] = -1
    cnt[C_DEAD] += drop.shape[0]


@njit(cache=True)
def _ramp_evict_rows(alpha, row_of, owner):
    """Free the Gram rows of points whose alpha is back to 0 (they are no longer SVs)."""
    for r in range(owner.shape[0]):
        o = owner[r]
        if o >= 0 and alpha[o] == 0.0:
            owner[r] = -1
            row_of[o] = -1


@njit(cache=True)
def _ramp_finish_example(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state,
                         row_of, G, owner, cnt, fpar, ipar):
    """CCCP until stable, then the removal step and row eviction. False: need a row."""
    if not _ramp_cccp(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state,
                      row_of, G, owner, cnt, fpar, ipar):
        return False
    if ipar[I_MAXNONSV] >= 0:
        _ramp_remove_non_sv(g, alpha, state, row_of, owner, cnt, ipar[I_MAXNONSV])
    _ramp_evict_rows(alpha, row_of, owner)
    return True


@njit(cache=True)
def _ramp_stream(Xc, c_indptr, c_ind, c_val, yc, wc, pos, resume, queried,
                 Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha, cb, g, state, row_of,
                 G, owner, cnt, fpar, ipar):
    """Process rows ``pos ..`` of a chunk one by one (Algorithms 1-3).

    Args:
        Xc / (c_indptr, c_ind, c_val): the chunk, dense float32 or CSR parts.
        yc: labels (+1/-1 float64); wc: row weights (the row's box is C * weight).
        pos: first row to process; resume: the row before ``pos`` was inserted but its
            CCCP did not finish (finish it first).
        queried: bool per chunk row, set True when its label is used.
        the rest: learner state (capacity for every chunk row is guaranteed by the caller).

    Returns:
        (status, pos): ST_DONE, or ST_NEED_ROW with the row to resume at.
    """
    if resume:
        if not _ramp_finish_example(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha,
                                    cb, g, state, row_of, G, owner, cnt, fpar, ipar):
            return ST_NEED_ROW, pos
    sparse = ipar[I_SPARSE] != 0
    s = fpar[F_S]
    thr = fpar[F_THR]
    n_chunk = yc.shape[0]
    while pos < n_chunk:
        t = cnt[C_SLOTS]
        # store the point in slot t (tentatively for the active variant)
        acc = 0.0
        if sparse:
            nnz0 = cnt[C_NNZ]
            a, b = c_indptr[pos], c_indptr[pos + 1]
            for p in range(a, b):
                s_ind[nnz0 + p - a] = c_ind[p]
                s_val[nnz0 + p - a] = c_val[p]
                acc += np.float64(c_val[p]) * np.float64(c_val[p])
            s_start[t] = nnz0
            s_len[t] = b - a
        else:
            for j in range(Xc.shape[1]):
                v = Xc[pos, j]
                Xs[t, j] = v
                acc += np.float64(v) * np.float64(v)
        sqn[t] = acc
        state[t] = 1
        row_of[t] = -1
        alpha[t] = 0.0
        # f(x_t) from the cached rows of the SVs (one kernel evaluation per row)
        f = 0.0
        ev = 0
        for r in range(owner.shape[0]):
            o = owner[r]
            if o >= 0:
                kv = _ramp_k(o, t, Xs, s_start, s_len, s_ind, s_val, sqn, fpar, ipar)
                G[r, t] = kv
                f += alpha[o] * y[o] * kv
                ev += 1
        cnt[C_KEVALS] += ev
        if ipar[I_ACTIVE] != 0:
            in_region = (f >= s and f <= 1.0) or (-f >= s and -f <= 1.0)
            if not in_region:
                state[t] = 0
                pos += 1
                continue
        queried[pos] = True
        cnt[C_SLOTS] = t + 1
        if sparse:
            cnt[C_NNZ] += s_len[t]
        qdiag[t] = _ramp_k(t, t, Xs, s_start, s_len, s_ind, s_val, sqn, fpar, ipar)
        cnt[C_KEVALS] += 1
        y[t] = yc[pos]
        cb[t] = fpar[F_C] * wc[pos]
        g[t] = 1.0 - y[t] * f
        pos += 1
        if g[t] <= thr:
            state[t] = 2
        if g[t] > thr or g[t] <= fpar[F_TOL]:
            # noisy region (kept in I, outside V) or KKT already holding with alpha_t = 0:
            # the current solution stays optimal.
            if ipar[I_MAXNONSV] >= 0:
                _ramp_remove_non_sv(g, alpha, state, row_of, owner, cnt, ipar[I_MAXNONSV])
            continue
        if not _ramp_finish_example(Xs, s_start, s_len, s_ind, s_val, sqn, qdiag, y, alpha,
                                    cb, g, state, row_of, G, owner, cnt, fpar, ipar):
            return ST_NEED_ROW, pos
    return ST_DONE, pos


@njit(cache=True)
def _ramp_refresh(Xs, s_start, s_len, s_ind, s_val, sqn, y, alpha, cb, g, state, row_of, G,
                  owner, cnt, fpar, ipar, fill):
    """Recompute g = 1 - y f exactly from the cached rows (fill: compute the rows first
    for every SV whose row is missing; the caller guarantees free rows), and reassign V."""
    n = cnt[C_SLOTS]
    if fill:
        for k in range(n):
            if state[k] != 0 and alpha[k] != 0.0 and row_of[k] < 0:
                r = _ramp_free_row(owner)
                _ramp_fill_row(r, k, Xs, s_start, s_len, s_ind, s_val, sqn, state, G, cnt,
                               fpar, ipar)
                owner[r] = k
                row_of[k] = r
    f = np.zeros(n, dtype=np.float64)
    for r in range(owner.shape[0]):
        o = owner[r]
        if o >= 0 and alpha[o] != 0.0:
            c = alpha[o] * y[o]
            for k in range(n):
                if state[k] != 0:
                    f[k] += c * G[r, k]
    thr = fpar[F_THR]
    for k in range(n):
        if state[k] != 0:
            g[k] = 1.0 - y[k] * f[k]
            if fill:
                state[k] = 2 if g[k] <= thr else 1
