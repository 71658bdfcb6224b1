"""Kernel values for the warm SMO (``warm_smo``): rows of Q and blocked kernel products (numba).

The rows are held transposed and dense in float64 (XT, shape (d, n)), so a kernel row is
summed feature by feature across positions (vectorised, no sum reordered), and exp is a
vectorisable polynomial exact to 3e-16 (``exp_inplace``); LIBSVM walks sparse index/value
pairs and calls libm's exp. Long rows split over threads (numba ``prange``, only when
numba's threading layer is OpenMP or TBB: ``threadsafe_layer``), the products' row blocks
over Python threads (BLAS and the numba pass release the GIL); every value is computed
the same way whatever the split, so threads never change a result.

Q_pk = y_p y_k K(x_p, x_k): the SMO's variables are columns of XT with a sign y each (for
epsilon-SVR each row appears twice, with y = +1 and -1: ``duals``; ``qrow``
then computes a row's kernel values once for both).

Every kernel here, in ``cache`` and in ``loop`` is compiled for its one
declared signature when its module is imported (``types``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers.warm_smo.types import B1, F4_1D, F8, F8_1D, F8_2D, I8, TWINS, VOID

KERNEL_CODE = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}

# (p, start, end, XT, y, sq, kp, out, off): a row of Q
_QFILL_ARGS = (I8, I8, I8, F8_2D, F8_1D, F8_1D, F8_1D, F4_1D, I8)
# a kernel row is split over threads when it costs at least this many (row x feature) terms
PARALLEL_MIN_WORK = 60_000


def threadsafe_layer() -> bool:
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


@nb.njit(VOID(F8_1D, I8, F8_1D), nogil=True, cache=True)
def exp_inplace(v: np.ndarray, m: int, tb: np.ndarray) -> None:
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


@nb.njit(VOID(F8_1D, I8, F8, F8_1D, F8_1D, F8_1D), nogil=True, cache=True)
def kernel_of_dots(v, m, sq_p, sq_k, kp, tb):
    """v[:m] (dot products of x_p with rows of squared norms sq_k[:m]) -> kernel values,
    in place."""
    code, gamma, coef0, degree = int(kp[0]), kp[1], kp[2], int(kp[3])
    if code == 2:
        for j in range(m):
            v[j] = -gamma * max(sq_p + sq_k[j] - 2.0 * v[j], 0.0)
        exp_inplace(v, m, tb)
    elif code == 1:
        for j in range(m):
            v[j] = (gamma * v[j] + coef0) ** degree
    elif code == 3:
        for j in range(m):
            v[j] = np.tanh(gamma * v[j] + coef0)


@nb.njit(VOID(*_QFILL_ARGS, F8_1D, F8_1D), nogil=True, cache=True)
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
    kernel_of_dots(buf, m, sq[p], sq[k0:k1], kp, tb)
    yp = y[p]
    yk = y[k0:k1]
    dst = out[off:off + m]
    for j in range(m):
        dst[j] = yp * yk[j] * buf[j]


@nb.njit(VOID(*_QFILL_ARGS), nogil=True, cache=True)
def _qfill_serial(p, start, end, XT, y, sq, kp, out, off):
    buf = np.empty(ROW_BLOCK)
    tb = np.empty(ROW_BLOCK)
    for k0 in range(start, end, ROW_BLOCK):
        _qfill_block(p, k0, min(k0 + ROW_BLOCK, end), XT, y, sq, kp, out,
                     off + k0 - start, buf, tb)


@nb.njit(VOID(*_QFILL_ARGS), nogil=True, cache=True, parallel=True)
def _qfill_parallel(p, start, end, XT, y, sq, kp, out, off):
    nblocks = (end - start + ROW_BLOCK - 1) // ROW_BLOCK
    for q in nb.prange(nblocks):
        buf = np.empty(ROW_BLOCK)
        tb = np.empty(ROW_BLOCK)
        k0 = start + q * ROW_BLOCK
        _qfill_block(p, k0, min(k0 + ROW_BLOCK, end), XT, y, sq, kp, out,
                     off + k0 - start, buf, tb)


@nb.njit(VOID(*_QFILL_ARGS, B1), nogil=True, cache=True)
def qfill(p, start, end, XT, y, sq, kp, out, off, par):
    """out[off + k - start] = Q_pk = y_p y_k K(x_p, x_k) for k in [start, end)."""
    if par and (end - start) * (XT.shape[0] + 8) >= PARALLEL_MIN_WORK:
        _qfill_parallel(p, start, end, XT, y, sq, kp, out, off)
    else:
        _qfill_serial(p, start, end, XT, y, sq, kp, out, off)


@nb.njit(I8(*_QFILL_ARGS, B1, TWINS), nogil=True, cache=True)
def qrow(p, start, end, XT, y, sq, kp, out, off, par, tw):
    """``qfill``, and for twinned variables the cheaper way; returns the kernel values
    computed.

    tw = (perm, XR, yr, sqr): with XR of l > 0 columns, variable v (at position k,
    v = perm[k]) is row v mod l of XR (epsilon-SVR's a_i and a*_i); a range longer than l
    then costs the l kernel values of x_p's row, signed per position (LIBSVM's
    ``SVR_Q::get_Q``); the same values as ``qfill`` computes. l = 0: ``qfill``.
    """
    perm, XR, yr, sqr = tw
    nreal = XR.shape[1]
    if end - start <= nreal or nreal == 0:
        qfill(p, start, end, XT, y, sq, kp, out, off, par)
        return end - start
    # float32 as the cache's rows (one compiled qfill): signing a rounded value by +-1 is
    # exact, so the values are those of qfill
    kr = np.empty(nreal, dtype=np.float32)
    qfill(perm[p] % nreal, 0, nreal, XR, yr, sqr, kp, kr, 0, par)
    yp = y[p]
    for k in range(start, end):
        v = perm[k]  # < 2 nreal: v mod nreal by a compare (an integer division a value
        # took most of a shrunk row's time)
        out[off + k - start] = yp * y[k] * kr[v - nreal if v >= nreal else v]
    return nreal


@nb.njit(nogil=True, cache=True, inline="always")
def _direct_row(v, XR, XC, a, distances):
    """v[c] = the squared distance (distances) or the dot product of XR[:, a] and XC[:, c],
    summed feature by feature."""
    nc = XC.shape[1]
    for c in range(nc):
        v[c] = 0.0
    for t in range(XC.shape[0]):
        xv = XR[t, a]
        row = XC[t]
        if distances:
            for c in range(nc):
                dlt = xv - row[c]
                v[c] += dlt * dlt
        else:
            for c in range(nc):
                v[c] += xv * row[c]


@nb.njit(F8(F8_1D, F8_1D), nogil=True, cache=True, fastmath={"reassoc"})
def _dot(v, w):
    """sum_c v[c] w[c], summed in this thread (reassociated so it vectorises). Not numpy's
    dot, which calls BLAS: from numba's threads a BLAS allowed more than one thread ran
    25x slower and took 35x the CPU (its threads wait on one another), and a per-row
    call pays BLAS's overhead."""
    total = 0.0
    for c in range(v.shape[0]):
        total += v[c] * w[c]
    return total


# (D, XR, XC, sq_r, sq_c, y_r, coefs, kp, out): a blocked kernel product
_EMPTY = np.empty((0, 0))
_ACCUMULATE_ARGS = (F8_2D, F8_2D, F8_2D, F8_1D, F8_1D, F8_1D, F8_2D, F8_1D, F8_2D)


@nb.njit(VOID(I8, I8, *_ACCUMULATE_ARGS), nogil=True, cache=True)
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
            _direct_row(v, XR, XC, a, True)
            for c in range(nc):
                v[c] = -gamma * v[c]
            exp_inplace(v, nc, tb)
        else:
            if direct:
                _direct_row(v, XR, XC, a, False)
            else:  # element by element: a slice copy compiles numba's broadcasting
                for c in range(nc):  # checks and their messages (+1.3 s on a first fit)
                    v[c] = D[a, c]
            kernel_of_dots(v, nc, sq_r[a], sq_c, kp, tb)
        for m in range(coefs.shape[0]):
            out[a, m] += y_r[a] * _dot(v, coefs[m])


def add_kernel_products(out: np.ndarray, rows: np.ndarray, XT: np.ndarray, y: np.ndarray,
                        sq: np.ndarray, cols: np.ndarray, coefs: np.ndarray,
                        kp: np.ndarray, threads: int = 1) -> None:
    """out[:, m] += y_r sum_c K(x_r, x_c) coefs[c, m] for r in rows: dot products by BLAS
    in row blocks (directly for at most DIRECT_MAX_FEATURES features), the kernel and the
    sums in one numba pass (which releases the GIL, as BLAS does: a block a thread).

    Args:
        out: (len(rows), m) float64, added to in place.
        rows, cols: column indices into XT.
        XT: (d, n) float64 (the rows as columns); y: (n,) signs; sq: (n,) squared norms.
        coefs: (len(cols), m) float64.
        kp: ``kernel_params``.
        threads: > 1: row blocks on that many threads (the products by BLAS, which
            should then be on one thread: ``warm_smo`` limits it), the same values as
            one thread.
    """
    if not len(rows) or not len(cols):
        return
    # row blocks of a fixed length whatever the threads (the same products, so the same
    # bytes); at least 4 per thread of a 2-thread split
    step = min(max(64, int(2**22 // len(cols))), max(64, -(-len(rows) // 8)))
    Xc = np.ascontiguousarray(XT[:, cols])
    sq_c = sq[cols]
    coefs = np.ascontiguousarray(np.asarray(coefs).T)
    direct = XT.shape[0] <= DIRECT_MAX_FEATURES
    # one product buffer a thread, reused by its blocks: a new one a block is a new mapping
    # whose pages are faulted in again (in a Dask worker, whose MALLOC_TRIM_THRESHOLD_ turns
    # every large allocation into its own mapping, that cost a warm re-solve of 15.9k rows
    # 38k page faults: 2.3-2.4 s instead of 2.0 s on two threads)
    own = threading.local()

    def block(a: int) -> None:
        r = rows[a:a + step]
        XR = np.ascontiguousarray(XT[:, r])
        D = _EMPTY
        if not direct:
            if getattr(own, "D", None) is None:
                own.D = np.empty((step, len(cols)))
            D = np.matmul(XR.T, Xc, out=own.D[:len(r)])
        _accumulate_rows(0, len(r), D, XR, Xc, sq[r], sq_c, y[r], coefs, kp,
                         out[a:a + step])

    starts = range(0, len(rows), step)
    with ThreadPoolExecutor(max(1, min(threads, len(starts)))) as pool:
        list(pool.map(block, starts))


def kernel_params(kernel: Kernel) -> np.ndarray:
    """The kernel as the float64 vector the numba code reads: (code, gamma, coef0, degree)."""
    return np.array([KERNEL_CODE[kernel.name], kernel.gamma, kernel.coef0, kernel.degree],
                    dtype=np.float64)


def kernel_diagonal(kernel: Kernel, sq: np.ndarray) -> np.ndarray:
    """K(x_i, x_i) for every column of XT, from its squared norms sq (a new array)."""
    k = kernel
    return {"linear": sq, "rbf": np.ones(len(sq)),
            "poly": (k.gamma * sq + k.coef0) ** int(k.degree),
            "sigmoid": np.tanh(k.gamma * sq + k.coef0)}[k.name].copy()
