"""Merging two ball covers (StreamSVM / Blurred Ball SVM trained on disjoint streams).

``CoverMerge`` is the merge half of ``_cover.BallCover``, kept apart for size: its
methods work on BallCover's state (balls, store, kernel arguments) and return new covers;
``BallCover`` inherits them.
"""

from __future__ import annotations

import copy

import numpy as np

from randsvm_dist.streaming.meb._balls import (
    ST_NB,
    ST_NBUF,
    ST_NCORE,
    ST_NSTORE,
    ST_STARTED,
    discard_small,
)
from randsvm_dist.streaming.meb._coreset import coreset_flush
from randsvm_dist.streaming.meb._dual import cross_gram
from randsvm_dist.streaming.meb._solver import meb_of_balls
from randsvm_dist.streaming.meb._types import compiled


class CoverMerge:
    """The merge of two covers; mixed into ``BallCover``, whose state it reads."""

    # -- combination -------------------------------------------------------------------
    def merge(self, other: CoverMerge) -> CoverMerge:
        """Cover of the union of two disjoint streams (inputs unchanged).

        The newest balls of the two are enclosed by their closed-form enclosing ball,
        which becomes the newest ball; the other balls of both covers are kept (by
        radius) up to max_balls.
        """
        a, b = self.flushed(), other.flushed()
        a.restore_working()
        b.restore_working()
        if a.n_balls == 0:
            return b
        if b.n_balls == 0:
            return a
        if a.dual != b.dual or a.coreset != b.coreset:
            raise ValueError("cannot merge ball covers of different forms")
        if a.coreset:
            return a._merge_coresets(b)
        ia, ib = a.n_balls - 1, b.n_balls - 1
        cross = a.center_dot(b, ia, ib)
        G = np.array([[a.Q[ia] + a.ee[ia], cross], [cross, b.Q[ib] + b.ee[ib]]])
        mu, R = meb_of_balls(G, np.array([a.rr[ia], b.rr[ib]]), np.zeros(2))
        t = float(mu[1])
        ma = int(a.st[ST_NSTORE]) if a.dual else 0
        mb = int(b.st[ST_NSTORE]) if b.dual else 0
        out = a._merged_shell(b, ma, mb)
        entries = self._merge_order(a, b)
        for slot, (src, i) in enumerate(entries):
            if src == "new":
                terms = ((1 - t, a, ia, 0), (t, b, ib, ma))
                out.rr[slot] = R
                out.ee[slot] = (1 - t) ** 2 * a.ee[ia] + t ** 2 * b.ee[ib]
                out.Q[slot] = ((1 - t) ** 2 * a.Q[ia] + 2 * t * (1 - t) * cross
                               + t ** 2 * b.Q[ib])
            else:
                cov, off = (a, 0) if src == "a" else (b, ma)
                terms = ((1.0, cov, i, off),)
                out.rr[slot], out.ee[slot], out.Q[slot] = cov.rr[i], cov.ee[i], cov.Q[i]
            out._add_centres(slot, terms)
            if src == "new" and not a.dual:
                out.Q[slot] = float(out.W[slot] @ out.W[slot]) + out.bb[slot] ** 2
        out.st[ST_NBUF] = 0
        out.st[ST_NCORE] = a.st[ST_NCORE] + b.st[ST_NCORE]
        out.st[ST_NSTORE] = ma + mb
        out.st[ST_STARTED] = 1
        out.st[ST_NB] = compiled(discard_small)(out.A if out.dual else out.W, out.bb, out.Q, out.ee,
                                      out.rr, len(entries), self.eps)
        return out

    def _merge_order(self, a: CoverMerge, b: CoverMerge) -> list[tuple[str, int]]:
        """The balls of a merge, oldest first: ("a" | "b", index) by radius, then the
        enclosing ball ("new", -1); the last max_balls of them."""
        entries = [("a", i) for i in range(a.n_balls)] + [("b", i) for i in range(b.n_balls)]
        entries.sort(key=lambda e: (a if e[0] == "a" else b).rr[e[1]])
        entries.append(("new", -1))
        return entries[-self.kmax:]

    def _merged_shell(self, b: CoverMerge, ma: int, mb: int) -> CoverMerge:
        """A copy of self with zeroed balls and, in the kernel form, the two stores
        joined (self's first) under zeroed coefficient rows."""
        out = copy.deepcopy(self)
        k = self.kmax
        out.bb, out.Q, out.ee, out.rr = np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k)
        if self.dual:
            out._join_stores(self, b, ma, mb)
            out.A = np.zeros((k, out.S.shape[0]))
        else:
            out.W = np.zeros((k, self.n_features))
        return out

    def _join_stores(self, a: CoverMerge, b: CoverMerge, ma: int, mb: int) -> None:
        """This cover's store := a's first ma points then b's first mb, with room for
        four buffers more."""
        cap = max(64, ma + mb + 4 * self.L)
        self.S = np.zeros((cap, self.n_features))
        self.S[:ma], self.S[ma:ma + mb] = a.S[:ma], b.S[:mb]
        self.Sn = np.zeros(cap)
        self.Sn[:ma], self.Sn[ma:ma + mb] = a.Sn[:ma], b.Sn[:mb]
        self.Siw = np.ones(cap)
        self.Siw[:ma], self.Siw[ma:ma + mb] = a.Siw[:ma], b.Siw[:mb]

    def _add_centres(self, slot: int, terms) -> None:
        """Ball ``slot`` += coef x ball i of cov for each (coef, cov, i, store offset)."""
        for coef, cov, i, off in terms:
            self.bb[slot] += coef * cov.bb[i]
            if cov.dual:
                m = int(cov.st[ST_NSTORE])
                self.A[slot, off:off + m] += coef * cov.A[i, :m]
            else:
                self.W[slot] += coef * cov.W[i]

    def _merge_coresets(self, b: CoverMerge) -> CoverMerge:
        """Union of two core-set covers (disjoint streams) plus one new ball: the exact
        MEB of all their core points; then the usual discards (radius, max_balls)."""
        a = self
        out = copy.deepcopy(a)
        ma, mb = int(a.st[ST_NSTORE]), int(b.st[ST_NSTORE])
        k = self.kmax
        out._join_stores(a, b, ma, mb)
        cap = out.S.shape[0]
        out.Ks = np.zeros((cap, cap))
        out.Ks[:ma, :ma] = a.Ks[:ma, :ma]
        out.Ks[ma:ma + mb, ma:ma + mb] = b.Ks[:mb, :mb]
        cross = compiled(cross_gram)(a.S[:ma], a.Sn[:ma], b.S[:mb], b.Sn[:mb], *self._kargs())
        out.Ks[:ma, ma:ma + mb] = cross
        out.Ks[ma:ma + mb, :ma] = cross.T
        nbl = out._union_balls(a, b, ma, mb)
        out.st[ST_NB] = nbl
        out.st[ST_NBUF] = 0
        out.st[ST_NSTORE] = ma + mb
        out.st[ST_NCORE] = a.st[ST_NCORE] + b.st[ST_NCORE]
        compiled(coreset_flush)(out.A, out.bb, out.Q, out.ee, out.rr, out.st, out.S, out.Sn,
                                out.Siw, out.Ks, out.BX, out.By, out.Bn, out.Biw, k + 1, 0.0,
                                out.beta, out.invC, *out._kargs(), True)
        # drop the placeholder (index nbl - 1); the new ball is at nbl
        idx = [i for i in range(nbl + 1) if i != nbl - 1]
        out.A = np.ascontiguousarray(out.A[idx][:k])
        for name in ("bb", "Q", "ee", "rr"):
            setattr(out, name, np.ascontiguousarray(getattr(out, name)[idx][:k]))
        out.st[ST_NB] = compiled(discard_small)(out.A, out.bb, out.Q, out.ee, out.rr, nbl, out.eps)
        out._compact_store()
        return out

    def _union_balls(self, a: CoverMerge, b: CoverMerge, ma: int, mb: int) -> int:
        """Balls (and room for one more) of a core-set merge over the joined store: the
        largest max_balls - 1 of a's and b's, then a placeholder whose core points are
        every ball's (they all take part in the new ball, kept or not).

        Returns:
            the number of balls, placeholder included.
        """
        na, nb, k, cap = a.n_balls, b.n_balls, self.kmax, self.S.shape[0]
        rows = np.zeros((na + nb + 1, cap))
        rows[:na, :ma] = a.A[:na, :ma]
        rows[na:na + nb, ma:ma + mb] = b.A[:nb, :mb]
        scal = {name: np.r_[getattr(a, name)[:na], getattr(b, name)[:nb], 0.0]
                for name in ("bb", "Q", "ee", "rr")}
        order = np.argsort(scal["rr"][:-1], kind="stable")
        sel = [int(i) for i in (order[-(k - 1):] if k > 1 else order[:0])]
        every = np.zeros(cap)
        every[: ma + mb] = np.abs(rows[: na + nb, : ma + mb]).max(axis=0) * np.sign(
            rows[: na + nb, : ma + mb].sum(axis=0))
        self.A = np.zeros((k + 1, cap))
        self.A[: len(sel)] = rows[sel]
        self.A[len(sel)] = every
        for name in ("bb", "Q", "ee", "rr"):
            arr = np.zeros(k + 1)
            arr[: len(sel)] = scal[name][sel]
            setattr(self, name, arr)
        return len(sel) + 1
