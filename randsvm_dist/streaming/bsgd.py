"""Budgeted stochastic gradient descent (kernel Pegasos on a budget) with multi-merge.

Qaadan & Glasmachers, "Multi-Merge Budget Maintenance for Stochastic Gradient Descent SVM
Training"; BSGD itself is Wang, Crammer & Vucetic (JMLR 2012).

Training minimizes ``lambda/2 |w|^2 + 1/n sum_i hinge(y_i, <w, phi(x_i)> + b)`` with the
Gaussian kernel by SGD, learning rate ``eta_t = 1 / (lambda t)``: each step scales w by
``1 - 1/t`` and, when ``y_t f(x_t) < 1``, adds ``eta_t y_t phi(x_t)``. Whenever this makes the
model hold ``budget + 1`` support vectors, budget maintenance merges ``merge_size`` (M) of
them into one new point: the SV with the smallest ``|alpha|`` and its M-1 best partners by
pairwise weight degradation, either by a chain of binary golden-section merges (MM-BSGD,
``merge_method='golden'``) or by gradient ascent over the merged point (MM-GD,
``merge_method='gradient'``). M=2 is plain BSGD-merge. The merge maths, including where the paper's
printed algorithm is garbled, is derived in :mod:`._bsgd_kernels`.

Details the paper leaves open, as implemented:

- the coefficients are kept unscaled (``alpha = beta / (lambda t)``, every new SV gets
  ``beta = y``), so fresh SVs tie on ``|alpha|``; ties go to the lowest storage slot;
- a two-point merge always uses the golden-section line search (for two points the optimum
  lies on their line), also with ``merge_method='gradient'``, and so does the last, smaller merge
  of :meth:`merge` when fewer than M points must go;
- partners are ranked by a 12-step golden search, the executed merges use 40 steps.

Departures from the paper
-------------------------

- **The model is the t-weighted average of the SGD iterates** (``average=True``, the
  default), not the last iterate. Why (issue 19): with ``lambda = 1/(n C)`` the step ``eta_t
  = 1/(lambda t) = n C / t`` is still about C at the end of the stream, so the last iterate
  moves by ~C per margin violation and its accuracy depends on which rows came last: on a9a
  (C=32, gamma=0.008, B=500, one epoch) the last iterate gave 72.8-83.2% over 5 row orders
  with M=2 (BudgetedSVM's own C++ gives 76.4%, the majority class), the average 84.9-85.1%
  (LIBSVM 85.1%); on ijcnn1 at B=5% of LIBSVM's SVs 95.8% -> 97.1%
  (``benchmarks/bench_streaming_papers.py --suite bsgd``). lambda = 1/(nC), the 1/(lambda t)
  schedule, the smallest-|alpha| partner rule and the merge maths were checked and are as in
  the paper (the M=2 test against an independent plain-BSGD reference still holds with
  ``average=False``). The average is kept on the iterate's own support vectors: every
  ``min(4 B, 500)`` steps (at least 100) the iterate is folded in with weight (steps since
  the last fold) x t; an averaged point the iterate still holds keeps its coefficient, the
  ones the iterate merged away are projected (least squares in the RKHS, ridge 1e-6), each
  onto its own 16 nearest support vectors (one 16 x 16 system per point, solved as a
  batch): Wang et al.'s projection maintenance, done locally and once per fold instead of
  every step, at O(merged-away x B x d) cost. (Projecting them jointly onto the union of
  their neighbours, nearly all B support vectors, was within 0.1 point of the projection
  onto all B on a9a and ijcnn1, but cost a B x B kernel matrix and a B^3 Cholesky per fold,
  more than the iterate's own steps; ``benchmarks/bench_bsgd_average.py`` times the
  averaged model against the plain iterate.) Multi-merging the averaged model instead lost
  3-6 points for M >= 3, moving each merged-away point to its nearest SV lost 2-10 (it has
  no SGD steps after it to repair the error). ``average=False`` gives the paper's last
  iterate.
- Per-row weights (``sample_weight`` x ``class_weight``): a row of weight w adds
  ``beta = w y`` on a margin violation (the gradient of ``w * hinge``), and counts as one
  SGD step.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.validation import (
    check_choice,
    check_flag,
    check_gamma,
    check_int,
    check_positive,
)
from randsvm_dist.exceptions import ParameterError, SchemaError
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.streaming import _bsgd_kernels as _k
from randsvm_dist.streaming.base import StreamingClassifier, gamma_moments, learner_gamma

# averaging: the iterate is folded into the averaged model every
# max(FOLD_MIN_STEPS, min(FOLD_BUDGETS * budget, FOLD_MAX_STEPS)) steps
FOLD_MIN_STEPS = 100
FOLD_MAX_STEPS = 500
FOLD_BUDGETS = 4
FOLD_NEIGHBOURS = 16  # nearest SVs each merged-away averaged point is projected onto
FOLD_RIDGE = 1e-6  # ridge of the projection in a fold (kernel matrices of broad kernels
# are near singular; this keeps the projected coefficients moderate)
# the averaged model is shrunk by pairwise merges (M = 2) whatever merge_size is: measured
# on a9a (B=500, benchmarks/bench_streaming_papers.py --suite bsgd), multi-merging it
# (even near partners only) loses 3-6 points, because the averaged model has no SGD steps
# after it to repair a merge
MERGE_METHODS = {"golden": _k.MERGE_GOLDEN, "gradient": _k.MERGE_GRADIENT}


def merge_points(points: np.ndarray, alphas: np.ndarray, gamma: float,
                 method: str = "golden") -> tuple[np.ndarray, float]:
    """Merge weighted points ``sum_i alpha_i phi(x_i)`` into one ``alpha_z phi(z)``.

    The points are merged in the order given (``golden``: ``x_0`` with ``x_1``, the result
    with ``x_2``, ...; this is Algorithm 1 of the paper once the partners are sorted), or at
    once (``gradient``, Algorithm 2). Exposed for testing and for inspection.

    Args:
        points: (M, d) array, M >= 2.
        alphas: (M,) coefficients.
        gamma: Gaussian kernel width (> 0).
        method: 'golden' or 'gradient'.

    Returns:
        (z, alpha_z): the merged point (d,) and its coefficient.

    Raises:
        ParameterError: fewer than two points, shape mismatch, bad gamma or method.
    """
    P = np.ascontiguousarray(points, dtype=np.float64)
    a = np.ascontiguousarray(alphas, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 2 or a.shape != (P.shape[0],):
        raise ParameterError("merge_points needs (M, d) points and (M,) alphas with M >= 2")
    gamma = check_positive(gamma, "gamma")
    if method not in MERGE_METHODS:
        raise ParameterError(f"method must be 'golden' or 'gradient'; got {method!r}")
    if method == "gradient":
        z, az, _ = _k.gradient_merge(P, a, gamma, _k.GD_MAX_ITERS, _k.GD_TOL)
        return z, float(az)
    z, az = P[0].copy(), a[0]
    for p in range(1, len(P)):
        L = gamma * float(np.sum((z - P[p]) ** 2))
        h, az, _ = _k.golden_pair(az, a[p], L, _k.GOLDEN_ITERS_MERGE)
        z = h * z + (1.0 - h) * P[p]
    return z, float(az)


def weight_degradation(points: np.ndarray, alphas: np.ndarray, z: np.ndarray,
                       alpha_z: float, gamma: float) -> float:
    """``|sum_i alpha_i phi(x_i) - alpha_z phi(z)|^2`` for the Gaussian kernel (numpy).

    Args:
        points: (M, d); alphas: (M,); z: (d,); alpha_z: coefficient of z; gamma: width.

    Returns:
        the squared RKHS norm of the difference (>= 0 up to rounding).
    """
    Q = np.vstack([np.asarray(points, dtype=np.float64), np.asarray(z, dtype=np.float64)])
    c = np.append(np.asarray(alphas, dtype=np.float64), -float(alpha_z))
    d2 = np.sum((Q[:, None, :] - Q[None, :, :]) ** 2, axis=2)
    return float(c @ np.exp(-gamma * d2) @ c)


def _rbf64(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma |a - b|^2) in float64 (the fold solves a linear system with it)."""
    d2 = (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
          - 2.0 * A @ B.T)
    return np.exp(-gamma * np.maximum(d2, 0.0))


def _project_each(A: np.ndarray, a: np.ndarray, S: np.ndarray, gamma: float,
                  coef: np.ndarray) -> int:
    """Add to ``coef`` (on the points S) each point's projection of ``a_i phi(A_i)`` onto
    the span of its ``FOLD_NEIGHBOURS`` nearest points of S (least squares in the RKHS,
    ridge ``FOLD_RIDGE``): one small system per point, solved as a batch.

    Each point on its own neighbours, not all of them on the union of their neighbours:
    the union of the merged-away points' neighbours is nearly all B support vectors, which
    made every fold a B x B kernel matrix and a B^3 Cholesky (what averaging cost).

    Returns:
        the kernel evaluations done.
    """
    K = _rbf64(A, S, gamma)
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
    return int(K.size + G.size)


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
        self.counters = np.zeros(_k.N_COUNTERS, dtype=np.int64)
        self.average = bool(average)
        self.fold_every = max(FOLD_MIN_STEPS, min(FOLD_BUDGETS * budget, FOLD_MAX_STEPS))
        self.avg_sv = np.zeros((0, n_features))
        self.avg_coef = np.zeros(0)
        self.avg_b = 0.0
        self.avg_w = 0.0
        self.avg_t = 0  # step of the last fold
        self.avg_counters = np.zeros(_k.N_COUNTERS, dtype=np.int64)  # folds' merges

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
        sparse = sp.issparse(X)
        if sparse:
            ip, ix = X.indptr.astype(np.int64), X.indices.astype(np.int64)
        for _ in range(self.epochs):
            order = (np.arange(n, dtype=np.int64) if self.epochs == 1
                     else self.rng.permutation(n).astype(np.int64))
            at = 0
            while at < n:
                step = n - at
                if self.average:
                    step = min(step, self.avg_t + self.fold_every - self.t)
                part = order[at:at + step]
                args = (w, part, self.sv, self.sqn, self.beta, self.n_sv, self.t, self.lam,
                        self.bias, self.fit_intercept, self.gamma, self.budget,
                        self.merge_size, self.method, self.counters)
                if sparse:
                    out = _k.train_sparse(ip, ix, X.data, y, *args)
                else:
                    out = _k.train_dense(X, y, *args)
                self.n_sv, self.t, self.bias = int(out[0]), int(out[1]), float(out[2])
                at += step
                if self.average and self.t - self.avg_t >= self.fold_every:
                    self._fold_into(self)
        self.n_rows_seen += n
        return self

    def _fold_into(self, target: _BinaryBSGD) -> None:
        """Fold this learner's current iterate into ``target``'s averaged model with weight
        (steps since the last fold) x t (the t-weighted average). The averaged model lives
        on the iterate's support vectors: an averaged point still in the iterate keeps its
        coefficient there; the points the iterate merged away since the last fold are
        projected (least squares in the RKHS, ridge ``FOLD_RIDGE``) onto the span of
        their ``FOLD_NEIGHBOURS`` nearest support vectors each."""
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
                evals = _project_each(target.avg_sv[~kept], old[~kept], S, self.gamma, coef)
                target.avg_counters[_k.C_KERNEL_EVALS] += evals
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
        m = int(_k.shrink_to_budget(P, sqn, c, n, self.budget, self.gamma, 2, self.method,
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
        out.n_sv = int(_k.shrink_to_budget(out.sv, out.sqn, out.beta, n_all, self.budget,
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


class BudgetedSGD(StreamingClassifier):
    """Kernel SVM by budgeted SGD (BSGD) with multi-merge budget maintenance.

    Args:
        C: SVM cost; converted to ``lambda = 1 / (n C)`` as BudgetedSVM does, with ``n`` =
            ``n_rows`` if given, else the rows of the first batch each binary learner sees
            (for ``fit`` that is all of X; for ``partial_fit`` the first batch, so pass
            ``n_rows`` when streaming). Default 1.0 when neither C nor lambda_ is given.
        lambda_: regularization of the primal problem directly (exclusive with C).
        gamma: Gaussian kernel width ``exp(-gamma |x - x'|^2)``: number, 'scale' or 'auto'
            (resolved on the first batch).
        budget: B, most support vectors kept (per binary learner).
        merge_size: M >= 2, points merged into one at each budget maintenance (M <= B + 1).
        merge_method: 'golden' (MM-BSGD: chain of binary golden-section merges) or
            'gradient' (MM-GD: gradient ascent over the merged point).
        epochs: SGD passes over each batch; with more than one, every pass uses a fresh
            permutation drawn from ``random_state``.
        fit_intercept: learn a bias, regularized as if a constant 1 were added to the kernel
            (it is the sum of the coefficients ever added; merges do not change it).
        n_rows: total rows of the stream, for C -> lambda (see C).
        average: the model is the t-weighted average of the SGD iterates (default; see
            "Departures from the paper"); False: the last iterate, as the paper.
        class_weight: None, {label: weight} or 'balanced' (see
            :mod:`randsvm_dist.streaming.base`); multiplies each row's sample weight.
        random_state: seed of every random choice (epoch permutations).

    Fitted attributes: ``classes_``, ``n_features_in_``, ``learners_``, ``gamma_``,
    ``lambda_used_`` (per learner), ``n_support_``, ``support_vectors_``/``dual_coef_``/
    ``intercept_`` (binary problems: of the model, i.e. the averaged one by default),
    ``class_weight_``, and the counters (of the SGD iterate) ``n_kernel_evals_``,
    ``n_maintenance_`` (budget maintenance events), ``n_merges_`` (points merged away =
    binary merges), ``n_violations_`` (margin violations = SVs added).

    Sparse X is used as CSR without densifying: dot products with the (dense) budget run over
    each row's non-zeros; merged support vectors are dense.
    """

    def __init__(self, C=None, lambda_=None, gamma="scale", budget=500, merge_size=2,
                 merge_method="golden", epochs=1, fit_intercept=False, n_rows=None,
                 average=True, class_weight=None, random_state=None):
        self.C = C
        self.lambda_ = lambda_
        self.gamma = gamma
        self.budget = budget
        self.merge_size = merge_size
        self.merge_method = merge_method
        self.epochs = epochs
        self.fit_intercept = fit_intercept
        self.n_rows = n_rows
        self.average = average
        self.class_weight = class_weight
        self.random_state = random_state

    def _validate(self) -> dict:
        if self.C is not None and self.lambda_ is not None:
            raise ParameterError("give C or lambda_, not both")
        C = lam = None
        if self.lambda_ is not None:
            lam = check_positive(self.lambda_, "lambda_")
        else:
            C = 1.0 if self.C is None else check_positive(self.C, "C")
        budget = check_int(self.budget, "budget", 1)
        merge_size = check_int(self.merge_size, "merge_size", 2)
        if merge_size > budget + 1:
            raise ParameterError(
                f"merge_size must be <= budget + 1 = {budget + 1}; got {merge_size}")
        method = check_choice(self.merge_method, "merge_method", MERGE_METHODS)
        epochs = check_int(self.epochs, "epochs", 1)
        n_rows = None if self.n_rows is None else check_int(self.n_rows, "n_rows", 1)
        check_flag(self.fit_intercept, "fit_intercept")
        check_flag(self.average, "average")
        check_gamma(self.gamma)
        return dict(C=C, lambda_=lam, gamma=self.gamma, budget=budget, merge_size=merge_size,
                    method=MERGE_METHODS[method], epochs=epochs,
                    fit_intercept=bool(self.fit_intercept), n_rows=n_rows,
                    average=bool(self.average))

    def _new_binary(self, n_features: int, seed: int) -> _BinaryBSGD:
        return _BinaryBSGD(n_features, seed=seed, **self._validate())

    # -- fitted attributes -----------------------------------------------------------------
    def _sum_counter(self, c: int) -> int:
        self._check_fitted()
        return int(sum(int(lr.counters[c]) for lr in self.learners_))

    @property
    def n_kernel_evals_(self) -> int:
        """Kernel evaluations in training (margins, partner search, merges), all learners."""
        return self._sum_counter(_k.C_KERNEL_EVALS)

    @property
    def n_maintenance_(self) -> int:
        """Budget maintenance events (each merges up to merge_size points into one)."""
        return self._sum_counter(_k.C_MAINTENANCE)

    @property
    def n_merges_(self) -> int:
        """Points merged away (= binary merges; M-1 per maintenance event)."""
        return self._sum_counter(_k.C_BINARY_MERGES)

    @property
    def n_violations_(self) -> int:
        """Margin violations, i.e. support vectors added by SGD steps."""
        return self._sum_counter(_k.C_VIOLATIONS)

    @property
    def n_support_(self) -> np.ndarray:
        """Binary: SVs with negative and positive coefficient (classes_[0], classes_[1]), as
        scikit-learn orders them; multi-class: SVs of each one-vs-rest learner."""
        self._check_fitted()
        if len(self.learners_) == 1:
            c = self.learners_[0].coef
            return np.array([np.sum(c < 0), np.sum(c >= 0)], dtype=np.int32)
        return np.array([lr.n_core for lr in self.learners_], dtype=np.int32)

    @property
    def gamma_(self) -> float:
        """The resolved kernel width."""
        self._check_fitted()
        return float(self.learners_[0].gamma)

    @property
    def lambda_used_(self) -> np.ndarray:
        """lambda of each binary learner (1 / (n C) when C was given)."""
        self._check_fitted()
        return np.array([lr.lam for lr in self.learners_], dtype=np.float64)

    def _binary(self) -> _BinaryBSGD:
        self._check_fitted()
        if len(self.learners_) != 1:
            raise SchemaError("support_vectors_/dual_coef_/intercept_ exist for binary "
                              "problems; use learners_[k] for one-vs-rest")
        return self.learners_[0]

    @property
    def support_vectors_(self) -> np.ndarray:
        """(n_SV, n_features) support vectors (binary problems)."""
        return self._binary().model_support_vectors.copy()

    @property
    def dual_coef_(self) -> np.ndarray:
        """(1, n_SV) coefficients alpha_j (positive side = classes_[1])."""
        return self._binary().coef[None, :].copy()

    @property
    def intercept_(self) -> np.ndarray:
        """(1,) bias b of f(x) = sum_j alpha_j k(sv_j, x) + b."""
        return np.array([self._binary().intercept])
