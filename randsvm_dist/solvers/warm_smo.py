"""A C-SVM dual solver that starts from given alphas: LIBSVM's SMO, warm-startable (numba).

RandSVM re-solves working sets that are mostly the previous solution's support vectors
plus a few fresh rows. LIBSVM cannot take a starting point, so every re-solve finds the
previous optimum again from alpha = 0; most of its time goes there. This solver is
LIBSVM's own algorithm (``svm.cpp``, ``Solver::Solve``) with a starting point:

- working-set selection WSS2 (Fan, Chen, Lin, "Working set selection using second order
  information for training SVM", JMLR 2005): i maximises -y_i G_i over I_up, j minimises
  the second-order decrease -(b_ij^2) / a_ij over I_low with a_ij = K_ii + K_jj - 2 K_ij
  (TAU = 1e-12 when a_ij <= 0);
- LIBSVM's two-variable update with clipping to per-class boxes (C x class weight) or
  per-row boxes (``row_C``: C x class weight x sample weight), the
  same stopping rule (m(alpha) - M(alpha) < tol, LIBSVM's -e) and the same rho (the mean
  of y_i G_i over free alphas, else the middle of the bounds);
- no shrinking. Kernel rows are computed in float64 from the float32 rows and kept in a
  cache of ``cache_size`` MB (a slot per row, replaced round-robin).

The starting gradient G = Q alpha0 - 1 is computed once with BLAS over the nonzero alphas
(in float64). A starting point outside the feasible set is repaired first (clipped to the
boxes, then the larger class side scaled down until sum_i y_i alpha_i = 0).
"""

from __future__ import annotations

import numba as nb
import numpy as np
import scipy.sparse as sp

from randsvm_dist.solvers.libsvm_adapter import BinarySolution, SolverParams, dual_objective

TAU = 1e-12
KERNEL_CODE = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
# dense copies of sparse working sets above this many bytes are not made (LIBSVM instead)
MAX_DENSE_BYTES = 1 << 30


@nb.njit(nogil=True, cache=True, fastmath=False)
def _kernel_row(i: int, X: np.ndarray, sq: np.ndarray, code: int, gamma: float,
                coef0: float, degree: int, out: np.ndarray) -> None:
    n, d = X.shape
    for k in range(n):
        dot = 0.0
        for t in range(d):
            dot += X[i, t] * X[k, t]
        if code == 0:
            out[k] = dot
        elif code == 1:
            out[k] = (gamma * dot + coef0) ** degree
        elif code == 2:
            out[k] = np.exp(-gamma * max(sq[i] + sq[k] - 2.0 * dot, 0.0))
        else:
            out[k] = np.tanh(gamma * dot + coef0)


@nb.njit(nogil=True, cache=True)
def _smo(X: np.ndarray, y: np.ndarray, Cb: np.ndarray, alpha: np.ndarray, G: np.ndarray,
         QD: np.ndarray, code: int, gamma: float, coef0: float, degree: int, eps: float,
         n_slots: int, max_iter: int) -> tuple:
    """SMO iterations from (alpha, G) until LIBSVM's stopping rule; alpha, G updated in place.

    Returns (iterations, rho).
    """
    n = len(y)
    sq = np.empty(n)
    for k in range(n):
        s = 0.0
        for t in range(X.shape[1]):
            s += X[k, t] * X[k, t]
        sq[k] = s
    n_slots = max(2, min(n_slots, n))
    cache = np.empty((n_slots, n))
    slot_of = np.full(n, -1, np.int64)
    row_in = np.full(n_slots, -1, np.int64)
    clock = 0
    it = 0
    while it < max_iter:
        # --- select i: max over I_up of -y G
        gmax, i = -np.inf, -1
        for t in range(n):
            if y[t] > 0:
                if alpha[t] < Cb[t] and -G[t] >= gmax:
                    gmax, i = -G[t], t
            elif alpha[t] > 0 and G[t] >= gmax:
                gmax, i = G[t], t
        if i < 0:
            break
        si = slot_of[i]
        if si < 0:
            si = clock
            if row_in[si] >= 0:
                slot_of[row_in[si]] = -1
            _kernel_row(i, X, sq, code, gamma, coef0, degree, cache[si])
            row_in[si], slot_of[i] = i, si
            clock = (clock + 1) % n_slots
        Ki = cache[si]
        # --- select j: second-order rule over I_low
        gmax2, j, best = -np.inf, -1, np.inf
        for t in range(n):
            if y[t] > 0:
                if alpha[t] > 0:
                    diff = gmax + G[t]
                    if G[t] >= gmax2:
                        gmax2 = G[t]
                    if diff > 0:
                        a = QD[i] + QD[t] - 2.0 * Ki[t]
                        obj = -(diff * diff) / (a if a > 0 else TAU)
                        if obj <= best:
                            best, j = obj, t
            elif alpha[t] < Cb[t]:
                diff = gmax - G[t]
                if -G[t] >= gmax2:
                    gmax2 = -G[t]
                if diff > 0:
                    a = QD[i] + QD[t] - 2.0 * Ki[t]
                    obj = -(diff * diff) / (a if a > 0 else TAU)
                    if obj <= best:
                        best, j = obj, t
        if gmax + gmax2 < eps or j < 0:
            break
        it += 1
        sj = slot_of[j]
        if sj < 0:
            sj = clock
            if sj == si:  # never evict row i while it is in use
                sj = (sj + 1) % n_slots
                clock = sj
            if row_in[sj] >= 0:
                slot_of[row_in[sj]] = -1
            _kernel_row(j, X, sq, code, gamma, coef0, degree, cache[sj])
            row_in[sj], slot_of[j] = j, sj
            clock = (clock + 1) % n_slots
        Kj = cache[sj]
        # --- LIBSVM's update of (alpha_i, alpha_j), Q_ij = y_i y_j K_ij
        Ci, Cj = Cb[i], Cb[j]
        old_i, old_j = alpha[i], alpha[j]
        Qij = y[i] * y[j] * Ki[j]
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
        for t in range(n):
            G[t] += y[t] * (y[i] * Ki[t] * di + y[j] * Kj[t] * dj)
    # --- rho as LIBSVM computes it
    ub, lb, free, total = np.inf, -np.inf, 0, 0.0
    for t in range(n):
        yG = y[t] * G[t]
        if alpha[t] >= Cb[t]:
            if y[t] < 0:
                ub = min(ub, yG)
            else:
                lb = max(lb, yG)
        elif alpha[t] <= 0:
            if y[t] > 0:
                ub = min(ub, yG)
            else:
                lb = max(lb, yG)
        else:
            free += 1
            total += yG
    rho = total / free if free > 0 else (ub + lb) / 2.0
    return it, rho


def _dense64(X) -> np.ndarray:
    return np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def _kernel_block(A: np.ndarray, B: np.ndarray, params: SolverParams) -> np.ndarray:
    k = params.kernel
    dot = A @ B.T
    if k.name == "linear":
        return dot
    if k.name == "rbf":
        d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * dot
        return np.exp(-k.gamma * np.maximum(d2, 0.0))
    if k.name == "poly":
        return (k.gamma * dot + k.coef0) ** int(k.degree)
    return np.tanh(k.gamma * dot + k.coef0)


def feasible_start(alpha0: np.ndarray, y: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """alpha0 clipped to [0, C_i] with sum_i y_i alpha_i = 0 (the larger side scaled down).

    Args:
        alpha0: (n,) starting alphas.
        y: (n,) labels in {-1, +1}.
        Cb: (n,) upper bounds.

    Returns:
        a feasible (n,) float64 copy.
    """
    a = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cb)
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
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


def solve_warm_counted(X, y: np.ndarray, params: SolverParams,
                       alpha0: np.ndarray | None = None,
                       n_threads: int = 1,
                       row_C: np.ndarray | None = None) -> tuple[BinarySolution, int]:
    """``solve_warm`` that also returns the SMO iteration count (0 when LIBSVM solved it).

    Returns:
        (BinarySolution, iterations).
    """
    from threadpoolctl import threadpool_limits

    from randsvm_dist.solvers.libsvm_adapter import solve_binary

    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    n = len(y)
    if row_C is not None:
        Cb = np.asarray(row_C, dtype=np.float64)
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
    k = params.kernel
    alpha = (np.zeros(n) if alpha0 is None else feasible_start(alpha0, y, Cb))
    Xd = _dense64(X)
    with threadpool_limits(limits=max(1, int(n_threads))):
        G = -np.ones(n)
        nz = np.flatnonzero(alpha > 0)
        if len(nz):
            coef = alpha[nz] * y[nz]
            step = max(1, int(2**24 // max(len(nz), 1)))
            for a in range(0, n, step):
                G[a:a + step] += y[a:a + step] * (_kernel_block(Xd[a:a + step], Xd[nz],
                                                                params) @ coef)
        sq = np.einsum("ij,ij->i", Xd, Xd)
        QD = {"linear": sq, "rbf": np.ones(n),
              "poly": (k.gamma * sq + k.coef0) ** int(k.degree),
              "sigmoid": np.tanh(k.gamma * sq + k.coef0)}[k.name]
    n_slots = int(params.cache_size * (1 << 20) // (8 * n))
    it, rho = _smo(Xd, y, Cb, alpha, G, QD, KERNEL_CODE[k.name], float(k.gamma),
                   float(k.coef0), int(k.degree), float(params.tol), n_slots,
                   max(10_000_000, 100 * n))
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
        params: SolverParams (C, kernel, class weights, tol, cache_size; no shrinking).
        alpha0: (n,) starting alphas (repaired to a feasible point); None: zeros.
        n_threads: BLAS threads for the starting gradient.
        row_C: (n,) per-row upper bounds C_i > 0 replacing C x class weight (sample
            weights; ``params.C`` and the class weights are then not applied). Rows with
            C_i <= 0 must be dropped by the caller (``weighted.solve_weighted_warm``).

    Returns:
        BinarySolution, as ``libsvm_adapter.solve_binary`` returns it.

    Raises:
        ValueError: row_C of the wrong length or with an entry <= 0.
    """
    return solve_warm_counted(X, y, params, alpha0, n_threads, row_C)[0]
