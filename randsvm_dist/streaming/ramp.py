"""OnlineSVMR and OnlineASVMR: online ramp-loss kernel SVM (Wang and Vucetic).

The model is a zero-bias kernel SVM ``f(x) = sum_i alpha_i y_i k(x_i, x)`` trained on the
ramp loss ``R_s(z) = min(1 - s, max(0, 1 - z))`` (``z = y f(x)``, ``s < 1``; the paper uses
s = -1) with the regularized objective ``||w||^2 / 2 + C sum_i R_s(y_i f(x_i))``.

Optimization (derived from the dual and the KKT conditions, because the printed equations of
the paper are garbled in our copy):

* **CCCP / majorize-minimize.** With ``V = {i : y_i f_old(x_i) >= s}`` (eq. 10), the convex
  function ``||w||^2/2 + C sum_{i in V} H_1(y_i f(x_i)) + C (1 - s) |I \\ V|`` is an upper
  bound of the ramp objective that touches it at ``w_old`` (``R_s <= H_1`` and
  ``R_s <= 1 - s`` everywhere, with equality on V resp. outside V), so minimizing it
  (= a hinge-loss SVM on V only, eq. 11, alpha = 0 outside V) never increases the ramp
  objective. A fixed point has (with ``g_i = 1 - y_i f(x_i)``, the dual gradient, eq. 3):
  for i in V (``g_i <= 1 - s``): ``alpha_i = 0 => g_i <= 0``, ``0 < alpha_i < C => g_i = 0``,
  ``alpha_i = C => g_i >= 0``; for i outside V (``g_i > 1 - s``): ``alpha_i = 0``.
  This is what :func:`_RampBinary.kkt_violation` checks and what the tests check
  independently from a Gram matrix.
* **SMO steps (eqs. 12-15).** Without the bias the dual has no equality constraint, so one
  variable is optimal alone: ``max_d g_j d - Q_jj d^2 / 2`` over ``0 <= alpha_j + d <= C``
  gives ``alpha_j <- clip(alpha_j + g_j / Q_jj, 0, C)`` (eq. 14), dual gain
  ``g_j d - Q_jj d^2 / 2`` (eq. 13: the working set is the violator of largest gain), and
  ``g_k <- g_k - d y_j y_k k(x_j, x_k)`` for every kept k (eq. 15). Decremental unlearning
  of a point leaving V is the step ``d = -alpha_j``. Stopping: every KKT violation below
  ``tol`` (1e-3) or the best dual gain below ``gain_tol`` (1e-5); note that the gain rule
  stops at violations up to about ``sqrt(2 gain_tol Q_jj)`` (0.0045 for RBF).
* **Removal step (Algorithm 2).** With ``max_non_sv = m`` only the m non-SVs with the
  smallest ``|1 - g_i| = |f(x_i)|`` are kept after each example.
* **OnlineASVMR (Algorithm 3, ``active=True``).** The label of a row is *queried* only when
  the row lies in the ramp region for one of the two labels: ``f(x) in [s, 1]`` or
  ``-f(x) in [s, 1]`` (``|f(x)| <= 1`` for s = -1, as in the paper). ``partial_fit`` still
  receives a label for every row, but uses (and counts) only the queried ones; the other
  rows are dropped as if their label had never been asked for.

Implementation: SMO runs with LIBSVM-style shrinking (non-SVs of V with g < -0.5 are left
out of the steps and their gradients rebuilt from the net alpha changes; the stopping rules
are still checked on all of V), and the Gram cache keeps one float32 row per SV over every
kept point (rows of points whose alpha returns to 0 are dropped after each example), so a
step costs O(|kept|) flops and no kernel evaluation once the row exists.

Departures from the paper: weights (``sample_weight`` x ``class_weight``, absent from the
paper) are per-point boxes ``0 <= alpha_i <= C w_i``, i.e. the ramp loss of row i counted
w_i times (``kept()["C"]``, checked by :meth:`_RampBinary.kkt_violation`). The #SV against
LIBSVM on the 10%-noise checkerboard is 0.25-0.26 of LIBSVM's (benchmarks/README.md), not
the paper's ~0.12 (its Table: 554 vs 4,679 at 15% noise): raising ``s`` towards 0 removes
more SVs (0.18 at s=-0.5) but costs 10 points there, and the removal step (m=100) changes
little, so the defaults stay the paper's (s=-1, every point kept). ``MAX_OUTER`` caps the
CCCP relocation loop per example (counted in
``cccp_cap_hits``; never reached in our runs). The Gram cache is float32 (the algorithm then
solves exactly the problem with the float32-rounded kernel, off by ~1e-7 relative).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.validation import (
    check_choice,
    check_flag,
    check_int,
    check_positive,
)
from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.numerics.kernels import KERNELS, Kernel, decision_values
from randsvm_dist.streaming import _ramp_kernels as rk
from randsvm_dist.streaming._ramp_storage import RampSlots
from randsvm_dist.streaming.base import (
    StreamingClassifier,
    gamma_moments,
    learner_gamma,
    readonly_rows,
)

CHUNK = 256
MAX_OUTER = 1000


class _RampBinary(RampSlots):
    """One binary OnlineSVMR learner (labels +1/-1) with its kept points and Gram cache.

    Args:
        kernel: resolved :class:`~randsvm_dist.numerics.kernels.Kernel`.
        C: box bound (> 0).
        s: ramp parameter (< 1).
        max_non_sv: m of the removal step, or None to keep every point.
        active: OnlineASVMR (query only labels of rows in the ramp region).
        tol, gain_tol: the two stopping rules.
        n_features: feature count.
    """

    def __init__(self, kernel: Kernel, C: float, s: float, max_non_sv: int | None,
                 active: bool, tol: float, gain_tol: float, n_features: int):
        self.kernel = kernel
        self.C, self.s = float(C), float(s)
        self.max_non_sv = max_non_sv
        self.active = bool(active)
        self.tol, self.gain_tol = float(tol), float(gain_tol)
        self.n_features = int(n_features)
        self.sparse: bool | None = None
        self.n_seen = 0
        self.n_queried = 0
        self.last_query_mask = np.zeros(0, dtype=bool)
        self._sv_cache = None
        self.fpar = np.zeros(rk.N_FPAR)
        self.fpar[rk.F_GAMMA] = kernel.gamma
        self.fpar[rk.F_COEF0] = kernel.coef0
        self.fpar[rk.F_DEGREE] = kernel.degree
        self.fpar[rk.F_C] = self.C
        self.fpar[rk.F_THR] = 1.0 - self.s
        self.fpar[rk.F_TOL] = self.tol
        self.fpar[rk.F_GAIN] = self.gain_tol
        self.fpar[rk.F_S] = self.s
        self.ipar = np.zeros(rk.N_IPAR, dtype=np.int64)
        self.ipar[rk.I_KIND] = rk.KIND_CODES[kernel.name]
        self.ipar[rk.I_MAXNONSV] = -1 if max_non_sv is None else int(max_non_sv)
        self.ipar[rk.I_ACTIVE] = int(self.active)
        self.ipar[rk.I_MAXOUTER] = MAX_OUTER
        self.cnt = np.zeros(rk.N_CNT, dtype=np.int64)

    # -- learner protocol ------------------------------------------------------------------
    def partial_fit(self, X, y: np.ndarray, sample_weight=None) -> _RampBinary:
        """Learn from rows of X (float32 dense or CSR) with labels y (+1/-1), in order;
        a row of weight w gets the box ``0 <= alpha <= C w`` (its ramp loss counts w times).

        Returns:
            self. ``last_query_mask`` tells which rows' labels were used.
        """
        if self.sparse is None:
            self._init_storage(sp.issparse(X))
        if self.sparse and not sp.issparse(X):
            X = sp.csr_matrix(X)
        elif not self.sparse:
            X = readonly_rows(np.ascontiguousarray(
                X.toarray() if sp.issparse(X) else X, dtype=np.float32))
        y = np.ascontiguousarray(y, dtype=np.float64)
        n = X.shape[0]
        w = np.ones(n) if sample_weight is None else \
            np.ascontiguousarray(sample_weight, dtype=np.float64)
        mask = np.zeros(n, dtype=bool)
        dummy2 = readonly_rows(np.zeros((1, 1), dtype=np.float32))
        for a in range(0, n, CHUNK):
            b = min(n, a + CHUNK)
            if self.sparse:
                Xc = X[a:b]
                self._ensure_capacity(b - a, Xc.nnz)
                self._run(dummy2, Xc.indptr.astype(np.int64), Xc.indices.astype(np.int32),
                          Xc.data.astype(np.float32), y[a:b], w[a:b], mask[a:b], False)
            else:
                self._ensure_capacity(b - a, 0)
                empty = np.zeros(1, dtype=np.int64)
                self._run(X[a:b], empty, empty.astype(np.int32), np.zeros(1, np.float32),
                          y[a:b], w[a:b], mask[a:b], False)
        rk._ramp_refresh(*self._refresh_args(False))
        self.n_seen += n
        self.n_queried += int(mask.sum())
        self.last_query_mask = mask
        self._sv_cache = None
        return self

    def support(self):
        """(support vectors, coef = alpha * y) of the current model."""
        if self._sv_cache is None:
            idx = self._alive()
            idx = idx[self.alpha[idx] != 0]
            self._sv_cache = (self._rows(idx), self.alpha[idx] * self.y[idx])
        return self._sv_cache

    def kept(self) -> dict:
        """Every kept point: ``X``, ``y``, ``alpha``, ``g`` (= 1 - y f), ``in_v`` and its
        box ``C`` (C x weight)."""
        idx = self._alive()
        return {"X": self._rows(idx), "y": self.y[idx].copy(), "alpha": self.alpha[idx].copy(),
                "g": self.g[idx].copy(), "in_v": self.state[idx] == 2,
                "C": self.cb[idx].copy()}

    def kkt_violation(self) -> float:
        """Largest violation of the ramp-loss KKT conditions over the kept points, from the
        maintained gradients (see the module docstring)."""
        k = self.kept()
        a, g, C, thr = k["alpha"], k["g"], k["C"], 1.0 - self.s
        inside = g <= thr
        viol = np.zeros_like(g)
        viol = np.where(inside & (a < C), np.maximum(g, 0), viol)
        viol = np.maximum(viol, np.where(inside & (a > 0), np.maximum(-g, 0), 0))
        viol = np.maximum(viol, np.where(~inside & (a > 0), g - thr, 0))
        return float(viol.max()) if len(viol) else 0.0

    def decision_function(self, X) -> np.ndarray:
        """f(x) for the rows of X (float64)."""
        if self.sparse is None:
            return np.zeros(X.shape[0])
        sv, coef = self.support()
        if len(coef) == 0:
            return np.zeros(X.shape[0])
        if sp.issparse(sv) != sp.issparse(X):
            sv = sv.toarray() if sp.issparse(sv) else sp.csr_matrix(sv)
        return decision_values(X, sv, coef, 0.0, self.kernel)

    @property
    def n_support(self) -> int:
        """Number of support vectors (alpha != 0)."""
        idx = self._alive()
        return int(np.count_nonzero(self.alpha[idx]))

    @property
    def n_core(self) -> int:
        """Model size: the support vectors (the kept non-SVs are training state only)."""
        return self.n_support

    @property
    def n_kept(self) -> int:
        """Points kept for training (SVs and non-SVs)."""
        return len(self._alive())

    @property
    def kernel_evals(self) -> int:
        """Kernel evaluations spent in training (the paper's cost measure)."""
        return int(self.cnt[rk.C_KEVALS])

    @property
    def smo_steps(self) -> int:
        """Single-variable SMO steps taken."""
        return int(self.cnt[rk.C_SMO])

    @property
    def cccp_cap_hits(self) -> int:
        """Examples whose CCCP loop hit ``MAX_OUTER`` relocations."""
        return int(self.cnt[rk.C_CAPHIT])

    def _same_setup(self, other: _RampBinary) -> None:
        mine = (self.kernel, self.C, self.s, self.max_non_sv, self.active)
        theirs = (other.kernel, other.C, other.s, other.max_non_sv, other.active)
        if mine != theirs:
            raise ParameterError(
                f"cannot merge OnlineRampSVM learners with different settings {mine} and "
                f"{theirs} (with gamma='scale' each learner resolves gamma from its own first "
                "batch: pass a number)")

    def merge(self, other: _RampBinary) -> _RampBinary:
        """Unite the kept points of both learners and continue CCCP/SMO over them.

        The warm start is the row-share-weighted average of the two models
        (``alpha <- n_a/(n_a+n_b) alpha_a`` and ``n_b/(n_a+n_b) alpha_b``); the CCCP/SMO
        steps then restore the KKT conditions on the union, followed by the removal step.

        Returns:
            a new learner (inputs unchanged).

        Raises:
            ParameterError: different kernels or settings.
        """
        self._same_setup(other)
        out = _RampBinary(self.kernel, self.C, self.s, self.max_non_sv, self.active, self.tol,
                          self.gain_tol, self.n_features)
        parts = [p for p in (self, other) if p.sparse is not None]
        out.n_seen = self.n_seen + other.n_seen
        out.n_queried = self.n_queried + other.n_queried
        if not parts:
            return out
        tot = sum(p.n_seen for p in parts)
        keeps = [(p, p._alive()) for p in parts]
        out._take_union(keeps, [p.n_seen / tot if tot else 1.0 / len(parts) for p in parts])
        for p in parts:
            for c in (rk.C_KEVALS, rk.C_SMO, rk.C_CAPHIT):
                out.cnt[c] += p.cnt[c]
        rk._ramp_refresh(*out._refresh_args(True))
        dummy = np.zeros(0, dtype=bool)
        out._run(readonly_rows(np.zeros((1, 1), np.float32)), np.zeros(1, np.int64),
                 np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(0), np.zeros(0),
                 dummy, True)
        rk._ramp_refresh(*out._refresh_args(False))
        return out


def _summed(attr: str, doc: str) -> property:
    """A fitted attribute: ``attr`` of every binary learner, summed (NotFittedError before
    fitting)."""
    def total(self) -> int:
        self._check_fitted()
        return int(sum(getattr(lr, attr) for lr in self.learners_))

    return property(total, doc=doc)


class OnlineRampSVM(StreamingClassifier):
    """Online ramp-loss SVM (OnlineSVMR) and its active-learning variant (OnlineASVMR).

    Zero-bias kernel SVM trained one row at a time by CCCP with SMO-style incremental
    learning and decremental unlearning, keeping the KKT conditions of the ramp-loss problem
    on every kept point (see the module docstring for the derivation and departures).

    Args:
        C: box bound of the dual (> 0).
        gamma: kernel coefficient: number, 'scale' or 'auto' (resolved from the first batch).
        kernel: 'rbf', 'linear', 'poly' or 'sigmoid' (LIBSVM meanings).
        degree, coef0: poly/sigmoid parameters.
        s: ramp parameter (< 1; loss is min(1 - s, max(0, 1 - y f))). Paper: -1.
        max_non_sv: m of the removal step (keep at most m non-SVs closest to the margin);
            None keeps every point (exact OnlineSVMR; memory grows with the stream).
        active: True for OnlineASVMR: only rows with f(x) in the ramp region (|f| <= 1 for
            s = -1) have their label queried; ``partial_fit`` takes labels for all rows but
            uses only the queried ones (``n_labels_queried_`` counts them; one-vs-rest:
            each binary learner decides for itself, a row counts once if any asked).
        tol: KKT stopping tolerance (paper: 1e-3).
        gain_tol: dual-gain stopping tolerance (paper: 1e-5).
        class_weight: None, {label: weight} or 'balanced' (see
            :mod:`randsvm_dist.streaming.base`): scales each row's box C.
        random_state: accepted for API uniformity; the algorithm is deterministic given
            the row order.

    Fitted attributes: ``classes_``, ``n_features_in_``, ``kernel_`` (resolved Kernel),
    ``n_support_``, ``kernel_evals_``, ``n_labels_queried_``, ``n_kept_``, ``smo_steps_``.
    """

    def __init__(self, C=1.0, gamma="scale", kernel="rbf", degree=3, coef0=0.0, s=-1.0,
                 max_non_sv=None, active=False, tol=1e-3, gain_tol=1e-5, class_weight=None,
                 random_state=None):
        self.C = C
        self.class_weight = class_weight
        self.gamma = gamma
        self.kernel = kernel
        self.degree = degree
        self.coef0 = coef0
        self.s = s
        self.max_non_sv = max_non_sv
        self.active = active
        self.tol = tol
        self.gain_tol = gain_tol
        self.random_state = random_state

    def _validate(self, X) -> Kernel:
        check_positive(self.C, "C")
        check_positive(self.tol, "tol")
        check_positive(self.gain_tol, "gain_tol", allow_zero=True)
        try:
            s = float(self.s)
        except (TypeError, ValueError):
            raise ParameterError(f"s must be a number < 1; got {self.s!r}") from None
        if not (np.isfinite(s) and s < 1):
            raise ParameterError(f"s must be a finite number < 1; got {self.s!r}")
        m = self.max_non_sv
        if m is not None:
            check_int(m, "max_non_sv", 0)
        check_flag(self.active, "active")
        check_choice(self.kernel, "kernel", KERNELS)
        try:
            coef0 = float(self.coef0)
        except (TypeError, ValueError):
            raise ParameterError(f"coef0 must be a number; got {self.coef0!r}") from None
        gamma = learner_gamma(self.gamma, X.shape[1], [gamma_moments(X)]) \
            if self.kernel != "linear" else 1.0
        return Kernel(self.kernel, gamma, self.degree, coef0)

    def _start(self, X) -> None:
        """Resolve the kernel from the first batch (raises ParameterError/SchemaError)."""
        if X.shape[0] == 0 and isinstance(self.gamma, str) and self.gamma == "scale":
            raise SchemaError("the first batch is empty: gamma='scale' needs data")
        self.kernel_ = self._validate(X)
        self.n_labels_queried_ = 0

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from one batch of rows in order (see StreamingClassifier.partial_fit).

        With ``active=True`` only the labels of rows in the ramp region are used.

        Returns:
            self

        Raises:
            ParameterError: bad hyper-parameters (checked on the first call).
            SchemaError: bad X/y, unknown label, one class, wrong feature count.
        """
        for lr in getattr(self, "learners_", []):
            lr.last_query_mask = np.zeros(0, dtype=bool)
        super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        masks = [lr.last_query_mask for lr in self.learners_]
        if masks and len(masks[0]):
            self.n_labels_queried_ += int(np.logical_or.reduce(masks).sum())
        return self

    def fit(self, X, y, sample_weight=None):
        """Forget what was learnt and make one pass over (X, y) in row order.

        Returns:
            self

        Raises:
            as StreamingClassifier.fit.
        """
        for attr in ("kernel_", "n_labels_queried_"):
            self.__dict__.pop(attr, None)
        return super().fit(X, y, sample_weight=sample_weight)

    def _new_binary(self, n_features: int, seed: int) -> _RampBinary:
        m = None if self.max_non_sv is None else int(self.max_non_sv)
        return _RampBinary(self.kernel_, float(self.C), float(self.s), m, bool(self.active),
                           float(self.tol), float(self.gain_tol), n_features)

    def _merge_settings(self) -> dict:
        """Kernel, resolved gamma, degree, coef0 and the ramp's settings."""
        k = self.kernel_
        out = {"kernel": k.name, "C": float(self.C), "s": float(self.s),
               "max_non_sv": self.max_non_sv, "active": bool(self.active)}
        if k.name != "linear":
            out["gamma"] = float(k.gamma)
        if k.name in ("poly", "sigmoid"):
            out["coef0"] = float(k.coef0)
        if k.name == "poly":
            out["degree"] = int(k.degree)
        return out

    def merge(self, other: OnlineRampSVM) -> OnlineRampSVM:
        """Unite the kept points of two learners and continue CCCP/SMO over them.

        Returns:
            a new learner (inputs unchanged).

        Raises:
            SchemaError: different types, classes or feature counts.
            ParameterError: different kernels or settings.
        """
        out = super().merge(other)
        out.n_labels_queried_ = self.n_labels_queried_ + other.n_labels_queried_
        return out

    n_support_ = _summed("n_support", "Support vectors, summed over the binary learners.")
    kernel_evals_ = _summed("kernel_evals", "Kernel evaluations spent in training, summed "
                            "over the binary learners.")
    n_kept_ = _summed("n_kept", "Kept training points (SVs and non-SVs), summed over the "
                      "binary learners.")
    smo_steps_ = _summed("smo_steps", "Single-variable SMO steps, summed over the binary "
                         "learners.")
