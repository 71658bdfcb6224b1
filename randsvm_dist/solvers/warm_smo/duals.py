"""The duals the warm SMO solves, one per LIBSVM problem kind, and their starting points.

LIBSVM solves every kind as min 1/2 a'Qa + p'a over 0 <= a_i <= Cb_i with y'a fixed and
Q_ij = y_i y_j K(x_{r_i}, x_{r_j}) (``svm.cpp``: ``solve_c_svc``, ``solve_epsilon_svr``,
``solve_one_class``); a ``WarmDual`` is that problem with a feasible starting point:

- C-SVC (-s 0): one variable per row, y the labels, p = -1, y'a = 0.
- epsilon-SVR (-s 3): two variables per row, a_i (y = +1, p = eps - z_i) and a*_i
  (y = -1, p = eps + z_i), both boxed by C_i, y'a = sum a - sum a* = 0; the row's dual
  coefficient is a_i - a*_i. A start is given as those coefficients.
- one-class (-s 2): one variable per row, y = +1, p = 0, boxes C_i (1 unweighted) and
  sum a = nu sum_i C_i. LIBSVM starts from a_i = min(C_i, what is left of nu sum C) in row
  order; a start whose sum falls short is filled by ``fill_to_total`` once its gradient
  is known (the rows of smallest (Ka)_i first: the outliers the optimum puts at C_i).

Starting points outside the feasible set are repaired: clipped to the boxes, then (C-SVC,
SVR) the larger side scaled down until y'a = 0, (one-class) scaled down to the total
when it exceeds it; a C-SVC start whose gradient is known (a scan's values) is balanced
by ``rebalanced`` instead, which moves a few alphas. Here too: each row's box and target
(``row_boxes``, ``dual_targets``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.solvers.params import C_SVC, EPSILON_SVR, ONE_CLASS, SolverParams

# a start's y'a (C-SVC, SVR) or sum a (one-class) is left alone when it is this close to
# its target relative to the sums
BALANCE_RTOL = 1e-12


@dataclass(frozen=True)
class WarmDual:
    """One LIBSVM dual in the SMO's form, with a feasible start (arrays per variable).

    Attributes:
        rows: (m,) int64: the row of X each variable belongs to.
        y: (m,) signs in {-1, +1}.
        p: (m,) the linear term.
        Cb: (m,) upper bounds (> 0).
        alpha: (m,) the start, feasible except for ``deficit``.
        deficit: what ``fill_to_total`` must still add to sum alpha (one-class; else 0).
        warm: the start came from the caller (not LIBSVM's initial point).
        as_given: the start is the caller's point unrepaired (nothing clipped or
            scaled), so gradients the caller knows for it hold.
    """

    rows: np.ndarray
    y: np.ndarray
    p: np.ndarray
    Cb: np.ndarray
    alpha: np.ndarray
    deficit: float = 0.0
    warm: bool = False
    as_given: bool = False


def feasible_start(alpha0: np.ndarray, y: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """alpha0 clipped to [0, C_i] with sum_i y_i alpha_i = 0 (the larger side scaled down).

    A previous optimum balances to rounding only (|sum_i y_i alpha_i| ~ 1e-16 of the
    sums); that is left as it is: scaling it would move every alpha at its bound C_i a
    rounding below it, where it counts as free and can never be shrunk.

    Args:
        alpha0: (n,) starting alphas.
        y: (n,) labels in {-1, +1}.
        Cb: (n,) upper bounds.

    Returns:
        a feasible (n,) float64 copy.
    """
    a = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cb)
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
    if abs(pos - neg) <= BALANCE_RTOL * max(pos, neg):
        return a
    if pos > neg:
        a[y > 0] *= neg / pos
    elif neg > pos:
        a[y < 0] *= pos / neg
    return a


def rebalanced(alpha0: np.ndarray, y: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """C-SVC's alpha0 clipped to its boxes with y'a = 0 restored by lowering the alphas of
    the heavier side, free ones first, largest first: a solver's rounding (oneDAL's
    float32 sums) changes one or a few alphas, so a gradient known at alpha0 follows for
    the kernel columns of those few (``feasible_start`` scales a whole side instead)."""
    a = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cb)
    excess = float(a[y > 0].sum() - a[y < 0].sum())
    side = y > 0 if excess > 0 else y < 0
    order = np.flatnonzero(side & (a > 0))
    order = order[np.lexsort((-a[order], a[order] >= Cb[order]))]
    left = abs(excess)
    for i in order:
        if left <= 0:
            break
        cut = min(a[i], left)
        a[i] -= cut
        left -= cut
    return a


def one_class_start(alpha0: np.ndarray | None, Cb: np.ndarray, nu: float
                    ) -> tuple[np.ndarray, float]:
    """A one-class start and what it lacks of sum a = nu sum C_i.

    Args:
        alpha0: (n,) starting alphas, or None (zeros, filled as LIBSVM's initial point).
        Cb: (n,) boxes; nu: LIBSVM's nu in (0, 1].

    Returns:
        (alpha clipped to the boxes and scaled down to the total if above it, the deficit
        >= 0 that ``fill_to_total`` adds).
    """
    total = nu * float(Cb.sum())
    a = np.zeros(len(Cb)) if alpha0 is None else \
        np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cb)
    s = float(a.sum())
    if abs(s - total) <= BALANCE_RTOL * total:
        return a, 0.0
    if s > total:
        a *= total / s
        return a, 0.0
    return a, total - s


def fill_to_total(alpha: np.ndarray, G: np.ndarray, Cb: np.ndarray, deficit: float
                  ) -> np.ndarray:
    """Raise alphas to their boxes, smallest gradient first, until ``deficit`` is added.

    For one-class G = Ka, so the rows of smallest decision value (the outliers, at C_i at
    the optimum) are filled first; from zeros (all G equal) this is LIBSVM's initial point
    a_i = min(C_i, what is left) in row order.

    Args:
        alpha: (n,) the start (changed in place); G: (n,) its gradient; Cb: (n,) boxes;
        deficit: what to add (> 0, at most sum(Cb - alpha)).

    Returns:
        the indices whose alpha changed (the caller updates the gradient by them).
    """
    order = np.argsort(G, kind="stable")
    room = (Cb - alpha)[order]
    before = np.concatenate([[0.0], np.cumsum(room)[:-1]])
    add = np.clip(deficit - before, 0.0, room)
    grow = add > 0
    changed = order[grow]
    # a row given all its room is set to its bound exactly (not a rounding under it,
    # where it would count as free)
    alpha[changed] = np.where(add[grow] >= room[grow], Cb[changed],
                              alpha[changed] + add[grow])
    return changed


def c_svc_dual(y: np.ndarray, Cb: np.ndarray, alpha0: np.ndarray | None) -> WarmDual:
    """C-SVC's dual (labels y in {-1, +1}, boxes Cb) from alpha0 (repaired) or zeros."""
    n = len(y)
    alpha = np.zeros(n) if alpha0 is None else feasible_start(alpha0, y, Cb)
    return WarmDual(np.arange(n), y, -np.ones(n), Cb, alpha, 0.0, bool((alpha > 0).any()),
                    alpha0 is not None and np.array_equal(alpha, alpha0))


def svr_dual(z: np.ndarray, Cb: np.ndarray, epsilon: float,
             coef0: np.ndarray | None) -> WarmDual:
    """epsilon-SVR's dual of 2n variables (LIBSVM's ``solve_epsilon_svr``).

    Args:
        z: (n,) real targets; Cb: (n,) boxes of a_i and a*_i; epsilon: the tube's width.
        coef0: (n,) starting dual coefficients a_i - a*_i (repaired), or None (zeros).

    Returns:
        WarmDual over [a, a*].
    """
    n = len(z)
    y = np.concatenate([np.ones(n), -np.ones(n)])
    C2 = np.concatenate([Cb, Cb])
    given = None
    alpha = np.zeros(2 * n)
    if coef0 is not None:
        c = np.asarray(coef0, dtype=np.float64)
        given = np.concatenate([np.maximum(c, 0.0), np.maximum(-c, 0.0)])
        alpha = feasible_start(given, y, C2)
    rows = np.concatenate([np.arange(n), np.arange(n)])
    return WarmDual(rows, y, np.concatenate([epsilon - z, epsilon + z]), C2, alpha, 0.0,
                    bool((alpha > 0).any()),
                    given is not None and np.array_equal(alpha, given))


def one_class_dual(Cb: np.ndarray, nu: float, alpha0: np.ndarray | None) -> WarmDual:
    """One-class's dual (boxes Cb, sum a = nu sum Cb) from alpha0 (repaired) or LIBSVM's
    initial point (filled by ``fill_to_total``)."""
    n = len(Cb)
    alpha, deficit = one_class_start(alpha0, Cb, nu)
    return WarmDual(np.arange(n), np.ones(n), np.zeros(n), Cb, alpha, deficit,
                    alpha0 is not None,
                    alpha0 is not None and np.array_equal(alpha, alpha0))


def dual_for(params: SolverParams, t: np.ndarray, Cb: np.ndarray,
             start: np.ndarray | None) -> WarmDual:
    """The dual of ``params.svm_type`` on targets t with per-row boxes Cb from ``start``
    (C-SVC, one-class: alphas; SVR: coefficients a - a*)."""
    if params.svm_type == EPSILON_SVR:
        return svr_dual(t, Cb, float(params.epsilon), start)
    if params.svm_type == ONE_CLASS:
        return one_class_dual(Cb, float(params.nu), start)
    return c_svc_dual(t, Cb, start)


def row_coefficients(dual: WarmDual, alpha: np.ndarray, n: int, svm_type: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The support rows (ascending) and their dual coefficients in LIBSVM's convention:
    y_i a_i (C-SVC), a_i - a*_i (SVR), a_i (one-class).

    Args:
        dual: the solved dual; alpha: its optimum (in the dual's variable order);
        n: rows; svm_type: the kind.
    """
    if svm_type == EPSILON_SVR:
        beta = alpha[:n] - alpha[n:]
        support = np.flatnonzero(beta != 0)
        return support, beta[support]
    support = np.flatnonzero(alpha > 0)
    coef = dual.y[support] * alpha[support] if svm_type == C_SVC else alpha[support]
    return support, coef


def row_boxes(t: np.ndarray, params: SolverParams, row_C: np.ndarray | None) -> np.ndarray:
    """The box of each row: row_C (checked), else C x class weight (C-SVC), C (SVR) or 1
    (one-class, LIBSVM's scaling)."""
    n = len(t)
    if row_C is not None:
        Cb = np.array(row_C, dtype=np.float64)
        if Cb.shape != (n,) or not (Cb > 0).all():
            raise ValueError("row_C must hold one C_i > 0 per row (drop rows with C_i <= 0 "
                             "first: solvers.weighted.solve_weighted_warm does)")
        return Cb
    if params.svm_type == C_SVC:
        return np.where(t > 0, params.C * params.weight_pos, params.C * params.weight_neg)
    return np.full(n, float(params.C) if params.svm_type == EPSILON_SVR else 1.0)


def dual_targets(y, n: int, svm_type: int) -> np.ndarray:
    """C-SVC: labels as {-1, +1}; SVR: the real targets; one-class: ones (y ignored)."""
    if svm_type == ONE_CLASS:
        return np.ones(n)
    if svm_type == EPSILON_SVR:
        return np.asarray(y, dtype=np.float64)
    return np.where(np.asarray(y) > 0, 1.0, -1.0)
