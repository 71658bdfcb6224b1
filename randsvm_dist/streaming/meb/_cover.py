"""The binary learner behind StreamSVM and Blurred Ball SVM: a cover of enclosing balls.

One object holds up to ``max_balls`` balls in the augmented space (see ``_balls``), a
lookahead buffer of ``lookahead`` points and, for kernels, a store of the kept points.
StreamSVM is the case ``max_balls=1, epsilon=0``; Blurred Ball SVM keeps several balls and
ignores points inside the union of the (1+epsilon)-expanded balls.

The buffer survives across ``partial_fit`` calls (results do not depend on how the stream
is cut into batches); prediction and merging use a *flushed copy* (the final
"enclose the remaining buffer" step of Algorithm 2), leaving the learner's state as is.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import scipy.sparse as sp

from randsvm_dist.numerics.kernels import Kernel, kernel_matrix, row_sq_norms
from randsvm_dist.streaming.base import gamma_moments, learner_gamma, readonly_rows
from randsvm_dist.streaming.meb._balls import (
    KERNEL_IDS,
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_NSTORE,
    ST_SIZE,
)
from randsvm_dist.streaming.meb._coreset import coreset_flush
from randsvm_dist.streaming.meb._dual import cross_gram, dual_flush, dual_pass
from randsvm_dist.streaming.meb._merge import CoverMerge
from randsvm_dist.streaming.meb._primal import primal_flush, primal_pass_csr, primal_pass_dense
from randsvm_dist.streaming.meb._types import compiled

DENSE_CHUNK_VALUES = 1 << 22  # values per densified chunk of sparse rows (kernel form)


class BallCover(CoverMerge):
    """Binary one-pass learner: a sequence of enclosing balls (the newest last).

    Args:
        n_features: feature count.
        C: l2-SVM cost (the augmented points carry C^-1/2 e_n).
        lookahead: buffer size L (1 = closed-form update).
        epsilon: points within (1+epsilon) x radius of some ball are skipped.
        max_balls: balls kept (1 = StreamSVM).
        kernel: 'linear', 'rbf', 'poly' or 'sigmoid'.
        gamma, degree, coef0: kernel parameters (LIBSVM meanings; gamma may be 'scale').
        fit_intercept: add the bias coordinate beta*y (beta = 1).
        dual: force the kernel (coefficient) form even for the linear kernel.
        coreset: Blurred Ball cover step: a new ball is the exact MEB of the core points
            of every live ball plus the buffer (kernel/store form, any kernel), instead
            of the MEB of the newest ball plus the buffer.
        normalize: scale every row to unit L2 norm (training and prediction), so that
            k(x, x) is constant for dot-product kernels, the condition under which the
            MEB of the augmented points is the l2-SVM (Tsang et al.).
    """

    def __init__(self, n_features: int, *, C: float, lookahead: int, epsilon: float,
                 max_balls: int, kernel: str, gamma, degree: int, coef0: float,
                 fit_intercept: bool, dual: bool | None = None, normalize: bool = False,
                 coreset: bool = False):
        self.n_features = int(n_features)
        self.C = float(C)
        self.L = int(lookahead)
        self.eps = float(epsilon)
        self.kmax = int(max_balls)
        self.kernel_name = kernel
        self.gamma_spec = gamma
        self.degree = int(degree)
        self.coef0 = float(coef0)
        self.beta = 1.0 if fit_intercept else 0.0
        self.coreset = bool(coreset)
        self.dual = (kernel != "linear") if dual is None else bool(dual)
        self.dual = self.dual or self.coreset
        self.normalize = bool(normalize)
        self.kernel: Kernel | None = None
        D, k = self.n_features, self.kmax
        self.st = np.zeros(ST_SIZE)
        self.bb = np.zeros(k)
        self.Q = np.zeros(k)
        self.ee = np.zeros(k)
        self.rr = np.zeros(k)
        self.BX = np.zeros((self.L, D))
        self.By = np.zeros(self.L)
        self.Bf = np.zeros(self.L)
        self.Bn = np.zeros(self.L)
        self.Biw = np.ones(self.L)  # 1 / weight of the buffered points
        if self.dual:
            cap = max(64, 4 * self.L)
            self.S = np.zeros((cap, D))
            self.Sn = np.zeros(cap)
            self.Siw = np.ones(cap)  # 1 / weight of the stored points
            self.A = np.zeros((k, cap))
            self.Ks = np.zeros((cap, cap) if self.coreset else (1, 1))
        else:
            self.W = np.zeros((k, D))

    # -- state helpers -----------------------------------------------------------------
    @property
    def invC(self) -> float:
        return 1.0 / self.C

    @property
    def n_balls(self) -> int:
        """Live balls in the cover."""
        return int(self.st[ST_NB])

    @property
    def n_core(self) -> int:
        """Core points, counted after enclosing the lookahead buffer: in the primal form
        the points that entered a centre with non-zero weight; in the kernel/store form
        the stored points some live ball uses."""
        if self.st[ST_NBUF] > 0:
            return self.flushed().n_core
        if not self.dual:
            return int(self.st[ST_NCORE])
        m = int(self.st[ST_NSTORE])
        return int((self.A[: self.n_balls, :m] != 0).any(axis=0).sum())

    def _resolve_kernel(self, X) -> None:
        if self.kernel is not None:
            return
        if self.kernel_name == "linear":
            self.kernel = Kernel("linear")
        else:
            g = learner_gamma(self.gamma_spec, X.shape[1], [gamma_moments(X)])
            self.kernel = Kernel(self.kernel_name, g, self.degree, self.coef0)

    def _kargs(self):
        k = self.kernel
        return (KERNEL_IDS[k.name], float(k.gamma), float(k.degree), float(k.coef0))

    def _compact_store(self) -> None:
        """Drop stored points that no live ball uses."""
        m = int(self.st[ST_NSTORE])
        used = np.flatnonzero((self.A[: self.n_balls, :m] != 0).any(axis=0))
        k = len(used)
        if k == m:
            return
        self.S[:k] = self.S[used]
        self.Sn[:k] = self.Sn[used]
        self.Siw[:k] = self.Siw[used]
        self.A[:, :k] = self.A[:, used]
        self.A[:, k:] = 0.0
        if self.coreset:
            self.Ks[:k, :k] = self.Ks[np.ix_(used, used)]
        self.st[ST_NSTORE] = k

    def _grow_store(self) -> None:
        self._compact_store()
        if self.st[ST_NSTORE] + self.L <= self.S.shape[0] // 2:
            return
        cap = self.S.shape[0]
        new = 2 * cap
        S = np.zeros((new, self.n_features))
        S[:cap] = self.S
        Sn = np.zeros(new)
        Sn[:cap] = self.Sn
        Siw = np.ones(new)
        Siw[:cap] = self.Siw
        A = np.zeros((self.kmax, new))
        A[:, :cap] = self.A
        self.S, self.Sn, self.Siw, self.A = S, Sn, Siw, A
        if self.coreset:
            Ks = np.zeros((new, new))
            Ks[:cap, :cap] = self.Ks
            self.Ks = Ks

    def _prep(self, X):
        """Rows scaled to unit L2 norm when normalize is on (zero rows stay zero)."""
        if not self.normalize:
            return X
        n = np.sqrt(row_sq_norms(X))
        inv = np.where(n > 0, 1.0 / np.maximum(n, 1e-30), 0.0).astype(np.float32)
        if sp.issparse(X):
            return sp.csr_matrix(sp.diags(inv) @ X, dtype=np.float32)
        return np.ascontiguousarray(X * inv[:, None], dtype=np.float32)

    # -- learning --------------------------------------------------------------------------
    def partial_fit(self, X, y, sample_weight=None) -> BallCover:
        """Fold rows into the cover (X validated float32 dense/CSR, y in {-1, +1}); a row of
        weight w has slack cost C w (its augmented e part is (C w)^-1/2)."""
        self.restore_working()
        y = readonly_rows(np.ascontiguousarray(y, dtype=np.float64))
        iw = np.ones(X.shape[0]) if sample_weight is None else \
            np.ascontiguousarray(1.0 / np.asarray(sample_weight, dtype=np.float64))
        iw = readonly_rows(iw)
        if not self.dual:
            self._primal_fit(X, y, iw)
            return self
        X = self._prep(X)
        self._resolve_kernel(X)
        step = max(1, DENSE_CHUNK_VALUES // max(1, self.n_features))
        for s in range(0, X.shape[0], step):
            Xc = X[s:s + step]
            Xc = readonly_rows(np.ascontiguousarray(Xc.toarray() if sp.issparse(Xc) else Xc,
                                                    dtype=np.float32))
            self._dual_fit(Xc, y[s:s + step], iw[s:s + step])
        return self

    def _dual_fit(self, X: np.ndarray, y: np.ndarray, iw: np.ndarray) -> None:
        """partial_fit's kernel form on read-only float32 rows: the compiled pass returns
        when the buffer fills (to have it enclosed) or the store may not hold the next
        flush (to have it grown)."""
        r = 0
        while r < X.shape[0]:
            r = compiled(dual_pass)(X, y, iw, r, self.A, self.bb, self.Q, self.ee, self.rr,
                                    self.st, self.S, self.Sn, self.Siw, self.Ks, self.BX,
                                    self.By, self.Bf, self.Bn, self.Biw, self.kmax, self.L,
                                    self.eps, self.beta, self.invC, *self._kargs(),
                                    self.coreset, np.empty(self.S.shape[0]),
                                    np.empty(self.kmax), np.empty((self.kmax, self.n_features)))
            if self.st[ST_NBUF] >= self.L:
                self._enclose_buffer()
            elif r < X.shape[0]:
                self._grow_store()

    def _primal_fit(self, X, y: np.ndarray, iw: np.ndarray) -> None:
        """partial_fit's primal form (float32 rows, C order; CSR with int64 indptr and
        int32 indices): the compiled pass normalises rows on the fly and returns whenever
        the buffer fills, to have it enclosed."""
        self._resolve_kernel(X)
        state = (self.W, self.bb, self.Q, self.ee, self.rr, self.st, self.BX, self.By,
                 self.Bf, self.Biw, self.kmax, self.L, self.eps, self.beta, self.invC,
                 self.normalize, np.empty(self.kmax), np.empty(self.n_features))
        if sp.issparse(X):
            rows = (readonly_rows(X.indptr.astype(np.int64, copy=False)),
                    readonly_rows(X.indices.astype(np.int32, copy=False)),
                    readonly_rows(X.data.astype(np.float32, copy=False)))
            step = compiled(primal_pass_csr)
        else:
            rows = (readonly_rows(np.ascontiguousarray(X, dtype=np.float32)),)
            step = compiled(primal_pass_dense)
        r, n = 0, X.shape[0]
        while r < n:
            r = step(*rows, y, iw, r, *state)
            if self.st[ST_NBUF] >= self.L:
                self._enclose_buffer()

    def _enclose_buffer(self) -> None:
        """Enclose the buffered points (a full buffer, or the rest at the end): the step of
        this cover's form; in the kernel form the store must have room for the buffer."""
        balls = (self.bb, self.Q, self.ee, self.rr, self.st)
        if not self.dual:
            compiled(primal_flush)(self.W, *balls, self.BX, self.By, self.Bf, self.Biw,
                                   self.kmax, self.eps, self.beta, self.invC)
        elif self.coreset:
            compiled(coreset_flush)(self.A, *balls, self.S, self.Sn, self.Siw, self.Ks, self.BX,
                                    self.By, self.Bn, self.Biw, self.kmax, self.eps, self.beta,
                                    self.invC, *self._kargs(), False)
        else:
            compiled(dual_flush)(self.A, *balls, self.S, self.Sn, self.Siw, self.BX, self.By,
                                 self.Bf, self.Bn, self.Biw, self.kmax, self.eps, self.beta,
                                 self.invC, *self._kargs())

    def flushed(self) -> BallCover:
        """A copy with the lookahead buffer enclosed (Algorithm 2's final step)."""
        out = copy.deepcopy(self)
        if out.st[ST_NBUF] == 0:
            return out
        out.restore_working()
        while out.dual and out.st[ST_NSTORE] + out.L > out.S.shape[0]:
            out._grow_store()
        out._enclose_buffer()
        return out

    # -- what a fitted cover keeps -------------------------------------------------------
    def compact(self) -> None:
        """Keep only what prediction (and the flush it does first) needs: the stored points
        some live ball uses, the buffered points, the balls. Dropped: the store's spare
        capacity, the buffer's, and the core-set kernel matrix of the store (``Ks``: m x m
        float64, 128 MB at m = 4,000), all rebuilt by :meth:`restore_working` when learning
        goes on. Learning, prediction and merging give the same results either way."""
        if getattr(self, "compacted", False):
            return
        if self.dual:
            self._compact_store()
            m = int(self.st[ST_NSTORE])
            self.S, self.Sn, self.Siw = (self.S[:m].copy(), self.Sn[:m].copy(),
                                         self.Siw[:m].copy())
            self.A = self.A[:, :m].copy()
            if self.coreset:
                self.Ks = np.zeros((0, 0))
        nbuf = int(self.st[ST_NBUF])
        for name in ("BX", "By", "Bf", "Bn", "Biw"):
            setattr(self, name, getattr(self, name)[:nbuf].copy())
        self.compacted = True

    def restore_working(self) -> None:
        """Undo :meth:`compact`: the working capacity and the core-set kernel matrix
        (recomputed from the stored points); nothing when not compacted."""
        if not getattr(self, "compacted", False):
            return
        L = self.L

        def grown(a: np.ndarray, rows: int, fill: float = 0.0) -> np.ndarray:
            out = np.full((rows, *a.shape[1:]), fill)
            out[:len(a)] = a
            return out

        self.BX, self.By, self.Bf, self.Bn = (grown(getattr(self, n), L)
                                              for n in ("BX", "By", "Bf", "Bn"))
        self.Biw = grown(self.Biw, L, 1.0)
        if self.dual:
            m = int(self.st[ST_NSTORE])
            cap = max(64, 4 * L)
            while m + L > cap // 2:
                cap *= 2
            self.S, self.Sn = grown(self.S, cap), grown(self.Sn, cap)
            self.Siw = grown(self.Siw, cap, 1.0)
            A = np.zeros((self.kmax, cap))
            A[:, :m] = self.A[:, :m]
            self.A = A
            if self.coreset:
                self.Ks = np.zeros((cap, cap))
                if m:
                    self.Ks[:m, :m] = compiled(cross_gram)(self.S[:m], self.Sn[:m],
                                                           self.S[:m], self.Sn[:m],
                                                           *self._kargs())
        self.compacted = False

    # -- geometry / prediction ---------------------------------------------------------
    def ball_scores(self, X) -> np.ndarray:
        """f_i(x) = w_i.x + beta b_i for every live ball: (n_rows, n_balls) float64."""
        X = self._prep(X)
        nb = self.n_balls
        if not self.dual:
            out = np.asarray(X @ self.W[:nb].T, dtype=np.float64)
        else:
            m = int(self.st[ST_NSTORE])
            out = np.empty((X.shape[0], nb))
            S = self.S[:m].astype(np.float32)
            for s in range(0, X.shape[0], 4096):
                K = kernel_matrix(X[s:s + 4096], S, self.kernel).astype(np.float64)
                out[s:s + 4096] = K @ self.A[:nb, :m].T
        return out + self.beta * self.bb[:nb]

    def kernel_diag(self, X) -> np.ndarray:
        """k(x, x) for each row (float64)."""
        xx = row_sq_norms(self._prep(X)).astype(np.float64)
        k = self.kernel
        if k is None or k.name == "linear":
            return xx
        if k.name == "rbf":
            return np.ones_like(xx)
        if k.name == "poly":
            return (k.gamma * xx + k.coef0) ** k.degree
        return np.tanh(k.gamma * xx + k.coef0)

    def sq_distances(self, X, y) -> np.ndarray:
        """Squared augmented distances of NEW points (X, y) to every live ball's centre.

        y: (n_rows,) labels, or (n_rows, n_balls) one label per ball.
        """
        f = self.ball_scores(X)
        nb = self.n_balls
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y[:, None]
        kxx = self.kernel_diag(X)[:, None]
        return (self.Q[:nb] - 2.0 * y * f + kxx + self.beta ** 2 + self.ee[:nb]
                + self.invC)

    def center_dot(self, other: BallCover, i: int, j: int) -> float:
        """Feature part of c_i(self) . c_j(other) (e parts of disjoint streams are 0)."""
        if not self.dual:
            fe = float(self.W[i] @ other.W[j])
        else:
            ma, mb = int(self.st[ST_NSTORE]), int(other.st[ST_NSTORE])
            K = compiled(cross_gram)(self.S[:ma], self.Sn[:ma], other.S[:mb], other.Sn[:mb],
                             *self._kargs())
            fe = float(self.A[i, :ma] @ K @ other.A[j, :mb])
        return fe + self.bb[i] * other.bb[j]

    # -- introspection -----------------------------------------------------------------
    def radius(self, i: int = -1) -> float:
        """Radius of ball i (default: the newest, largest one)."""
        nb = self.n_balls
        return float(self.rr[i % nb]) if nb else math.nan
