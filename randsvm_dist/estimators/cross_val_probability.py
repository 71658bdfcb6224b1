"""Platt scaling as LIBSVM does it, for rows in the client's memory: 5-fold cross-validation.

LIBSVM's ``svm_binary_svc_probability`` (as scikit-learn builds it): for each pair (i, j)
of classes in one-vs-one order, the pair's rows (class i's in input order, then class j's)
are shuffled by ``perm[t] <-> perm[t + rand() % (l - t)]``, cut into 5 consecutive folds
(fold f: positions [f l / 5, (f + 1) l / 5)), a C-SVC with the pair's boxes (C x class
weight) is trained on the other 4 folds and its decision values (positive towards class i)
of the fold's rows kept; a fold whose training rows hold one class only gets +1 or -1
(none: 0). Platt's sigmoid is fitted to all the pair's held-out values
(``numerics.probability.sigmoid_train``). The random numbers are scikit-learn's: a
Mersenne Twister (``std::mt19937``) seeded with ``RandomState(random_state).randint(2**31 -
1)``, bounded by Lemire's method (scikit-learn's ``bounded_rand_int``), drawn in sequence
over the pairs, so a fixed ``random_state`` gives SVC's fold assignment.

The fold models are solved as LIBSVM solves them (``solvers.libsvm_adapter``, its tol, the
full fit's kernel and gamma) for pairs of at most ``IN_PROCESS_ROWS`` rows; larger pairs'
are this package's fits (``RandSVMClassifier``, ``probability=False``), certified to
``gap_tol`` as the full fit is. Rows of non-positive sample weight take no part (LIBSVM removes
them first).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from randsvm_dist.estimators.base import HARD_MARGIN_C
from randsvm_dist.numerics.multiclass import ovo_pairs
from randsvm_dist.numerics.probability import sigmoid_train

N_FOLDS = 5
# A pair of at most this many rows has its fold models fitted in this process even when
# the estimator names a cluster (its data would take longer to place than to solve).
IN_PROCESS_ROWS = 20_000


class LibsvmRandom:
    """scikit-learn's LIBSVM random numbers: mt19937 and ``bounded_rand_int``."""

    def __init__(self, seed: int):
        self._rs = np.random.RandomState(int(seed) & 0xFFFFFFFF)
        self._buf = np.empty(0, np.uint64)
        self._at = 0

    def _next(self) -> int:
        if self._at >= len(self._buf):
            self._buf = self._rs.randint(0, 2**32, size=4096, dtype=np.uint64)
            self._at = 0
        self._at += 1
        return int(self._buf[self._at - 1])

    def bounded(self, n: int) -> int:
        """A uniform integer in [0, n) (Lemire's method, as scikit-learn's libsvm)."""
        m = self._next() * n
        low = m & 0xFFFFFFFF
        if low < n:
            t = (-n) % (1 << 32) % n
            while low < t:
                m = self._next() * n
                low = m & 0xFFFFFFFF
        return m >> 32


def libsvm_seed(random_state: int) -> int:
    """The seed scikit-learn's SVC gives LIBSVM for an integer ``random_state``."""
    return int(np.random.RandomState(random_state).randint(np.iinfo("i").max))


def fold_permutation(n: int, rng: LibsvmRandom) -> np.ndarray:
    """LIBSVM's shuffle of 0..n-1 (``svm_binary_svc_probability``)."""
    perm = np.arange(n)
    for t in range(n):
        j = t + rng.bounded(n - t)
        perm[t], perm[j] = perm[j], perm[t]
    return perm


def _fold_values(est, X, t: np.ndarray, w, cp: float, cn: float,
                 perm: np.ndarray) -> np.ndarray:
    """Held-out decision values (positive towards t = +1) of the pair's rows: each fold's
    model solved by LIBSVM here (at most ``IN_PROCESS_ROWS`` rows: what LIBSVM itself
    does), else by a RandSVM fit (certified to gap_tol, on the estimator's cluster)."""
    n = len(t)
    dec = np.zeros(n)
    for f in range(N_FOLDS):
        begin, end = f * n // N_FOLDS, (f + 1) * n // N_FOLDS
        test = perm[begin:end]
        train = np.concatenate([perm[:begin], perm[end:]])
        pos = int((t[train] > 0).sum())
        neg = len(train) - pos
        if pos == 0 or neg == 0:
            dec[test] = 0.0 if pos == neg else (1.0 if pos else -1.0)
            continue
        if n <= IN_PROCESS_ROWS:
            dec[test] = _libsvm_fold(est, X, t, w, cp, cn, train, test)
            continue
        sub = est._fold_estimator(C=1.0, class_weight={0: cn, 1: cp}, probability=False,
                                  gamma=est.gamma_ if est.kernel != "linear" else est.gamma,
                                  random_state=est.random_seed_, seed=None, scale=None,
                                  k=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sub.fit(X[train], (t[train] > 0).astype(np.int64),
                    None if w is None else w[train])
        dec[test] = sub.decision_function(X[test])  # positive towards label 1: +1
    return dec


def _libsvm_fold(est, X, t, w, cp: float, cn: float, train, test) -> np.ndarray:
    """One fold's model solved by LIBSVM on the training rows (boxes C x class weight x
    sample weight), its float64 decision values of the test rows."""
    from randsvm_dist.numerics.kernels import decision_values_float64
    from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
    from randsvm_dist.solvers.params import SolverParams
    from randsvm_dist.solvers.weighted import solve_weighted

    params = SolverParams(1.0, est.kernel_, weight_pos=cp, weight_neg=cn, tol=float(est.tol),
                          cache_size=float(est.cache_size), backend="libsvm")
    Xtr, ttr = X[train], t[train]
    X32 = Xtr.astype(np.float32)  # the solver's rows, as the estimator's fits hold them
    if w is None:
        sol = solve_libsvm(X32, ttr, params)
    else:
        sol = solve_weighted(X32, ttr, params, np.where(ttr > 0, cp, cn) * w[train])
    if not len(sol.support):
        return np.full(len(test), float(sol.intercept))
    return decision_values_float64(X[test], Xtr[sol.support], sol.dual_coef,
                                   sol.intercept, est.kernel_)


def cross_val_sigmoids(est, X, y, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """(probA, probB) per pair, LIBSVM's order and orientation, by 5-fold cross-validation.

    Args:
        est: the fitted classifier (one-vs-one or binary; ``classes_``, ``gamma_``,
            ``random_seed_`` set).
        X: the training rows (ndarray, scipy sparse or pandas DataFrame).
        y: their labels; sample_weight: None or per-row weights.

    Returns:
        (prob_a, prob_b), each (n_pairs,).
    """
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else \
        np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    code = np.searchsorted(est.classes_, np.asarray(y).ravel())
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64).ravel()
    keep = np.arange(len(code)) if w is None else np.flatnonzero(w > 0)
    C = float(est.C)
    C = HARD_MARGIN_C if np.isinf(C) else C
    cw = est._class_weights(est.classes_, np.bincount(code[keep],
                                                      minlength=len(est.classes_)))
    rng = LibsvmRandom(libsvm_seed(est.random_seed_))
    prob_a, prob_b = [], []
    for i, j in ovo_pairs(len(est.classes_)):
        rows = np.concatenate([keep[code[keep] == i], keep[code[keep] == j]])
        t = np.where(code[rows] == i, 1.0, -1.0)
        perm = fold_permutation(len(rows), rng)
        dec = _fold_values(est, X[rows], t, None if w is None else w[rows],
                           C * cw[i], C * cw[j], perm)
        a, b = sigmoid_train(dec, t)
        prob_a.append(a)
        prob_b.append(b)
    return np.array(prob_a), np.array(prob_b)


def calibrate_in_memory(est, data, y, sample_weight=None, *, dry: bool = False) -> bool:
    """Fit ``est``'s sigmoids by ``cross_val_sigmoids`` when its rows are in this process's
    memory (arrays or a DataFrame with labels, not a Parquet data set or Dask collection;
    no ``scale``, which is learnt on the workers) and at most ``calibration.CV_MAX_ROWS``;
    sets ``probA_``, ``probB_`` and ``probability_method_`` = 'libsvm_cv5'.

    Args:
        dry: only say whether it would (before the fit).

    Returns:
        Whether the rows are calibrated here (False: on the workers,
        ``estimators.calibration``).
    """
    from randsvm_dist.engine.inputs import is_dask_collection, open_dataset
    from randsvm_dist.estimators.calibration import CV_MAX_ROWS

    if (y is None or est.scale is not None or is_dask_collection(data) or is_dask_collection(y)
            or open_dataset(data) is not None):
        return False
    shape = getattr(data, "shape", None)
    n = shape[0] if shape is not None else len(data)
    if n > CV_MAX_ROWS:
        return False
    if dry:
        return True
    if len(est.classes_) > 2 and est.problems_[0][1] < 0:
        from randsvm_dist.exceptions import ParameterError

        raise ParameterError("probability=True needs multi_class='ovo' (LIBSVM's pairwise "
                             "coupling); got multi_class='ovr'")
    prob_a, prob_b = cross_val_sigmoids(est, data, y, sample_weight)
    est._set_probabilities(prob_a, prob_b, "libsvm_cv5")
    return True
