"""The binary budgeted Pegasos learner of :class:`.budgeted_sgd.BudgetedSGD`:
SGD steps over the compiled kernels, the t-weighted average of the iterates kept on the
iterate's support vectors (fold and projection), merging of two learners, and the model."""

from __future__ import annotations

import copy

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.streaming.base import gamma_moments, learner_gamma
from randsvm_dist.streaming.bsgd import _compiled as _c
from randsvm_dist.streaming.bsgd import _types as _t

# averaging: the iterate is folded into the averaged model every
# max(FOLD_MIN_STEPS, min(FOLD_BUDGETS * budget, FOLD_MAX_STEPS)) steps
FOLD_MIN_STEPS = 100
FOLD_MAX_STEPS = 500
FOLD_BUDGETS = 4
FOLD_NEIGHBOURS = 16  # nearest SVs each merged-away averaged point is projected onto
FOLD_LANDMARKS = 64  # spread SVs what the neighbours miss is projected onto (a9a B=500:
# 32 -> 1 point below the projection onto all B at M=5, 64 -> 0.2)
FOLD_RIDGE = 1e-6  # ridge of the projection in a fold (kernel matrices of broad kernels
# are near singular; this keeps the projected coefficients moderate)
# the averaged model is shrunk by pairwise merges (M = 2) whatever merge_size is: measured
# on a9a (B=500, benchmarks/bench_streaming_papers.py --suite bsgd), multi-merging it
# (even near partners only) loses 3-6 points, because the averaged model has no SGD steps
# after it to repair a merge


def _rbf64(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma |a - b|^2) in float64 (the fold solves a linear system with it)."""
    d2 = (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
          - 2.0 * A @ B.T)
    return np.exp(-gamma * np.maximum(d2, 0.0))


def _project_lost(A: np.ndarray, a: np.ndarray, S: np.ndarray, gamma: float,
                  coef: np.ndarray) -> int:
    """Add to ``coef`` (on the points S) the projection of ``sum_i a_i phi(A_i)`` onto the
    span of S (least squares in the RKHS, ridge ``FOLD_RIDGE``), in two steps: each point
    onto its own ``FOLD_NEIGHBOURS`` nearest points of S (:func:`_project_local`), then
    what these local projections miss onto ``FOLD_LANDMARKS`` points spread over S
    (:func:`_project_residual`).

    Both steps are needed with a broad kernel: the merged-away points' function is then a
    large near-constant (a9a, gamma=0.008: ~1e3-1e4 on test rows, the averaged model's
    spread ~50-300), which the local spans alone miss by ~0.1-0.2% a fold, an offset that
    adds up over the folds; the residual's projection onto the landmarks removes it.

    Returns:
        the kernel evaluations done.
    """
    K = _rbf64(A, S, gamma)
    local = np.zeros(len(S))
    evals = _project_local(K, a, S, gamma, local)
    evals += _project_residual(K, a, S, gamma, local)
    coef += local
    return int(K.size + evals)


def _project_local(K: np.ndarray, a: np.ndarray, S: np.ndarray, gamma: float,
                   coef: np.ndarray) -> int:
    """Add to ``coef`` each point's projection of ``a_i phi(A_i)`` onto the span of its
    ``FOLD_NEIGHBOURS`` nearest points of S (``K = k(A, S)``): one small system per point,
    solved as a batch.

    Each point on its own neighbours, not all of them on the union of their neighbours:
    the union of the merged-away points' neighbours is nearly all B support vectors, which
    made every fold a B x B kernel matrix and a B^3 Cholesky (what averaging cost).

    Returns:
        the kernel evaluations done (beyond K).
    """
    k = min(len(S), FOLD_NEIGHBOURS)
    nbr = np.argpartition(-K, k - 1, axis=1)[:, :k]            # (m, k)
    P = S[nbr]                                                  # (m, k, d)
    sq = np.einsum("mkd,mkd->mk", P, P)
    d2 = sq[:, :, None] + sq[:, None, :] - 2.0 * (P @ P.transpose(0, 2, 1))
    G = np.exp(-gamma * np.maximum(d2, 0.0))
    G[:, np.arange(k), np.arange(k)] += FOLD_RIDGE
    rhs = np.take_along_axis(K, nbr, axis=1) * a[:, None]
    try:
        c = np.linalg.solve(G, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # a singular system: least squares, point by point
        c = np.stack([np.linalg.lstsq(g, r, rcond=None)[0] for g, r in zip(G, rhs)])
    np.add.at(coef, nbr.ravel(), c.ravel())
    return int(G.size)


def _project_residual(K: np.ndarray, a: np.ndarray, S: np.ndarray, gamma: float,
                      coef: np.ndarray) -> int:
    """Add to ``coef`` the projection of ``sum_i a_i phi(A_i) - sum_j coef_j phi(S_j)``
    (``K = k(A, S)``) onto the span of ``FOLD_LANDMARKS`` points of S at evenly spaced
    storage slots (all of S when it is no larger): one landmarks x landmarks system.

    Storage slots are unrelated to where the points lie (merges refill slots from the
    end), so the landmarks are spread over the support vectors; what the local spans miss
    is smooth (a near-constant), which a few spread points span.

    Returns:
        the kernel evaluations done (beyond K).
    """
    n = len(S)
    L = np.unique(np.linspace(0, n - 1, min(n, FOLD_LANDMARKS)).round().astype(np.int64))
    KLS = _rbf64(S[L], S, gamma)
    G = KLS[:, L] + FOLD_RIDGE * np.eye(len(L))
    rhs = K[:, L].T @ a - KLS @ coef
    try:
        c = sla.cho_solve(sla.cho_factor(G, lower=True, check_finite=False), rhs,
                          check_finite=False)
    except sla.LinAlgError:  # not positive definite in floating point: least squares
        c = np.linalg.lstsq(G, rhs, rcond=None)[0]
    coef[L] += c
    return int(KLS.size)


def _dedup_union(svs: list[np.ndarray], coefs: list[np.ndarray]):
    """Unite weighted point sets, summing the coefficients of identical points.

    Returns:
        (points (n, d) float64, coefficients (n,)).
    """
    P = np.vstack(svs)
    c = np.concatenate(coefs)
    if not len(c):
        return P, c
    uniq, inv = np.unique(P, axis=0, return_inverse=True)
    return np.ascontiguousarray(uniq), np.bincount(inv.ravel(), weights=c,
                                                   minlength=len(uniq))


class _BinaryBSGD:
    """One budgeted Pegasos learner for labels in {-1, +1} (see :class:`BudgetedSGD`).

    State: ``beta`` (unscaled coefficients: alpha = beta / (lambda t)), ``sv`` (dense float64
    support vectors, capacity budget + 1), ``bias`` (unscaled intercept), ``t`` (SGD steps);
    with ``average``: the averaged model ``avg_sv``/``avg_coef``/``avg_b`` of total weight
    ``avg_w``, folded every ``fold_every`` steps (see :class:`BudgetedSGD`).
    """

    def __init__(self, n_features: int, *, C, lambda_, gamma, budget: int, merge_size: int,
                 method: int, epochs: int, fit_intercept: bool, n_rows, seed: int,
                 average: bool = True):
        self.n_features = n_features
        self.C, self.lambda_param, self.gamma_param = C, lambda_, gamma
        self.budget, self.merge_size, self.method = budget, merge_size, method
        self.epochs, self.fit_intercept, self.n_rows_param = epochs, fit_intercept, n_rows
        self.rng = np.random.default_rng(seed)
        self.gamma: float | None = None
        self.lam: float | None = None
        self.lam_from_rows = False  # lambda = 1/(n C) with n this learner's own row count
        self.sv = np.zeros((budget + 1, n_features))
        self.sqn = np.zeros(budget + 1)
        self.beta = np.zeros(budget + 1)
        self.n_sv = 0
        self.t = 0
        self.bias = 0.0
        self.n_rows_seen = 0
        self.counters = np.zeros(_t.N_COUNTERS, dtype=np.int64)
        self.average = bool(average)
        self.fold_every = max(FOLD_MIN_STEPS, min(FOLD_BUDGETS * budget, FOLD_MAX_STEPS))
        self.avg_sv = np.zeros((0, n_features))
        self.avg_coef = np.zeros(0)
        self.avg_b = 0.0
        self.avg_w = 0.0
        self.avg_t = 0  # step of the last fold
        self.avg_counters = np.zeros(_t.N_COUNTERS, dtype=np.int64)  # folds' merges

    # -- learning --------------------------------------------------------------------------
    def _resolve(self, X) -> None:
        self.gamma = learner_gamma(self.gamma_param, X.shape[1], [gamma_moments(X)])
        if self.lambda_param is not None:
            self.lam = float(self.lambda_param)
        else:
            self.lam_from_rows = self.n_rows_param is None
            n = X.shape[0] if self.lam_from_rows else self.n_rows_param
            self.lam = 1.0 / (n * self.C)

    def partial_fit(self, X, y: np.ndarray, sample_weight=None) -> _BinaryBSGD:
        """``epochs`` SGD passes over the rows (row order when epochs == 1, else a fresh
        permutation from the learner's random stream each pass); a row of weight w has its
        hinge gradient scaled by w. With ``average``, the iterate is folded into the
        averaged model every ``fold_every`` steps."""
        if self.gamma is None:
            self._resolve(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        n = X.shape[0]
        w = np.ones(n) if sample_weight is None else \
            np.ascontiguousarray(sample_weight, dtype=np.float64)
        if sp.issparse(X):  # the pass's one signature: int64 indices, float32 values
            rows = (X.indptr.astype(np.int64), X.indices.astype(np.int64),
                    np.ascontiguousarray(X.data, dtype=np.float32))
        else:
            rows = (np.ascontiguousarray(X, dtype=np.float32),)
        train = _c.training_pass(sp.issparse(X))
        step = _c.maintenance(self.method, self.merge_size)
        work = _c.scratch(self.sv.shape[0], self.n_features, self.merge_size)
        for _ in range(self.epochs):
            order = (np.arange(n, dtype=np.int64) if self.epochs == 1
                     else self.rng.permutation(n).astype(np.int64))
            at = 0
            while at < n:
                span = n - at
                if self.average:
                    span = min(span, self.avg_t + self.fold_every - self.t)
                out = train(*rows, y, w, order[at:at + span], self.sv, self.sqn, self.beta,
                            self.n_sv, self.t, self.lam, self.bias, self.fit_intercept,
                            self.gamma, self.budget, self.merge_size, step, self.counters,
                            *work)
                self.n_sv, self.t, self.bias = int(out[0]), int(out[1]), float(out[2])
                at += span
                if self.average and self.t - self.avg_t >= self.fold_every:
                    self._fold_into(self)
        self.n_rows_seen += n
        return self

    def _fold_into(self, target: _BinaryBSGD) -> None:
        """Fold this learner's current iterate into ``target``'s averaged model with weight
        (steps since the last fold) x t (the t-weighted average). The averaged model lives
        on the iterate's support vectors: an averaged point still in the iterate keeps its
        coefficient there; the points the iterate merged away since the last fold are
        projected onto the support vectors (:func:`_project_lost`: each onto its
        ``FOLD_NEIGHBOURS`` nearest, then the remainder onto ``FOLD_LANDMARKS`` spread
        ones)."""
        span = self.t - self.avg_t
        if span <= 0 or self.t == 0:
            return
        wt = float(span) * self.t
        tot = target.avg_w + wt
        S = np.ascontiguousarray(self.support_vectors, dtype=np.float64)
        coef = self.last_coef * (wt / tot)
        if target.avg_w > 0 and len(target.avg_coef) and len(S):
            old = target.avg_coef * (target.avg_w / tot)
            where = {row.tobytes(): j for j, row in enumerate(S)}
            idx = np.array([where.get(row.tobytes(), -1) for row in target.avg_sv])
            kept = idx >= 0
            np.add.at(coef, idx[kept], old[kept])
            if not kept.all():
                evals = _project_lost(target.avg_sv[~kept], old[~kept], S, self.gamma, coef)
                target.avg_counters[_t.C_KERNEL_EVALS] += evals
        target.avg_b = target.avg_b * (target.avg_w / tot) + self.last_intercept * (wt / tot)
        target.avg_w = tot
        target.avg_t = self.t
        target.avg_sv, target.avg_coef = S.copy(), coef

    def _shrink(self, P: np.ndarray, c: np.ndarray, counters: np.ndarray):
        """Multi-merge a weighted point set down to the budget. Returns (points, coefs)."""
        n = len(c)
        if n <= self.budget:
            return P, c
        P = np.ascontiguousarray(P, dtype=np.float64)
        sqn = np.einsum("ij,ij->i", P, P)
        c = np.ascontiguousarray(c, dtype=np.float64).copy()
        m = int(_c.shrink_to_budget(P, sqn, c, n, self.budget, self.gamma, 2, self.method,
                                    counters))
        return P[:m].copy(), c[:m].copy()

    # -- the model -------------------------------------------------------------------------
    @property
    def last_coef(self) -> np.ndarray:
        """alpha_j = beta_j / (lambda t) of the last SGD iterate (the paper's model)."""
        return self.beta[:self.n_sv] / (self.lam * max(self.t, 1))

    @property
    def last_intercept(self) -> float:
        """Bias of the last SGD iterate."""
        return self.bias / (self.lam * max(self.t, 1)) if self.lam else 0.0

    def _model(self):
        """(points, coefficients, bias) of the model: the averaged one (with the steps since
        the last fold folded into a copy) or the last iterate."""
        if not self.average or self.t == 0:
            return self.support_vectors, self.last_coef, self.last_intercept
        key = (self.t, self.avg_t, self.n_sv)
        cache = getattr(self, "_avg_cache", None)
        if cache is not None and cache[0] == key:
            return cache[1]
        tmp = _BinaryBSGD.__new__(_BinaryBSGD)
        tmp.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_avg_cache"})
        tmp.avg_counters = self.avg_counters.copy()
        self._fold_into(tmp)
        out = (tmp.avg_sv, tmp.avg_coef, tmp.avg_b)
        self._avg_cache = (key, out)
        return out

    @property
    def coef(self) -> np.ndarray:
        """Coefficients of the model (averaged when ``average``, else the last iterate)."""
        return self._model()[1]

    @property
    def intercept(self) -> float:
        """Bias of the model (averaged as :attr:`coef`)."""
        return float(self._model()[2])

    @property
    def support_vectors(self) -> np.ndarray:
        """Support vectors of the last iterate."""
        return self.sv[:self.n_sv]

    @property
    def model_support_vectors(self) -> np.ndarray:
        """Support vectors of the model (averaged when ``average``)."""
        return self._model()[0]

    @property
    def n_core(self) -> int:
        """Support vectors of the model."""
        return int(len(self._model()[1]))

    def decision_function(self, X) -> np.ndarray:
        """f(x) = sum_j alpha_j k(sv_j, x) + b (float32 BLAS, see kernels.decision_values)."""
        P, c, b = self._model()
        if len(c) == 0:
            return np.full(X.shape[0], b)
        return decision_values(X, P.astype(np.float32), c, b, Kernel("rbf", gamma=self.gamma))

    # -- combination -----------------------------------------------------------------------
    def merge(self, other: _BinaryBSGD) -> _BinaryBSGD:
        """Weight both models by their share of rows, unite them, multi-merge back to the
        budget (iterates and averaged models alike). Returns a new learner; inputs are
        unchanged.

        Raises:
            ParameterError: different gamma or lambda (e.g. gamma='scale' resolved on two
                different partitions: give a number to merge).
        """
        if self.gamma is None or other.gamma is None:
            src = self if other.gamma is None else other
            return src._copy_state()
        if not np.isclose(self.gamma, other.gamma, rtol=1e-9, atol=0.0):
            raise ParameterError(
                f"cannot merge BSGD models with gamma {self.gamma!r} and {other.gamma!r}; "
                "pass a numeric gamma when the learners are fitted on different parts")
        if self.lam_from_rows and other.lam_from_rows:
            lam = 1.0 / (1.0 / self.lam + 1.0 / other.lam)  # 1/((n1 + n2) C)
        elif np.isclose(self.lam, other.lam, rtol=1e-9, atol=0.0):
            lam = self.lam
        else:
            raise ParameterError(f"cannot merge BSGD models with lambda {self.lam!r} and "
                                 f"{other.lam!r}")
        n1, n2 = self.n_rows_seen, other.n_rows_seen
        s1, s2 = n1 / (n1 + n2), n2 / (n1 + n2)
        out = self._copy_state()
        out.counters = self.counters + other.counters
        out.avg_counters = self.avg_counters + other.avg_counters
        if self.average:
            (P1, c1, b1), (P2, c2, b2) = self._model(), other._model()
            P, c = _dedup_union([P1, P2], [s1 * c1, s2 * c2])
            out.avg_sv, out.avg_coef = self._shrink(P, c, out.avg_counters)
            out.avg_b = s1 * b1 + s2 * b2
            out.avg_w = (self.t + other.t) * (self.t + other.t + 1) / 2.0  # sum of t
        out.lam = lam
        out.t = self.t + other.t
        out.avg_t = out.t
        scale = lam * out.t
        P, c = _dedup_union([self.support_vectors, other.support_vectors],
                            [s1 * self.last_coef, s2 * other.last_coef])
        n_all = len(c)
        cap = max(self.budget + 1, n_all)
        out.sv = np.zeros((cap, self.n_features))
        out.sv[:n_all] = P
        out.sqn = np.zeros(cap)
        out.sqn[:n_all] = np.einsum("ij,ij->i", P, P)
        out.beta = np.zeros(cap)
        out.beta[:n_all] = c * scale
        out.bias = (s1 * self.last_intercept + s2 * other.last_intercept) * scale
        out.n_rows_seen = n1 + n2
        out.n_sv = int(_c.shrink_to_budget(out.sv, out.sqn, out.beta, n_all, self.budget,
                                           self.gamma, self.merge_size, self.method,
                                           out.counters))
        # back to the standard capacity for further training
        out.sv = np.ascontiguousarray(out.sv[:self.budget + 1])
        out.sqn = out.sqn[:self.budget + 1].copy()
        out.beta = out.beta[:self.budget + 1].copy()
        return out

    def _copy_state(self) -> _BinaryBSGD:
        out = object.__new__(_BinaryBSGD)
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_avg_cache"})
        for name in ("sv", "sqn", "beta", "counters", "avg_sv", "avg_coef", "avg_counters"):
            setattr(out, name, getattr(self, name).copy())
        out.rng = copy.deepcopy(self.rng)  # the input's stream must not advance
        return out
