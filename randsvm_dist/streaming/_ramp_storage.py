"""Storage of the kept points of an OnlineSVMR learner: slots, Gram cache rows, growth.

:class:`RampSlots` holds the arrays the compiled loops of ``_ramp_kernels`` work on (the
layout is described there) and the Python side of their life: allocation, growth,
compaction of dead slots, the rows of given slots, and the union of two learners' kept
points for a merge. The learner itself is :class:`randsvm_dist.streaming.ramp._RampBinary`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randsvm_dist.streaming import _ramp_kernels as rk


def _gather_index(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Positions of the CSR pieces (start, length) one after the other."""
    if not len(lens):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(a, a + b) for a, b in zip(starts, lens)])


class RampSlots:
    """The kept points of a binary ramp learner (base of ``_RampBinary``, which sets
    ``n_features``, ``sparse`` (None until the first batch), ``ipar``, ``fpar`` and
    ``cnt``)."""

    def _init_storage(self, sparse: bool, cap: int = 1024, cap_rows: int = 64) -> None:
        """Empty slots (dense rows or CSR pieces) for cap points and cap_rows Gram rows."""
        self.sparse = bool(sparse)
        self.ipar[rk.I_SPARSE] = int(sparse)
        d = self.n_features
        self.Xs = np.zeros((1, 1) if sparse else (cap, d), dtype=np.float32)
        self.s_start = np.zeros(cap if sparse else 1, dtype=np.int64)
        self.s_len = np.zeros(cap if sparse else 1, dtype=np.int32)
        self.s_ind = np.zeros(cap * 8 if sparse else 1, dtype=np.int32)
        self.s_val = np.zeros(cap * 8 if sparse else 1, dtype=np.float32)
        self.sqn = np.zeros(cap)
        self.qdiag = np.zeros(cap)
        self.y = np.zeros(cap)
        self.alpha = np.zeros(cap)
        self.cb = np.zeros(cap)  # per-point box: C x the row's weight
        self.g = np.zeros(cap)
        self.state = np.zeros(cap, dtype=np.int8)
        self.row_of = np.full(cap, -1, dtype=np.int64)
        self.G = np.zeros((cap_rows, cap), dtype=np.float32)
        self.owner = np.full(cap_rows, -1, dtype=np.int64)

    @property
    def _n(self) -> int:
        return int(self.cnt[rk.C_SLOTS])

    def _resize_slots(self, cap: int) -> None:
        """Room for cap slots (the live ones kept)."""
        n = self._n
        for name in ("sqn", "qdiag", "y", "alpha", "cb", "g", "state", "row_of"):
            old = getattr(self, name)
            new = np.full(cap, -1, dtype=old.dtype) if name == "row_of" else \
                np.zeros(cap, dtype=old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)
        if self.sparse:
            for name in ("s_start", "s_len"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[:n] = old[:n]
                setattr(self, name, new)
        else:
            Xs = np.zeros((cap, self.n_features), dtype=np.float32)
            Xs[:n] = self.Xs[:n]
            self.Xs = Xs
        G = np.zeros((self.G.shape[0], cap), dtype=np.float32)
        G[:, :n] = self.G[:, :n]
        self.G = G

    def _grow_rows(self, need: int | None = None) -> None:
        """Room for more Gram cache rows (x1.5 + 16, at least need)."""
        cap = max(int(self.G.shape[0] * 1.5) + 16, need or 0)
        G = np.zeros((cap, self.G.shape[1]), dtype=np.float32)
        G[:self.G.shape[0]] = self.G
        owner = np.full(cap, -1, dtype=np.int64)
        owner[:self.owner.shape[0]] = self.owner
        self.G, self.owner = G, owner

    def _compact(self) -> None:
        """Drop dead slots (removed non-SVs), renumbering rows, columns and sparse data."""
        n = self._n
        alive = np.flatnonzero(self.state[:n] != 0)
        na = len(alive)
        newidx = np.full(max(n, 1), -1, dtype=np.int64)
        newidx[alive] = np.arange(na)
        for name in ("sqn", "qdiag", "y", "alpha", "cb", "g", "state", "row_of"):
            arr = getattr(self, name)
            arr[:na] = arr[alive]
        if self.sparse:
            lens = self.s_len[alive].astype(np.int64)
            starts = self.s_start[alive]
            gather = _gather_index(starts, lens)
            self.s_ind[:len(gather)] = self.s_ind[gather]
            self.s_val[:len(gather)] = self.s_val[gather]
            self.s_len[:na] = lens
            self.s_start[:na] = np.concatenate([[0], np.cumsum(lens)[:-1]]) if na else []
            self.cnt[rk.C_NNZ] = len(gather)
        else:
            self.Xs[:na] = self.Xs[alive]
        used = self.owner >= 0
        self.G[used, :na] = self.G[used][:, alive]
        self.owner[used] = newidx[self.owner[used]]
        self.cnt[rk.C_SLOTS] = na
        self.cnt[rk.C_DEAD] = 0

    def _ensure_capacity(self, rows: int, nnz: int) -> None:
        """Room for rows more points of nnz stored values (compacting dead slots first when
        they are many)."""
        n, dead = self._n, int(self.cnt[rk.C_DEAD])
        if dead > max(64, n - dead) or (n + rows > self.alpha.shape[0] and dead >= rows):
            self._compact()
            n = self._n
        if n + rows > self.alpha.shape[0]:
            self._resize_slots(int((n + rows) * 1.25) + 64)
        if self.sparse:
            used = int(self.cnt[rk.C_NNZ])
            if used + nnz > self.s_ind.shape[0]:
                cap = int((used + nnz) * 1.5) + 64
                for name in ("s_ind", "s_val"):
                    old = getattr(self, name)
                    new = np.zeros(cap, dtype=old.dtype)
                    new[:used] = old[:used]
                    setattr(self, name, new)

    def _state_args(self):
        """The state arrays in the order of the compiled loops' arguments."""
        return (self.Xs, self.s_start, self.s_len, self.s_ind, self.s_val, self.sqn,
                self.qdiag, self.y, self.alpha, self.cb, self.g, self.state, self.row_of,
                self.G,
                self.owner, self.cnt, self.fpar, self.ipar)

    def _run(self, Xc, indptr, ind, val, yc, wc, queried, resume: bool) -> None:
        """The compiled stream loop over one chunk, growing the Gram rows when it asks."""
        pos = 0
        while True:
            status, pos = rk._ramp_stream(Xc, indptr, ind, val, yc, wc, pos, resume, queried,
                                          *self._state_args())
            if status == rk.ST_DONE:
                return
            self._grow_rows()
            resume = True

    def _refresh_args(self, fill: bool):
        """The arguments of ``_ramp_refresh`` (fill: compute missing Gram rows)."""
        return (self.Xs, self.s_start, self.s_len, self.s_ind, self.s_val, self.sqn, self.y,
                self.alpha, self.cb, self.g, self.state, self.row_of, self.G, self.owner, self.cnt,
                self.fpar, self.ipar, fill)

    def _alive(self) -> np.ndarray:
        """Slots of the kept points."""
        return np.flatnonzero(self.state[:self._n] != 0) if self.sparse is not None \
            else np.zeros(0, dtype=np.int64)

    def _rows(self, idx: np.ndarray):
        """Stored feature rows of slots idx (dense array or CSR)."""
        if not self.sparse:
            return self.Xs[idx].copy()
        lens = self.s_len[idx].astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(lens)])
        gather = _gather_index(self.s_start[idx], lens)
        return sp.csr_matrix((self.s_val[gather], self.s_ind[gather], indptr),
                             shape=(len(idx), self.n_features))


    def _take_union(self, keeps, shares) -> None:
        """Storage := the slots idx of each (learner, idx) of keeps, in order, with alpha
        scaled by the learner's share; every point kept outside V until the next refresh.
        """
        n = sum(len(i) for _, i in keeps)
        n_sv = sum(int(np.count_nonzero(p.alpha[i])) for p, i in keeps)
        self._init_storage(all(p.sparse for p, _ in keeps), cap=n + 64, cap_rows=n_sv + 16)
        Xk = [p._rows(i) for p, i in keeps]
        if self.sparse:
            Xall = sp.vstack(Xk, format="csr")
            nnz = Xall.nnz
            self.s_ind = np.zeros(nnz + 64, dtype=np.int32)
            self.s_val = np.zeros(nnz + 64, dtype=np.float32)
            self.s_ind[:nnz] = Xall.indices
            self.s_val[:nnz] = Xall.data
            self.s_start[:n] = Xall.indptr[:-1]
            self.s_len[:n] = np.diff(Xall.indptr)
            self.cnt[rk.C_NNZ] = nnz
        else:
            self.Xs[:n] = np.vstack([x.toarray() if sp.issparse(x) else x for x in Xk])
        o = 0
        for (p, i), share in zip(keeps, shares):
            sl = slice(o, o + len(i))
            self.sqn[sl] = p.sqn[i]
            self.qdiag[sl] = p.qdiag[i]
            self.y[sl] = p.y[i]
            self.alpha[sl] = share * p.alpha[i]
            self.cb[sl] = p.cb[i]
            self.state[sl] = 1
            o += len(i)
        self.cnt[rk.C_SLOTS] = n
