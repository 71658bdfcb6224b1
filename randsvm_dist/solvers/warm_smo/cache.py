"""LIBSVM's kernel cache for the warm SMO (``loop``): rows of Q, least recently used
evicted first (numba).

Rows of Q (y_i y_j K_ij) are kept in float32 as LIBSVM's ``Qfloat`` (computed in
float64), over the active set, within ``params.cache_size`` MB (at least two full rows).
Cached rows are slots of one pool; when shrinking leaves the active set short, the slots
are repacked to the active length (``cache_repack``), so more rows fit (LIBSVM's cache
gets the same by storing each row at the active length), and for a large pool also when
every row already has a slot (fewer pages touched: ``loop.REPACK_ALL_VALUES``);
all rows active again empties the cache (``cache_reset``). ``swap_index`` is LIBSVM's
``swap_index``: two variables trade places in the solver's arrays and in every cached
row; a shrinking pass moves each cached row's values for all its swaps at once
(``cache_swap_values``: one walk over the rows instead of one a swap, a row's values
together in cache, the rows split over threads).

The state: ``pool`` (float32 values), ``cst`` (int64: STRIDE, NSLOTS, NFREE, EVALS, and the
loop's counters BAR_EVALS, BAR_UPDATES) and
``cm`` (int64, shape (6, n + 1); column n is the LRU list's sentinel) whose rows are the
slot of a row, the row of a slot, the computed length of a slot, the LRU links and the
stack of free slots.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from randsvm_dist.solvers.warm_smo import types as S
from randsvm_dist.solvers.warm_smo.kernels import qrow

# indices into the cache's int64 state vector ``cst`` (CST_SIZE long): the slots' length,
# their count, the free ones, the kernel values computed, and of those the ones G_bar's
# updates computed (``loop._update_g_bar``) and the count of those updates
STRIDE, NSLOTS, NFREE, EVALS, BAR_EVALS, BAR_UPDATES = range(6)
CST_SIZE = 6
# rows of the cache's bookkeeping matrix ``cm``
SLOT_OF, ROW_IN, SLOT_LEN, PREV, NEXT, FREE = range(6)
# a shrinking pass's value swaps split over threads from this many (cached rows x swaps):
# a swap in a cached row costs ~2 ns, a fork and join of two threads ~2 us
PARALLEL_MIN_SWAPS = 4096


@nb.njit(S.VOID(S.I8_2D, S.I8), nogil=True, cache=True)
def _lru_unlink(cm, s):
    cm[NEXT, cm[PREV, s]] = cm[NEXT, s]
    cm[PREV, cm[NEXT, s]] = cm[PREV, s]


@nb.njit(S.VOID(S.I8_2D, S.I8, S.I8), nogil=True, cache=True)
def _lru_push(cm, s, head):
    """Link slot s as the most recently used (just before the sentinel)."""
    last = cm[PREV, head]
    cm[NEXT, last] = s
    cm[PREV, s] = last
    cm[NEXT, s] = head
    cm[PREV, head] = s


@nb.njit(S.VOID(S.I8_2D, S.I8_1D, S.I8, S.I8), nogil=True, cache=True)
def cache_reset(cm, cst, pool_size, n):
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


@nb.njit(S.I8(S.I8, S.I8, S.F8_2D, S.F8_1D, S.F8_1D, S.F8_1D, S.F4_1D, S.I8_2D, S.I8_1D, S.B1,
              S.TWINS), nogil=True, cache=True)
def cache_get(r, need, X, y, sq, kp, pool, cm, cst, par, tw):
    """The pool offset of row r of Q, computed at least over positions [0, need) (by
    ``kernels.qrow``, with its twins ``tw``)."""
    n = len(y)
    stride = cst[STRIDE]
    s = cm[SLOT_OF, r]
    if s >= 0:
        _lru_unlink(cm, s)
        have = cm[SLOT_LEN, s]
        if have < need:
            cst[EVALS] += qrow(r, have, need, X, y, sq, kp, pool, s * stride + have, par,
                               tw)
            cm[SLOT_LEN, s] = need
    else:
        if cst[NFREE] > 0:
            cst[NFREE] -= 1
            s = cm[FREE, cst[NFREE]]
        else:
            s = cm[NEXT, n]  # least recently used
            _lru_unlink(cm, s)
            cm[SLOT_OF, cm[ROW_IN, s]] = -1
        cst[EVALS] += qrow(r, 0, need, X, y, sq, kp, pool, s * stride, par, tw)
        cm[ROW_IN, s], cm[SLOT_OF, r], cm[SLOT_LEN, s] = r, s, need
    _lru_push(cm, s, n)
    return s * stride


@nb.njit(S.VOID(S.I8_2D, S.I8_1D, S.F4_1D, S.I8), nogil=True, cache=True)
def cache_repack(cm, cst, pool, new_stride):
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


@nb.njit(S.VOID(S.I8, S.I8, S.F8_2D, *[S.F8_1D] * 7, S.I8_1D, S.I8_2D), nogil=True,
         cache=True)
def swap_index(i, j, X, y, sq, alpha, G, G_bar, Cb, QD, perm, cm):
    """LIBSVM's ``swap_index`` but for the cached rows' values: variables i < j trade places
    in every array and in the cache's row-slot maps. A shrinking pass then moves the values
    of every cached row for all its swaps at once (``cache_swap_values``)."""
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
    si, sj = cm[SLOT_OF, i], cm[SLOT_OF, j]
    cm[SLOT_OF, i], cm[SLOT_OF, j] = sj, si
    if sj >= 0:
        cm[ROW_IN, sj] = i
    if si >= 0:
        cm[ROW_IN, si] = j


@nb.njit(nogil=True, cache=True, inline="always")
def _swap_slot_values(k0, k1, slots, lens, pool, stride, pairs, npairs):
    """Slots k0..k1-1 of ``slots``: their values at pairs[2q], pairs[2q + 1] trade places
    for q = 0, 1, ... in order; a slot whose length holds the first of a pair but not the
    second is marked for dropping (lens[k] = -1), as LIBSVM drops such a row."""
    for k in range(k0, k1):
        b, ln = slots[k] * stride, lens[k]
        for q in range(npairs):
            i, j = pairs[2 * q], pairs[2 * q + 1]
            if ln > i:
                if ln <= j:
                    lens[k] = -1
                    break
                pool[b + i], pool[b + j] = pool[b + j], pool[b + i]


@nb.njit(S.VOID(S.I8, S.I8_1D, S.I8_1D, S.F4_1D, S.I8, S.I8_1D, S.I8), nogil=True, cache=True,
         parallel=True)
def _swap_values_parallel(nch, slots, lens, pool, stride, pairs, npairs):
    """``_swap_slot_values`` over nch equal ranges of the slots in parallel."""
    m = len(slots)
    for c in nb.prange(nch):
        _swap_slot_values(c * m // nch, (c + 1) * m // nch, slots, lens, pool, stride, pairs,
                          npairs)


@nb.njit(S.VOID(S.I8_1D, S.I8, S.F4_1D, S.I8_2D, S.I8_1D, S.I8), nogil=True, cache=True)
def cache_swap_values(pairs, npairs, pool, cm, cst, nth):
    """The cached rows' side of a shrinking pass's ``swap_index`` calls (pairs[2q],
    pairs[2q + 1]: the q-th swap's i < j): each cached row's values trade places for every
    swap in order, a row at a time while it is in cache (LIBSVM walks every row for each
    swap), split over nth threads when long; rows that held an i but not its j are dropped,
    in LRU order. Slots are independent: the same values for any nth."""
    n = cm.shape[1] - 1
    if npairs == 0:
        return
    slots = np.empty(cst[NSLOTS], dtype=np.int64)
    m = 0
    s = cm[NEXT, n]
    while s != n:
        slots[m] = s
        m += 1
        s = cm[NEXT, s]
    slots = slots[:m]
    lens = np.empty(m, dtype=np.int64)
    for k in range(m):
        lens[k] = cm[SLOT_LEN, slots[k]]
    nch = min(nth, m) if m * npairs >= PARALLEL_MIN_SWAPS else 1
    if nch > 1:
        _swap_values_parallel(nch, slots, lens, pool, cst[STRIDE], pairs, npairs)
    else:
        _swap_slot_values(0, m, slots, lens, pool, cst[STRIDE], pairs, npairs)
    for k in range(m):
        if lens[k] < 0:
            s = slots[k]
            _lru_unlink(cm, s)
            cm[SLOT_OF, cm[ROW_IN, s]] = -1
            cm[ROW_IN, s] = -1
            cm[SLOT_LEN, s] = 0
            cm[FREE, cst[NFREE]] = s
            cst[NFREE] += 1
