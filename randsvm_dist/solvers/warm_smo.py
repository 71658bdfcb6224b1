"""A C-SVM dual solver that starts from given alphas: LIBSVM's SMO, warm-startable (numba).

RandSVM re-solves working sets that are mostly the previous solution's support vectors
plus a few fresh rows. LIBSVM cannot take a starting point, so every re-solve finds the
previous optimum again from alpha = 0. This solver is LIBSVM's own algorithm
(``svm.cpp``, ``Solver::Solve``) with a starting point:

- working-set selection WSS2 (Fan, Chen, Lin, "Working set selection using second order
  information for training SVM", JMLR 2005): i maximises -y_i G_i over I_up, j minimises
  the second-order decrease -(b_ij^2) / a_ij over I_low with a_ij = K_ii + K_jj - 2 K_ij
  (TAU = 1e-12 when a_ij <= 0);
- LIBSVM's two-variable update with clipping to per-class boxes (C x class weight) or
  per-row boxes (``row_C``: C x class weight x sample weight), the same stopping rule
  (m(alpha) - M(alpha) < tol, LIBSVM's -e) and the same rho (the mean of y_i G_i over
  free alphas, else the middle of the bounds);
- LIBSVM's shrinking (``params.shrinking``, its -h): every min(n, 1000) iterations (100
  from a warm start: WARM_SHRINK_EVERY) the rows at a bound whose gradient says they
  stay there (``be_shrunk``) are swapped behind the active set; selection, gradient
  updates and kernel rows cover the active set only. G_bar (the gradient's part from
  alphas at their upper bound) is kept for every row, so the gradient of the shrunk rows
  is rebuilt exactly (``reconstruct_gradient``) once the active set is optimal to
  10 x tol (then all rows are active again) and at the end; the rebuild is a blocked
  kernel product (shrunk rows x free alphas);
- LIBSVM's kernel cache: rows of Q (y_i y_j K_ij) in float32 as LIBSVM's ``Qfloat``
  (computed in float64), over the active set, least recently used evicted first, within
  ``params.cache_size`` MB (at least two full rows). Cached rows are slots of one pool;
  when shrinking leaves the active set under REPACK_SHARE of the slot length the slots
  are repacked to the active length, so more rows fit (LIBSVM's cache gets the same by
  storing each row at the active length); all rows active again empties the cache.

Faster than LIBSVM per kernel value: the rows are held transposed and dense in float64,
so a kernel row is summed feature by feature across positions (vectorised, no sum
reordered), and exp is a vectorisable polynomial exact to 3e-16 (``_exp_inplace``);
LIBSVM walks sparse index/value pairs and calls libm's exp. Of the ``n_threads`` offered a
solve takes ``libsvm_adapter.step_threads`` for its rows (WARM_SYNC_TERMS: each parallel
loop is short, and waiting for many threads cost more than they gave); with more than one,
long kernel rows and the gradient blocks are split over them (numba ``prange``, only when
numba's threading layer is OpenMP or TBB, safe under concurrent calls from Dask worker
threads; else one thread). The threads never change the result: every value is computed
the same way whatever the split.

The starting gradient G = Q alpha0 - 1 and G_bar are computed once over the nonzero
alphas (float64; dot products by BLAS, or directly for at most DIRECT_MAX_FEATURES
features). A starting point outside the feasible set is repaired first (clipped to the
boxes, then the larger class side scaled down until sum_i y_i alpha_i = 0). A CSR working
set is densified when its float64 copy fits MAX_DENSE_BYTES (else LIBSVM solves it).
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np
import scipy.sparse as sp

from randsvm_dist.solvers.libsvm_adapter import (
    KERNEL_ROW_TERMS,
    BinarySolution,
    SolverParams,
    dual_objective,
    step_threads,
)

TAU = 1e-12
KERNEL_CODE = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
# dense copies of sparse working sets above this many bytes are not made (LIBSVM instead)
MAX_DENSE_BYTES = 1 << 30
# a kernel row is split over threads when it costs at least this many (row x feature) terms
PARALLEL_MIN_WORK = 60_000
# a solve's threads: ``libsvm_adapter.step_threads`` of the offered ones for its first
# kernel row's length, with this wait per step and extra thread (numba's fork-join); fitted
# to the 16-core reference, where the warm re-solves of 16-22k rows were fastest at 2-4
# threads and 5-7x slower with all 16 (``exact.cost_model``)
WARM_SYNC_TERMS = 4_000.0
# iterations between shrinking passes: LIBSVM's min(n, 1000) from alpha = 0, where the first
# gradients say little about the final bounds; from a warm start they do, and shrinking
# every 100 iterations did 2-3x fewer kernel evaluations than every 1000 (ringnorm and
# checkerboard, 20k rows, 20% fresh)
SHRINK_EVERY = 1000
WARM_SHRINK_EVERY = 100
# feasible_start leaves sum_i y_i alpha_i alone when it is this small relative to the sums
BALANCE_RTOL = 1e-12
# the cache's slots are repacked when the active set falls under this share of their length
REPACK_SHARE = 0.8
# _run's return codes: optimal; rebuild the shrunk gradient, then shrink (LIBSVM's
# unshrink); rebuild it, then check optimality on all rows; iteration limit reached
DONE, UNSHRINK, FINAL_CHECK, MAX_ITER = 0, 1, 2, 3
# indices into the int64 state vector ``ist`` and the cache's ``cst``
ACTIVE, ITER, COUNTER, UNSHRUNK, MAXIT, RESUME, EVERY, SCANNED = range(8)
STRIDE, NSLOTS, NFREE, EVALS = range(4)
# rows of the cache's bookkeeping matrix ``cm`` (shape (6, n + 1); column n is the LRU
# list's sentinel): slot of a row, row of a slot, computed length of a slot, LRU links,
# stack of free slots
SLOT_OF, ROW_IN, SLOT_LEN, PREV, NEXT, FREE = range(6)


def _threadsafe_layer() -> bool:
    """True when numba's threading layer will be OpenMP or TBB (workqueue, the last
    resort, aborts when two threads launch parallel kernels at once)."""
    layer = str(nb.config.THREADING_LAYER).lower()
    if layer == "workqueue":
        return False
    for mod in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
        try:
            __import__(mod)
            return True
        except ImportError:
            continue
    return False


# e^x as 2^k e^r, k = round(x / ln 2), r = x - k ln 2 in [-ln2 / 2, ln2 / 2] (ln 2 split in
# two for an exact r), e^r by its degree-12 Taylor polynomial (remainder < 2e-16), 2^k
# written into the exponent bits: the loop vectorises, where numba calls libm's exp
# element by element (measured: 1.2 vs 4.4 ns a value, relative error <= 3.2e-16).
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
ROUND_MAGIC = 6755399441055744.0  # 1.5 x 2^52: adding it rounds to an integer
ROUND_MAGIC_BITS = int(np.array([ROUND_MAGIC]).view(np.int64)[0])
EXP_MIN_ARG = -708.0  # e^-708 is still a normal float64
# up to this many features the starting gradient forms distances itself instead of by GEMM
DIRECT_MAX_FEATURES = 4
# positions of a kernel row computed together (the dot products stay in L1)
ROW_BLOCK = 256


@nb.njit(nogil=True, cache=True)
def _exp_inplace(v: np.ndarray, m: int, tb: np.ndarray) -> None:
    """v[:m] = exp(v[:m]) for arguments <= 0 (those under EXP_MIN_ARG give e^EXP_MIN_ARG);
    tb: a float64 scratch array of at least m values."""
    for j in range(m):
        x = max(v[j], EXP_MIN_ARG)
        t = x * LOG2E + ROUND_MAGIC
        tb[j] = t
        kf = t - ROUND_MAGIC
        r = (x - kf * LN2_HI) - kf * LN2_LO
        q = 1.0 / 479001600.0
        q = q * r + 1.0 / 39916800.0
        q = q * r + 1.0 / 3628800.0
        q = q * r + 1.0 / 362880.0
        q = q * r + 1.0 / 40320.0
        q = q * r + 1.0 / 5040.0
        q = q * r + 1.0 / 720.0
        q = q * r + 1.0 / 120.0
        q = q * r + 1.0 / 24.0
        q = q * r + 1.0 / 6.0
        q = q * r + 0.5
        q = q * r + 1.0
        v[j] = q * r + 1.0
    bits = tb.view(np.int64)
    for j in range(m):
        bits[j] = (bits[j] - ROUND_MAGIC_BITS + 1023) << 52
    for j in range(m):
        v[j] *= tb[j]


@nb.njit(nogil=True, cache=True)
def _kernel_of_dots(v, m, sq_p, sq_k, kp, tb):
    """v[:m] (dot products of x_p with rows of squared norms sq_k[:m]) -> kernel values,
    in place."""
    code, gamma, coef0, degree = int(kp[0]), kp[1], kp[2], int(kp[3])
    if code == 2:
        for j in range(m):
            v[j] = -gamma * max(sq_p + sq_k[j] - 2.0 * v[j], 0.0)
        _exp_inplace(v, m, tb)
    elif code == 1:
        for j in range(m):
            v[j] = (gamma * v[j] + coef0) ** degree
    elif code == 3:
        for j in range(m):
            v[j] = np.tanh(gamma * v[j] + coef0)


@nb.njit(nogil=True, cache=True)
def _qfill_block(p, k0, k1, XT, y, sq, kp, out, off, buf, tb):
    """out[off + k - k0] = Q_pk for k in [k0, k1) (at most ROW_BLOCK positions); XT is
    (d, n): the dot products are summed feature by feature across positions, which
    vectorises without reordering any sum."""
    m = k1 - k0
    for j in range(m):
        buf[j] = 0.0
    for t in range(XT.shape[0]):
        xv = XT[t, p]
        row = XT[t, k0:k1]
        for j in range(m):
            buf[j] += xv * row[j]
    _kernel_of_dots(buf, m, sq[p], sq[k0:k1], kp, tb)
    yp = y[p]
    yk = y[k0:k1]
    dst = out[off:off + m]
    for j in range(m):
        dst[j] = yp * yk[j] * buf[j]


@nb.njit(nogil=True, cache=True)
def _qfill_serial(p, start, end, XT, y, sq, kp, out, off):
    buf = np.empty(ROW_BLOCK)
    tb = np.empty(ROW_BLOCK)
    for k0 in range(start, end, ROW_BLOCK):
        _qfill_block(p, k0, min(k0 + ROW_BLOCK, end), XT, y, sq, kp, out,
                     off + k0 - start, buf, tb)


@nb.njit(nogil=True, cache=True, parallel=True)
def _qfill_parallel(p, start, end, XT, y, sq, kp, out, off):
    nblocks = (end - start + ROW_BLOCK - 1) // ROW_BLOCK
    for q in nb.prange(nblocks):
        buf = np.empty(ROW_BLOCK)
        tb = np.empty(ROW_BLOCK)
        k0 = start + q * ROW_BLOCK
        _qfill_block(p, k0, min(k0 + ROW_BLOCK, end), XT, y, sq, kp, out,
                     off + k0 - start, buf, tb)


@nb.njit(nogil=True, cache=True)
def _qfill(p, start, end, XT, y, sq, kp, out, off, par):
    """out[off + k - start] = Q_pk = y_p y_k K(x_p, x_k) for k in [start, end)."""
    if par and (end - start) * (XT.shape[0] + 8) >= PARALLEL_MIN_WORK:
        _qfill_parallel(p, start, end, XT, y, sq, kp, out, off)
    else:
        _qfill_serial(p, start, end, XT, y, sq, kp, out, off)


# -- the kernel-row cache ------------------------------------------------------------------
@nb.njit(nogil=True, cache=True)
def _lru_unlink(cm, s):
    cm[NEXT, cm[PREV, s]] = cm[NEXT, s]
    cm[PREV, cm[NEXT, s]] = cm[PREV, s]


@nb.njit(nogil=True, cache=True)
def _lru_push(cm, s, head):
    """Link slot s as the most recently used (just before the sentinel)."""
    last = cm[PREV, head]
    cm[NEXT, last] = s
    cm[PREV, s] = last
    cm[NEXT, s] = head
    cm[PREV, head] = s


@nb.njit(nogil=True, cache=True)
def _cache_reset(cm, cst, pool_size, n):
    """Empty the cache, slots of full length n (LIBSVM keeps at least two full rows)."""
    cst[STRIDE] = n
    cst[NSLOTS] = min(pool_size // n, n)
    cst[NFREE] = cst[NSLOTS]
    for r in range(n):
        cm[SLOT_OF, r] = -1
        cm[ROW_IN, r] = -1
        cm[SLOT_LEN, r] = 0
    for s in range(cst[NSLOTS]):
        cm[FREE, s] = cst[NSLOTS] - 1 - s
    cm[PREV, n] = n
    cm[NEXT, n] = n


@nb.njit(nogil=True, cache=True)
def _cache_get(r, need, X, y, sq, kp, pool, cm, cst, par):
    """The pool offset of row r of Q, computed at least over positions [0, need)."""
    n = len(y)
    stride = cst[STRIDE]
    s = cm[SLOT_OF, r]
    if s >= 0:
        _lru_unlink(cm, s)
        have = cm[SLOT_LEN, s]
        if have < need:
            _qfill(r, have, need, X, y, sq, kp, pool, s * stride + have, par)
            cst[EVALS] += need - have
            cm[SLOT_LEN, s] = need
    else:
        if cst[NFREE] > 0:
            cst[NFREE] -= 1
            s = cm[FREE, cst[NFREE]]
        else:
            s = cm[NEXT, n]  # least recently used
            _lru_unlink(cm, s)
            cm[SLOT_OF, cm[ROW_IN, s]] = -1
        _qfill(r, 0, need, X, y, sq, kp, pool, s * stride, par)
        cst[EVALS] += need
        cm[ROW_IN, s], cm[SLOT_OF, r], cm[SLOT_LEN, s] = r, s, need
    _lru_push(cm, s, n)
    return s * stride


@nb.njit(nogil=True, cache=True)
def _cache_repack(cm, cst, pool, new_stride):
    """Shorter slots (the active set shrank): cached rows keep their first new_stride
    values, and the freed memory becomes new slots."""
    n = cm.shape[1] - 1
    old, nslots = cst[STRIDE], cst[NSLOTS]
    # ascending slots and positions: a value only moves down, over values already moved
    for s in range(nslots):
        if cm[ROW_IN, s] >= 0:
            keep = min(cm[SLOT_LEN, s], new_stride)
            src, dst = s * old, s * new_stride
            for t in range(keep):
                pool[dst + t] = pool[src + t]
            cm[SLOT_LEN, s] = keep
    more = min(len(pool) // new_stride, n)
    for s in range(more - 1, nslots - 1, -1):
        cm[FREE, cst[NFREE]] = s
        cm[ROW_IN, s] = -1
        cm[SLOT_LEN, s] = 0
        cst[NFREE] += 1
    cst[STRIDE], cst[NSLOTS] = new_stride, more


@nb.njit(nogil=True, cache=True)
def _swap_index(i, j, X, y, sq, alpha, G, G_bar, Cb, QD, perm, pool, cm, cst):
    """LIBSVM's ``swap_index``: rows i < j trade places in every array and cached row."""
    for t in range(X.shape[0]):
        X[t, i], X[t, j] = X[t, j], X[t, i]
    y[i], y[j] = y[j], y[i]
    sq[i], sq[j] = sq[j], sq[i]
    alpha[i], alpha[j] = alpha[j], alpha[i]
    G[i], G[j] = G[j], G[i]
    G_bar[i], G_bar[j] = G_bar[j], G_bar[i]
    Cb[i], Cb[j] = Cb[j], Cb[i]
    QD[i], QD[j] = QD[j], QD[i]
    perm[i], perm[j] = perm[j], perm[i]
    n = len(y)
    si, sj = cm[SLOT_OF, i], cm[SLOT_OF, j]
    cm[SLOT_OF, i], cm[SLOT_OF, j] = sj, si
    if sj >= 0:
        cm[ROW_IN, sj] = i
    if si >= 0:
        cm[ROW_IN, si] = j
    stride = cst[STRIDE]
    s = cm[NEXT, n]
    while s != n:
        nxt = cm[NEXT, s]
        ln = cm[SLOT_LEN, s]
        if ln > i:
            if ln > j:
                b = s * stride
                pool[b + i], pool[b + j] = pool[b + j], pool[b + i]
            else:  # the row holds i but not j: drop it, as LIBSVM does
                _lru_unlink(cm, s)
                cm[SLOT_OF, cm[ROW_IN, s]] = -1
                cm[ROW_IN, s] = -1
                cm[SLOT_LEN, s] = 0
                cm[FREE, cst[NFREE]] = s
                cst[NFREE] += 1
        s = nxt


# -- SMO with shrinking ------------------------------------------------------------------
@nb.njit(nogil=True, cache=True, inline="always")
def _be_shrunk(t, g1, g2, y, alpha, G, Cb):
    if alpha[t] >= Cb[t]:
        return -G[t] > g1 if y[t] > 0 else -G[t] > g2
    if alpha[t] <= 0:
        return G[t] > g2 if y[t] > 0 else G[t] > g1
    return False


@nb.njit(nogil=True, cache=True)
def _shrink(active, g1, g2, X, y, sq, alpha, G, G_bar, Cb, QD, perm, pool, cm, cst):
    """LIBSVM's shrinking pass over the active rows; returns the new active size."""
    i = 0
    while i < active:
        if _be_shrunk(i, g1, g2, y, alpha, G, Cb):
            active -= 1
            while active > i:
                if not _be_shrunk(active, g1, g2, y, alpha, G, Cb):
                    _swap_index(i, active, X, y, sq, alpha, G, G_bar, Cb, QD, perm, pool,
                                cm, cst)
                    break
                active -= 1
        i += 1
    if active < REPACK_SHARE * cst[STRIDE] and active >= 2 and cst[NSLOTS] < len(y):
        _cache_repack(cm, cst, pool, active)
    return active


@nb.njit(nogil=True, cache=True)
def _update_g_bar(r, c, active, X, y, sq, kp, G_bar, pool, cm, cst, scratch, par):
    """G_bar += c Q_r over all rows (LIBSVM's get_Q(r, l) when r's upper-bound state
    changes): the active part from the cache, the shrunk part computed."""
    n = len(y)
    if cst[STRIDE] == n:
        b = _cache_get(r, n, X, y, sq, kp, pool, cm, cst, par)
        for k in range(n):
            G_bar[k] += c * pool[b + k]
        return
    b = _cache_get(r, active, X, y, sq, kp, pool, cm, cst, par)
    for k in range(active):
        G_bar[k] += c * pool[b + k]
    _qfill(r, active, n, X, y, sq, kp, scratch, 0, par)
    cst[EVALS] += n - active
    for k in range(active, n):
        G_bar[k] += c * scratch[k - active]


@nb.njit(nogil=True, cache=True)
def _run(X, y, sq, alpha, G, G_bar, Cb, QD, perm, kp, eps, shrinking, pool, cm, cst, ist,
         fst, scratch, par):
    """SMO iterations (LIBSVM's ``Solver::Solve`` loop) from the state in the arrays,
    updated in place, until one of the return codes DONE, UNSHRINK, FINAL_CHECK (the
    caller rebuilds the shrunk rows' gradient and calls again with ist[RESUME] set to the
    code) or MAX_ITER."""
    n = len(y)
    active, it, counter, unshrunk = ist[ACTIVE], ist[ITER], ist[COUNTER], ist[UNSHRUNK]
    resume = ist[RESUME]
    code = DONE
    while True:
        if resume != DONE:
            active = n
            if cst[STRIDE] < n:
                _cache_reset(cm, cst, len(pool), n)
            if resume == UNSHRINK:
                active = _shrink(active, fst[0], fst[1], X, y, sq, alpha, G, G_bar, Cb, QD,
                                 perm, pool, cm, cst)
                resume = DONE
        else:
            if it >= ist[MAXIT]:
                code = MAX_ITER
                break
            counter -= 1
            if counter == 0:
                counter = min(n, ist[EVERY])
                if shrinking:
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
                                     perm, pool, cm, cst)
        # --- select i: max over I_up of -y G (active rows). Both scans are written
        # without branches on the rows' class and bound (selects instead): those branches
        # mispredict, and the scans ran 3-4x slower with them.
        gmax, i = -np.inf, -1
        for t in range(active):
            yt = y[t]
            up = ((yt > 0) & (alpha[t] < Cb[t])) | ((yt < 0) & (alpha[t] > 0))
            v = -yt * G[t]
            v = v if up else -np.inf
            if v >= gmax:
                gmax = v
                i = t
        gmax2, j, best = -np.inf, -1, np.inf
        if i >= 0:
            bi = _cache_get(i, active, X, y, sq, kp, pool, cm, cst, par)
            qdi, yi = QD[i], y[i]
            # --- select j: second-order rule over I_low; a_it = K_ii + K_tt - 2 K_it with
            # K_it = y_i y_t Q_it
            for t in range(active):
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
        if gmax + gmax2 < eps or j < 0:
            if active < n and resume != FINAL_CHECK:
                code = FINAL_CHECK
            break
        if resume == FINAL_CHECK:
            counter = 1  # shrink at the next iteration, as LIBSVM does
        resume = DONE
        it += 1
        ist[SCANNED] += active
        bi = _cache_get(i, active, X, y, sq, kp, pool, cm, cst, par)
        bj = _cache_get(j, active, X, y, sq, kp, pool, cm, cst, par)
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
        di, dj = alpha[i] - old_i, alpha[j] - old_j
        for t in range(active):
            G[t] += pool[bi + t] * di + pool[bj + t] * dj
        # --- G_bar: the gradient's part from alphas at their upper bound
        ui, uj = old_i >= Ci, old_j >= Cj
        if ui != (alpha[i] >= Ci):
            _update_g_bar(i, -Ci if ui else Ci, active, X, y, sq, kp, G_bar, pool, cm, cst,
                          scratch, par)
        if uj != (alpha[j] >= Cj):
            _update_g_bar(j, -Cj if uj else Cj, active, X, y, sq, kp, G_bar, pool, cm, cst,
                          scratch, par)
    ist[ACTIVE], ist[ITER], ist[COUNTER], ist[UNSHRUNK] = active, it, counter, unshrunk
    ist[RESUME] = DONE
    return code


def _dense64_t(X) -> np.ndarray:
    """X transposed, (d, n) float64 C-ordered: a new array (the solver permutes its
    columns)."""
    out = np.empty((X.shape[1], X.shape[0]), dtype=np.float64)
    out[:] = (X.toarray() if sp.issparse(X) else np.asarray(X)).T
    return out


@nb.njit(nogil=True, cache=True)
def _accumulate_rows(lo, hi, D, XR, XC, sq_r, sq_c, y_r, coefs, kp, out):
    """out[a, m] += y_r[a] sum_c K_ac coefs[m, c] for a in [lo, hi), a row at a time while
    it is in cache. K from the dot products D (nr, nc), or, when D is empty (few
    features: a GEMM would only write its products to memory), from the rows XR (d, nr)
    and XC (d, nc) directly."""
    nc = XC.shape[1]
    v = np.empty(nc)
    tb = np.empty(nc)
    direct = D.shape[0] == 0
    code, gamma = int(kp[0]), kp[1]
    for a in range(lo, hi):
        if direct and code == 2:
            for c in range(nc):
                v[c] = 0.0
            for t in range(XC.shape[0]):
                xv = XR[t, a]
                row = XC[t]
                for c in range(nc):
                    dlt = xv - row[c]
                    v[c] += dlt * dlt
            for c in range(nc):
                v[c] = -gamma * v[c]
            _exp_inplace(v, nc, tb)
        else:
            if direct:
                for c in range(nc):
                    v[c] = 0.0
                for t in range(XC.shape[0]):
                    xv = XR[t, a]
                    row = XC[t]
                    for c in range(nc):
                        v[c] += xv * row[c]
            else:
                v[:] = D[a]
            _kernel_of_dots(v, nc, sq_r[a], sq_c, kp, tb)
        for m in range(coefs.shape[0]):
            out[a, m] += y_r[a] * np.dot(v, coefs[m])


@nb.njit(nogil=True, cache=True, parallel=True)
def _accumulate_parallel(D, XR, XC, sq_r, sq_c, y_r, coefs, kp, out, parts):
    """``_accumulate_rows`` over all rows, in ``parts`` row ranges run in parallel."""
    n = XR.shape[1]
    for q in nb.prange(parts):
        _accumulate_rows(q * n // parts, (q + 1) * n // parts, D, XR, XC, sq_r, sq_c, y_r,
                         coefs, kp, out)


def _add_kernel_products(out: np.ndarray, rows: np.ndarray, XT: np.ndarray, y: np.ndarray,
                         sq: np.ndarray, cols: np.ndarray, coefs: np.ndarray,
                         kp: np.ndarray, threads: int = 1) -> None:
    """out[:, m] += y_r sum_c K(x_r, x_c) coefs[c, m] for r in rows (XT: (d, n)): dot
    products by BLAS in row blocks (directly for at most DIRECT_MAX_FEATURES features),
    the kernel and the sums in one numba pass."""
    if not len(rows) or not len(cols):
        return
    step = max(64, int(2**22 // len(cols)))
    Xc = np.ascontiguousarray(XT[:, cols])
    sq_c = sq[cols]
    coefs = np.ascontiguousarray(np.asarray(coefs).T)
    direct = XT.shape[0] <= DIRECT_MAX_FEATURES
    none = np.empty((0, 0))
    for a in range(0, len(rows), step):
        r = rows[a:a + step]
        XR = np.ascontiguousarray(XT[:, r])
        D = none if direct else XR.T @ Xc
        if threads > 1:
            _accumulate_parallel(D, XR, Xc, sq[r], sq_c, y[r], coefs, kp, out[a:a + step],
                                 4 * threads)
        else:
            _accumulate_rows(0, len(r), D, XR, Xc, sq[r], sq_c, y[r], coefs, kp,
                             out[a:a + step])


def _reconstruct(active: int, X, y, sq, alpha, G, G_bar, Cb, kp, threads: int) -> None:
    """LIBSVM's ``reconstruct_gradient``: G of the shrunk rows from G_bar and the free
    alphas (all free alphas are active)."""
    n = len(y)
    if active >= n:
        return
    a = alpha[:active]
    free = np.flatnonzero((a > 0) & (a < Cb[:active]))
    g = (G_bar[active:] - 1.0)[:, None]
    _add_kernel_products(g, np.arange(active, n), X, y, sq, free,
                         (alpha[free] * y[free])[:, None], kp, threads)
    G[active:] = g[:, 0]


def _rho(y: np.ndarray, alpha: np.ndarray, G: np.ndarray, Cb: np.ndarray) -> float:
    """LIBSVM's ``calculate_rho``."""
    yG = y * G
    upper, lower = alpha >= Cb, alpha <= 0
    free = ~upper & ~lower
    if free.any():
        return float(yG[free].mean())
    ub_set = (upper & (y < 0)) | (lower & (y > 0))
    lb_set = (upper & (y > 0)) | (lower & (y < 0))
    ub = yG[ub_set].min() if ub_set.any() else np.inf
    lb = yG[lb_set].max() if lb_set.any() else -np.inf
    return float((ub + lb) / 2.0)


def feasible_start(alpha0: np.ndarray, y: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """alpha0 clipped to [0, C_i] with sum_i y_i alpha_i = 0 (the larger side scaled down).

    A previous optimum balances to rounding only (|sum_i y_i alpha_i| ~ 1e-16 of the
    sums); that is left as it is: scaling it would move every alpha at its bound C_i a
    rounding below it, where it counts as free and can never be shrunk.

    Args:
        alpha0: (n,) starting alphas.
        y: (n,) labels in {-1, +1}.
        Cb: (n,) upper bounds.

    Returns:
        a feasible (n,) float64 copy.
    """
    a = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cb)
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
    if abs(pos - neg) <= BALANCE_RTOL * max(pos, neg):
        return a
    if pos > neg:
        a[y > 0] *= neg / pos
    elif neg > pos:
        a[y < 0] *= pos / neg
    return a


def needs_libsvm(X, y: np.ndarray) -> bool:
    """True when this solver hands (X, y) to LIBSVM: one class only, or a CSR working set
    whose float64 dense copy would exceed MAX_DENSE_BYTES."""
    nbytes = X.shape[0] * X.shape[1] * 8
    return len(np.unique(y)) < 2 or (sp.issparse(X) and nbytes > MAX_DENSE_BYTES)


def _smo(XT: np.ndarray, y: np.ndarray, Cb: np.ndarray, alpha: np.ndarray,
         params: SolverParams, n_threads: int, shrinking: bool, cache_size: float,
         max_iter: int, stats: dict) -> tuple[np.ndarray, float, int]:
    """Run the solver on permuted copies; returns (alpha in the caller's row order, rho,
    iterations) and fills ``stats``. XT ((d, n): the rows as columns), y, Cb, alpha are
    permuted in place."""
    t0 = time.perf_counter()
    n = len(y)
    k = params.kernel
    sq = np.einsum("ij,ij->j", XT, XT)
    QD = {"linear": sq, "rbf": np.ones(n),
          "poly": (k.gamma * sq + k.coef0) ** int(k.degree),
          "sigmoid": np.tanh(k.gamma * sq + k.coef0)}[k.name].copy()
    kp = np.array([KERNEL_CODE[k.name], k.gamma, k.coef0, k.degree], dtype=np.float64)
    par = n_threads > 1 and _threadsafe_layer()
    par_threads = n_threads if par else 1
    G = -np.ones(n)
    G_bar = np.zeros(n)
    nz = np.flatnonzero(alpha > 0)
    if len(nz):
        coefs = np.stack([alpha[nz] * y[nz], np.where(alpha[nz] >= Cb[nz], Cb[nz], 0.0)
                          * y[nz]], axis=1)
        acc = np.zeros((n, 2))
        _add_kernel_products(acc, np.arange(n), XT, y, sq, nz, coefs, kp, par_threads)
        G += acc[:, 0]
        G_bar += acc[:, 1]
    pool_size = int(min(max(cache_size * (1 << 20) // 4, 2 * n), n * n))
    pool = np.empty(max(pool_size, 1), dtype=np.float32)
    cm = np.empty((6, n + 1), dtype=np.int64)
    cst = np.zeros(4, dtype=np.int64)
    _cache_reset(cm, cst, len(pool), n)
    perm = np.arange(n, dtype=np.int64)
    every = SHRINK_EVERY if not len(nz) else WARM_SHRINK_EVERY
    ist = np.array([n, 0, min(n, every) + 1, 0, max_iter, DONE, every, 0], dtype=np.int64)
    fst = np.zeros(2)
    scratch = np.empty(n, dtype=np.float32)  # float32 like cached rows: same G_bar either way
    t1 = time.perf_counter()
    t_rebuild = 0.0
    while True:
        code = _run(XT, y, sq, alpha, G, G_bar, Cb, QD, perm, kp, float(params.tol),
                    bool(shrinking), pool, cm, cst, ist, fst, scratch, par)
        if code in (UNSHRINK, FINAL_CHECK):
            tr = time.perf_counter()
            _reconstruct(int(ist[ACTIVE]), XT, y, sq, alpha, G, G_bar, Cb, kp, par_threads)
            t_rebuild += time.perf_counter() - tr
            ist[RESUME] = code
            continue
        if code == MAX_ITER:
            _reconstruct(int(ist[ACTIVE]), XT, y, sq, alpha, G, G_bar, Cb, kp, par_threads)
        break
    out = np.empty(n)
    out[perm] = alpha
    stats.update(iterations=int(ist[ITER]), kernel_evals=int(cst[EVALS]),
                 mean_active=float(ist[SCANNED]) / max(int(ist[ITER]), 1),
                 start_s=t1 - t0, smo_s=time.perf_counter() - t1, rebuild_s=t_rebuild)
    return out, _rho(y, alpha, G, Cb), int(ist[ITER])


def solve_warm_counted(X, y: np.ndarray, params: SolverParams,
                       alpha0: np.ndarray | None = None,
                       n_threads: int = 1,
                       row_C: np.ndarray | None = None,
                       stats: dict | None = None) -> tuple[BinarySolution, int]:
    """``solve_warm`` that also returns the SMO iteration count (0 when LIBSVM solved it).

    Args: as ``solve_warm``, and
        stats: a dict that receives ``iterations``, ``kernel_evals`` (kernel values the
            SMO loop computed), ``mean_active`` (the active set's mean size over the
            iterations), ``start_s`` (seconds for the starting gradient), ``smo_s``
            (seconds in the SMO loop with its gradient rebuilds), ``rebuild_s``
            (seconds of those rebuilds) and ``threads`` (the threads it took of the
            offered); None: none.

    Raises: as ``solve_warm``.

    Returns:
        (BinarySolution, iterations).
    """
    from threadpoolctl import threadpool_limits

    from randsvm_dist.solvers.libsvm_adapter import solve_binary

    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    n = len(y)
    if row_C is not None:
        Cb = np.array(row_C, dtype=np.float64)
        if Cb.shape != (n,) or not (Cb > 0).all():
            raise ValueError("row_C must hold one C_i > 0 per row (drop rows with C_i <= 0 "
                             "first: solvers.weighted.solve_weighted_warm does)")
    else:
        Cb = np.where(y > 0, params.C * params.weight_pos, params.C * params.weight_neg)
    if needs_libsvm(X, y):
        if row_C is not None:
            raise ValueError("per-row bounds on one class or a huge sparse working set: "
                             "solve with solvers.weighted.solve_weighted")
        return solve_binary(X, y, params, n_threads), 0
    alpha = np.zeros(n) if alpha0 is None else feasible_start(alpha0, y, Cb)
    threads = step_threads(n * (X.shape[1] + KERNEL_ROW_TERMS), n_threads, WARM_SYNC_TERMS)
    nb_threads = min(threads, nb.config.NUMBA_NUM_THREADS)
    before = nb.get_num_threads()
    try:
        nb.set_num_threads(nb_threads)
        with threadpool_limits(limits=threads):
            alpha, rho, it = _smo(_dense64_t(X), y.copy(), Cb.copy(), alpha, params, threads,
                                  bool(params.shrinking), float(params.cache_size),
                                  max(10_000_000, 100 * n), {} if stats is None else stats)
    finally:
        nb.set_num_threads(before)
    if stats is not None:
        stats["threads"] = threads
    support = np.flatnonzero(alpha > 0)
    coef = y[support] * alpha[support]
    return BinarySolution(support, coef, -float(rho),
                          dual_objective(X[support], coef, params.kernel)), int(it)


def solve_warm(X, y: np.ndarray, params: SolverParams, alpha0: np.ndarray | None = None,
               n_threads: int = 1, row_C: np.ndarray | None = None) -> BinarySolution:
    """Solve C-SVM on (X, y) starting from alpha0, with LIBSVM's SMO and conventions.

    Args:
        X: (n, d) float32 ndarray or CSR (a CSR above MAX_DENSE_BYTES as float64 dense, or
            with one class only, goes to LIBSVM instead).
        y: (n,) labels in {-1, +1}.
        params: SolverParams (C, kernel, class weights, tol, cache_size in MB, shrinking).
        alpha0: (n,) starting alphas (repaired to a feasible point); None: zeros.
        n_threads: threads offered for the starting gradient (BLAS) and long kernel rows
            (the solve takes ``libsvm_adapter.step_threads`` of them).
        row_C: (n,) per-row upper bounds C_i > 0 replacing C x class weight (sample
            weights; ``params.C`` and the class weights are then not applied). Rows with
            C_i <= 0 must be dropped by the caller (``weighted.solve_weighted_warm``).

    Returns:
        BinarySolution, as ``libsvm_adapter.solve_binary`` returns it.

    Raises:
        ValueError: row_C of the wrong length or with an entry <= 0.
    """
    return solve_warm_counted(X, y, params, alpha0, n_threads, row_C)[0]
