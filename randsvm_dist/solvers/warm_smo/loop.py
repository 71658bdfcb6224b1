"""The warm SMO's iterations (numba): LIBSVM's ``Solver::Solve`` loop with shrinking.

LIBSVM's general problem: min 1/2 a'Qa + p'a over 0 <= a_i <= Cb_i with y'a fixed,
Q_ij = y_i y_j K_ij, G = Qa + p. C-SVC, epsilon-SVR (2n variables) and one-class are all
of this form (``duals``); the loop never reads p (only the caller's gradient
rebuild does), so it is one loop for every kind:

- working-set selection WSS2 (Fan, Chen, Lin, "Working set selection using second order
  information for training SVM", JMLR 2005): i maximises -y_i G_i over I_up, j minimises
  the second-order decrease -(b_ij^2) / a_ij over I_low with a_ij = K_ii + K_jj - 2 K_ij
  (TAU = 1e-12 when a_ij <= 0);
- LIBSVM's two-variable update with clipping to per-variable boxes Cb and the same
  stopping rule (m(alpha) - M(alpha) < tol, LIBSVM's -e);
- LIBSVM's shrinking (its -h): every ``ist[EVERY]`` iterations the variables at a bound
  whose gradient says they stay there (``_be_shrunk``) are swapped behind the active set;
  selection, gradient updates and kernel rows cover the active set only. G_bar (the
  gradient's part from alphas at their upper bound) is kept for every variable, so the
  caller can rebuild the shrunk gradient exactly (LIBSVM's ``reconstruct_gradient``): the
  loop returns UNSHRINK once the active set is optimal to 10 x tol, FINAL_CHECK when it is
  optimal, and is called again with ist[RESUME] set to that code.

A step's row scans (the gradient update fused with the next step's select i, then select
j) split into one range per thread when the active set is long (PARALLEL_MIN_ROWS): two
forks and joins a step. Each range's result is combined in a fixed order with the serial
scan's tie rule (the last maximum or minimum), so every step selects the same i and j,
and every value is the same, whatever the thread count.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from randsvm_dist.solvers.warm_smo import types as S
from randsvm_dist.solvers.warm_smo.cache import (
    BAR_EVALS,
    BAR_UPDATES,
    EVALS,
    NSLOTS,
    STRIDE,
    cache_get,
    cache_repack,
    cache_reset,
    cache_swap_values,
    swap_index,
)
from randsvm_dist.solvers.warm_smo.kernels import qrow

TAU = 1e-12
# a step's scans split over its threads from this many active rows (below, one thread):
# each split costs a fork and join of numba's threads (1.6 us with two, OpenMP), which a
# scan of ~4k rows (1 ns a row) just pays for
PARALLEL_MIN_ROWS = 4096
# the cache's slots are repacked when the active set falls under this share of their length
REPACK_SHARE = 0.8
# ... also when every row has a slot once the slots hold this many values (256 MB): rows
# packed to the active length touch fewer of the pool's pages, and a process's first touch
# of a page costs more than the kernel values recomputed for the rows' lost tails (a fit's
# warm re-solve of 15.9k ringnorm rows, 1000 MB cache: 23% more kernel values, 0.9-1.2 s
# less at one thread); below, the tails are worth keeping
REPACK_ALL_VALUES = 1 << 26
# run_smo's return codes: optimal; rebuild the shrunk gradient, then shrink (LIBSVM's
# unshrink); rebuild it, then check optimality on all rows; iteration limit reached
DONE, UNSHRINK, FINAL_CHECK, MAX_ITER = 0, 1, 2, 3
# indices into the int64 state vector ``ist``
# (THREADS: the threads a step's scans split over, numba's for this solve)
ACTIVE, ITER, COUNTER, UNSHRUNK, MAXIT, RESUME, EVERY, SCANNED, THREADS = range(9)


@nb.njit(nogil=True, cache=True, inline="always")
def _be_shrunk(t, g1, g2, y, alpha, G, Cb):
    if alpha[t] >= Cb[t]:
        return -G[t] > g1 if y[t] > 0 else -G[t] > g2
    if alpha[t] <= 0:
        return G[t] > g2 if y[t] > 0 else G[t] > g1
    return False


@nb.njit(S.I8(S.I8, S.F8, S.F8, S.F8_2D, *[S.F8_1D] * 7, S.I8_1D, S.F4_1D, S.I8_2D, S.I8_1D,
              S.I8), nogil=True, cache=True)
def _shrink(active, g1, g2, X, y, sq, alpha, G, G_bar, Cb, QD, perm, pool, cm, cst, nth):
    """LIBSVM's shrinking pass over the active rows (the cached rows' values swapped
    together at the end: ``cache_swap_values``, on nth threads); returns the new active
    size."""
    pairs = np.empty(active + 1, dtype=np.int64)
    npairs = 0
    i = 0
    while i < active:
        if _be_shrunk(i, g1, g2, y, alpha, G, Cb):
            active -= 1
            while active > i:
                if not _be_shrunk(active, g1, g2, y, alpha, G, Cb):
                    swap_index(i, active, X, y, sq, alpha, G, G_bar, Cb, QD, perm, cm)
                    pairs[2 * npairs], pairs[2 * npairs + 1] = i, active
                    npairs += 1
                    break
                active -= 1
        i += 1
    cache_swap_values(pairs, npairs, pool, cm, cst, nth)
    if active < REPACK_SHARE * cst[STRIDE] and active >= 2 and (
            cst[NSLOTS] < len(y) or cst[NSLOTS] * cst[STRIDE] >= REPACK_ALL_VALUES):
        cache_repack(cm, cst, pool, active)
    return active


@nb.njit(S.VOID(S.I8, S.F8, S.I8, S.F8_2D, *[S.F8_1D] * 4, S.F4_1D, S.I8_2D, S.I8_1D, S.F4_1D,
                S.B1, S.TWINS), nogil=True, cache=True)
def _update_g_bar(r, c, active, X, y, sq, kp, G_bar, pool, cm, cst, scratch, par, tw):
    """G_bar += c Q_r over all rows (LIBSVM's get_Q(r, l) when r's upper-bound state
    changes): the active part from the cache, the shrunk part computed; counted in
    cst[BAR_EVALS] and cst[BAR_UPDATES]."""
    n = len(y)
    before = cst[EVALS]
    cst[BAR_UPDATES] += 1
    if cst[STRIDE] == n:
        b = cache_get(r, n, X, y, sq, kp, pool, cm, cst, par, tw)
        for k in range(n):
            G_bar[k] += c * pool[b + k]
    else:
        b = cache_get(r, active, X, y, sq, kp, pool, cm, cst, par, tw)
        for k in range(active):
            G_bar[k] += c * pool[b + k]
        cst[EVALS] += qrow(r, active, n, X, y, sq, kp, scratch, 0, par, tw)
        for k in range(active, n):
            G_bar[k] += c * scratch[k - active]
    cst[BAR_EVALS] += cst[EVALS] - before


@nb.njit(nogil=True, cache=True, inline="always")
def _step_i_chunk(lo, hi, y, alpha, G, Cb, pool, bi, bj, di, dj, upd):
    """Rows [lo, hi): G += di Q_i + dj Q_j when upd, then select i over them: (the max of
    -y_t G_t over I_up, its last position; -1 for an empty range). Written without
    branches on the rows' class and bound (selects instead): those branches mispredict,
    and the scans ran 3-4x slower with them."""
    gmax, i = -np.inf, -1
    for t in range(lo, hi):
        if upd:
            G[t] += pool[bi + t] * di + pool[bj + t] * dj
        yt = y[t]
        up = ((yt > 0) & (alpha[t] < Cb[t])) | ((yt < 0) & (alpha[t] > 0))
        v = -yt * G[t]
        v = v if up else -np.inf
        if v >= gmax:
            gmax = v
            i = t
    return gmax, i


@nb.njit(nogil=True, cache=True, inline="always")
def _select_j_chunk(lo, hi, gmax, qdi, yi, bi, y, alpha, G, Cb, QD, pool):
    """Rows [lo, hi): (max of y_t G_t over I_low, the min of the second-order objective
    -(b_it^2) / a_it over I_low with b_it > 0, its last position; -1 for an empty range).
    a_it = K_ii + K_tt - 2 K_it with K_it = y_i y_t Q_it."""
    gmax2, j, best = -np.inf, -1, np.inf
    for t in range(lo, hi):
        yt = y[t]
        yG = yt * G[t]
        low = ((yt > 0) & (alpha[t] > 0)) | ((yt < 0) & (alpha[t] < Cb[t]))
        w = yG if low else -np.inf
        gmax2 = max(gmax2, w)
        diff = gmax + yG
        a = qdi + QD[t] - 2.0 * yi * yt * pool[bi + t]
        a = a if a > 0 else TAU
        obj = -(diff * diff) / a
        obj = obj if (low & (diff > 0)) else np.inf
        if obj <= best:
            best = obj
            j = t
    return gmax2, best, j


@nb.njit(S.VOID(S.B1, S.I8, S.I8, *[S.F8_1D] * 5, S.F4_1D, S.I8, S.I8, S.F8, S.F8, S.B1,
                S.F8, S.F8, S.F8, S.F8_1D, S.F8_1D, S.I8_1D), nogil=True, cache=True,
         parallel=True)
def _scan_parallel(sel_j, active, nch, y, alpha, G, Cb, QD, pool, bi, bj, di, dj, upd,
                   gmax, qdi, yi, cval, cbest, cidx):
    """Over nch equal row ranges in parallel: ``_select_j_chunk`` (sel_j) or
    ``_step_i_chunk``; range c's result in cval[c], cbest[c] (select j) and cidx[c].
    One parallel function for both scans: each costs a compile of its own."""
    for c in nb.prange(nch):
        lo, hi = c * active // nch, (c + 1) * active // nch
        if sel_j:
            cval[c], cbest[c], cidx[c] = _select_j_chunk(lo, hi, gmax, qdi, yi, bi, y, alpha,
                                                         G, Cb, QD, pool)
        else:
            cval[c], cidx[c] = _step_i_chunk(lo, hi, y, alpha, G, Cb, pool, bi, bj, di, dj,
                                             upd)


@nb.njit(nb.types.Tuple((S.F8, S.I8))(S.I8, S.I8, *[S.F8_1D] * 5, S.F4_1D, S.I8, S.I8, S.F8,
                                      S.F8, S.B1, S.F8_1D, S.F8_1D, S.I8_1D),
         nogil=True, cache=True)
def _step_i(active, nch, y, alpha, G, Cb, QD, pool, bi, bj, di, dj, upd, cval, cbest, cidx):
    """The gradient update (when upd) and select i over the active rows, in nch chunks
    (in parallel when nch > 1); the chunks' results combined in order with the scan's
    tie rule (the last maximum), so (gmax, i) and G are the same for any nch."""
    if nch == 1:
        return _step_i_chunk(0, active, y, alpha, G, Cb, pool, bi, bj, di, dj, upd)
    _scan_parallel(False, active, nch, y, alpha, G, Cb, QD, pool, bi, bj, di, dj, upd, 0.0,
                   0.0, 0.0, cval, cbest, cidx)
    gmax, i = -np.inf, -1
    for c in range(nch):
        if cidx[c] >= 0 and cval[c] >= gmax:
            gmax, i = cval[c], cidx[c]
    return gmax, i


@nb.njit(nb.types.Tuple((S.F8, S.I8))(S.I8, S.I8, S.F8, S.F8, S.F8, S.I8, *[S.F8_1D] * 5,
                                      S.F4_1D, S.F8_1D, S.F8_1D, S.I8_1D),
         nogil=True, cache=True)
def _select_j(active, nch, gmax, qdi, yi, bi, y, alpha, G, Cb, QD, pool, cval, cbest, cidx):
    """Select j over the active rows in nch chunks (in parallel when nch > 1), combined in
    order with the scan's tie rule (the last minimum): the same (gmax2, j) for any nch."""
    if nch == 1:
        gmax2, _, j = _select_j_chunk(0, active, gmax, qdi, yi, bi, y, alpha, G, Cb, QD,
                                      pool)
        return gmax2, j
    _scan_parallel(True, active, nch, y, alpha, G, Cb, QD, pool, bi, 0, 0.0, 0.0, False, gmax,
                   qdi, yi, cval, cbest, cidx)
    gmax2, best, j = -np.inf, np.inf, -1
    for c in range(nch):
        gmax2 = max(gmax2, cval[c])
        if cidx[c] >= 0 and cbest[c] <= best:
            best, j = cbest[c], cidx[c]
    return gmax2, j


@nb.njit(S.I8(S.F8_2D, *[S.F8_1D] * 7, S.I8_1D, S.F8_1D, S.F8, S.B1, S.F4_1D, S.I8_2D, S.I8_1D,
              S.I8_1D, S.F8_1D, S.F4_1D, S.B1, S.TWINS), nogil=True, cache=True)
def run_smo(X, y, sq, alpha, G, G_bar, Cb, QD, perm, kp, eps, shrinking, pool, cm, cst,
            ist, fst, scratch, par, tw):
    """SMO iterations (LIBSVM's ``Solver::Solve`` loop) from the state in the arrays,
    updated in place, until one of the return codes DONE, UNSHRINK, FINAL_CHECK (the
    caller rebuilds the shrunk rows' gradient and calls again with ist[RESUME] set to the
    code) or MAX_ITER. tw: the twins of ``kernels.qrow``."""
    n = len(y)
    active, it, counter, unshrunk = ist[ACTIVE], ist[ITER], ist[COUNTER], ist[UNSHRUNK]
    resume = ist[RESUME]
    code = DONE
    nth = ist[THREADS]
    cval, cbest, cidx = np.empty(nth), np.empty(nth), np.empty(nth, dtype=np.int64)
    have_i, gmax, i = False, -np.inf, -1
    while True:
        if resume != DONE:
            active, have_i = n, False
            if cst[STRIDE] < n:
                cache_reset(cm, cst, len(pool), n)
            if resume == UNSHRINK:
                active = _shrink(active, fst[0], fst[1], X, y, sq, alpha, G, G_bar, Cb, QD,
                                 perm, pool, cm, cst, nth)
                resume = DONE
        else:
            if it >= ist[MAXIT]:
                code = MAX_ITER
                break
            counter -= 1
            if counter == 0:
                counter = min(n, ist[EVERY])
                if shrinking:
                    have_i = False
                    g1, g2 = -np.inf, -np.inf
                    for t in range(active):
                        if y[t] > 0:
                            if alpha[t] < Cb[t]:
                                g1 = max(g1, -G[t])
                            if alpha[t] > 0:
                                g2 = max(g2, G[t])
                        else:
                            if alpha[t] < Cb[t]:
                                g2 = max(g2, -G[t])
                            if alpha[t] > 0:
                                g1 = max(g1, G[t])
                    if unshrunk == 0 and g1 + g2 <= eps * 10:
                        unshrunk = 1
                        fst[0], fst[1] = g1, g2
                        if active < n:
                            code = UNSHRINK
                            break
                    active = _shrink(active, g1, g2, X, y, sq, alpha, G, G_bar, Cb, QD,
                                     perm, pool, cm, cst, nth)
        nch = nth if active >= PARALLEL_MIN_ROWS else 1
        if not have_i:  # else the last step's gradient update selected it
            gmax, i = _step_i(active, nch, y, alpha, G, Cb, QD, pool, 0, 0, 0.0, 0.0, False,
                              cval, cbest, cidx)
        have_i = False
        gmax2, j = -np.inf, -1
        if i >= 0:
            bi = cache_get(i, active, X, y, sq, kp, pool, cm, cst, par, tw)
            gmax2, j = _select_j(active, nch, gmax, QD[i], y[i], bi, y, alpha, G, Cb, QD,
                                 pool, cval, cbest, cidx)
        if gmax + gmax2 < eps or j < 0:
            if active < n and resume != FINAL_CHECK:
                code = FINAL_CHECK
            break
        if resume == FINAL_CHECK:
            counter = 1  # shrink at the next iteration, as LIBSVM does
        resume = DONE
        it += 1
        ist[SCANNED] += active
        bi = cache_get(i, active, X, y, sq, kp, pool, cm, cst, par, tw)
        bj = cache_get(j, active, X, y, sq, kp, pool, cm, cst, par, tw)
        # --- LIBSVM's update of (alpha_i, alpha_j)
        Ci, Cj = Cb[i], Cb[j]
        old_i, old_j = alpha[i], alpha[j]
        Qij = pool[bi + j]
        if y[i] != y[j]:
            a = QD[i] + QD[j] + 2.0 * Qij
            if a <= 0:
                a = TAU
            delta = (-G[i] - G[j]) / a
            diff = alpha[i] - alpha[j]
            alpha[i] += delta
            alpha[j] += delta
            if diff > 0:
                if alpha[j] < 0:
                    alpha[j] = 0.0
                    alpha[i] = diff
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = -diff
            if diff > Ci - Cj:
                if alpha[i] > Ci:
                    alpha[i] = Ci
                    alpha[j] = Ci - diff
            elif alpha[j] > Cj:
                alpha[j] = Cj
                alpha[i] = Cj + diff
        else:
            a = QD[i] + QD[j] - 2.0 * Qij
            if a <= 0:
                a = TAU
            delta = (G[i] - G[j]) / a
            total = alpha[i] + alpha[j]
            alpha[i] -= delta
            alpha[j] += delta
            if total > Ci:
                if alpha[i] > Ci:
                    alpha[i] = Ci
                    alpha[j] = total - Ci
            elif alpha[j] < 0:
                alpha[j] = 0.0
                alpha[i] = total
            if total > Cj:
                if alpha[j] > Cj:
                    alpha[j] = Cj
                    alpha[i] = total - Cj
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = total
        # the gradient update, fused with the next step's select i
        gmax, i_next = _step_i(active, nch, y, alpha, G, Cb, QD, pool, bi, bj,
                               alpha[i] - old_i, alpha[j] - old_j, True, cval, cbest, cidx)
        # --- G_bar: the gradient's part from alphas at their upper bound
        ui, uj = old_i >= Ci, old_j >= Cj
        if ui != (alpha[i] >= Ci):
            _update_g_bar(i, -Ci if ui else Ci, active, X, y, sq, kp, G_bar, pool, cm, cst,
                          scratch, par, tw)
        if uj != (alpha[j] >= Cj):
            _update_g_bar(j, -Cj if uj else Cj, active, X, y, sq, kp, G_bar, pool, cm, cst,
                          scratch, par, tw)
        i, have_i = i_next, True
    ist[ACTIVE], ist[ITER], ist[COUNTER], ist[UNSHRUNK] = active, it, counter, unshrunk
    ist[RESUME] = DONE
    return code
