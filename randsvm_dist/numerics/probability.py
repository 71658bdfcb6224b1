"""Probabilities as LIBSVM computes them (pure numpy): Platt's sigmoid and pairwise coupling.

- ``sigmoid_train``: Platt's sigmoid P(y = +1 | f) = 1 / (1 + exp(A f + B)) fitted by
  LIBSVM's ``sigmoid_train`` (Lin, Lin and Weng, "A note on Platt's probabilistic outputs
  for support vector machines", Machine Learning 2007): Newton's method with a backtracking
  line search on the regularised cross-entropy, the targets corrected by the priors
  (N+ + 1) / (N+ + 2) for positives and 1 / (N- + 2) for negatives, and every log/exp
  written so that it cannot overflow. Same constants as LIBSVM (100 iterations, minimal
  step 1e-10, Hessian ridge 1e-12, gradient tolerance 1e-5).
- ``sigmoid_predict``: LIBSVM's ``sigmoid_predict`` (the branch that avoids cancellation).
- ``multiclass_probability``: LIBSVM's ``multiclass_probability``: Wu, Lin and Weng's
  pairwise coupling, method 2 ("Probability estimates for multi-class classification by
  pairwise coupling", JMLR 2004): minimise p'Qp subject to sum p = 1 with
  Q_tt = sum_{j != t} r_jt^2, Q_tj = -r_jt r_tj, by LIBSVM's fixed-point iteration
  (max(100, k) iterations, stop when max_t |(Qp)_t - p'Qp| < 0.005 / k).
- ``predict_proba``: LIBSVM's ``svm_predict_probability`` for a one-vs-one model: the
  pairwise sigmoids clipped to [1e-7, 1 - 1e-7], r_ji = 1 - r_ij, two classes directly
  (p = (r_01, r_10)), more by ``multiclass_probability``.

The decision values are LIBSVM's pairwise ones (pair (i, j) positive towards class i, in
the order (0,1), (0,2), ..., (k-2,k-1)); ``probA``/``probB`` of pair p are the (A, B)
fitted with class i as the positive label.
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.exceptions import ParameterError

MIN_PROB = 1e-7


def sigmoid_train(dec_values, labels, sample_weight=None) -> tuple[float, float]:
    """Fit Platt's sigmoid to decision values, as LIBSVM's ``sigmoid_train``.

    Minimises F(A, B) = sum_i w_i [t_i (A f_i + B) + log(1 + exp(-(A f_i + B)))], the
    cross-entropy of p_i = 1 / (1 + exp(A f_i + B)) against the targets t_i =
    (N+ + 1) / (N+ + 2) (positives) and 1 / (N- + 2) (negatives). Its gradient is
    g = (sum w f (t - p), sum w (t - p)) and Hessian H = sum w p (1 - p) [f^2 f; f 1]; the
    Newton step -(H + 1e-12 I)^-1 g is halved until F decreases by at least 1e-4 x step x
    g'd (Armijo). With unit weights this is LIBSVM's algorithm step for step (log1p is
    used where LIBSVM writes log(1 + ...): same value, more digits). It stays one
    function, above the 60-line guide, so that it reads line for line against LIBSVM's
    ``sigmoid_train`` (priors, Newton step, Armijo line search); a third of it is this
    docstring.

    Args:
        dec_values: (n,) decision values (held out: not of rows the model trained on).
        labels: (n,) labels; > 0 is the positive class.
        sample_weight: optional (n,) non-negative weights (None: LIBSVM's unweighted fit);
            N+ and N- become the weight sums of each class.

    Returns:
        (A, B); P(y = +1 | f) = 1 / (1 + exp(A f + B)).

    Raises:
        ParameterError: lengths differ, or no rows.
    """
    f = np.asarray(dec_values, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel()
    if f.shape != y.shape or not len(f):
        raise ParameterError(f"sigmoid_train needs as many labels as decision values (> 0);"
                             f" got {f.shape} and {y.shape}")
    w = np.ones_like(f) if sample_weight is None else \
        np.asarray(sample_weight, dtype=np.float64).ravel()
    if w.shape != f.shape:
        raise ParameterError("sample_weight must have one weight per decision value")
    pos = y > 0
    prior1, prior0 = float(w[pos].sum()), float(w[~pos].sum())
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    t = np.where(pos, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))
    A, B = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))

    def F(a: float, b: float) -> float:
        fApB = f * a + b
        e = np.log1p(np.exp(-np.abs(fApB)))
        return float((w * np.where(fApB >= 0, t * fApB + e, (t - 1) * fApB + e)).sum())

    fval = F(A, B)
    for _ in range(max_iter):
        fApB = f * A + B
        ez = np.exp(-np.abs(fApB))
        # p = 1 / (1 + exp(fApB)), q = 1 - p, each without overflow
        p = np.where(fApB >= 0, ez / (1.0 + ez), 1.0 / (1.0 + ez))
        q = np.where(fApB >= 0, 1.0 / (1.0 + ez), ez / (1.0 + ez))
        d2 = w * p * q
        h11 = sigma + float((f * f * d2).sum())
        h22 = sigma + float(d2.sum())
        h21 = float((f * d2).sum())
        d1 = w * (t - p)
        g1, g2 = float((f * d1).sum()), float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            newA, newB = A + step * dA, B + step * dB
            newf = F(newA, newB)
            if newf < fval + 0.0001 * step * gd:
                A, B, fval = newA, newB, newf
                break
            step /= 2.0
        if step < min_step:
            break  # LIBSVM: "Line search fails in two-class probability estimates"
    return float(A), float(B)


def sigmoid_predict(dec_values, A: float, B: float) -> np.ndarray:
    """P(y = +1 | f) = 1 / (1 + exp(A f + B)), as LIBSVM's ``sigmoid_predict``.

    Args:
        dec_values: decision values (any shape).
        A, B: the sigmoid (``sigmoid_train``; LIBSVM's probA, probB).

    Returns:
        float64 array of dec_values' shape.
    """
    fApB = np.asarray(dec_values, dtype=np.float64) * A + B
    ez = np.exp(-np.abs(fApB))
    return np.where(fApB >= 0, ez / (1.0 + ez), 1.0 / (1.0 + ez))


def multiclass_probability(r) -> np.ndarray:
    """Class probabilities from pairwise ones, LIBSVM's ``multiclass_probability``.

    Args:
        r: (k, k) or (n, k, k) pairwise probabilities, r[i, j] = P(class i | i or j) with
            r[j, i] = 1 - r[i, j] (the diagonal is not used).

    Returns:
        (k,) or (n, k) probabilities (each row sums to 1), iterated row by row exactly as
        LIBSVM does (a row stops when it meets the criterion; the others go on).

    Raises:
        ParameterError: r is not square in its last two axes.
    """
    r = np.asarray(r, dtype=np.float64)
    single = r.ndim == 2
    if single:
        r = r[None]
    if r.ndim != 3 or r.shape[1] != r.shape[2]:
        raise ParameterError(f"r must be (k, k) or (n, k, k); got {r.shape}")
    n, k = r.shape[0], r.shape[1]
    rt = np.swapaxes(r, 1, 2)  # rt[:, t, j] = r[:, j, t]
    Q = -rt * r                # Q[t, j] = -r[j, t] r[t, j] for j != t
    off = ~np.eye(k, dtype=bool)
    diag = (np.where(off, rt, 0.0) ** 2).sum(axis=2)  # Q[t, t] = sum_{j != t} r[j, t]^2
    Q[:, np.arange(k), np.arange(k)] = diag
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.arange(n)
    for _ in range(max(100, k)):
        Qa, pa = Q[active], p[active]
        Qp = np.einsum("ntj,nj->nt", Qa, pa)
        pQp = (pa * Qp).sum(axis=1)
        done = np.abs(Qp - pQp[:, None]).max(axis=1) < eps
        active, Qa, pa, Qp, pQp = (active[~done], Qa[~done], pa[~done], Qp[~done],
                                   pQp[~done])
        if not len(active):
            break
        for t in range(k):
            diff = (-Qp[:, t] + pQp) / Qa[:, t, t]
            pa[:, t] += diff
            pQp = (pQp + diff * (diff * Qa[:, t, t] + 2 * Qp[:, t])) / (1 + diff) / (1 + diff)
            Qp = (Qp + diff[:, None] * Qa[:, t, :]) / (1 + diff)[:, None]
            pa /= (1 + diff)[:, None]
        p[active] = pa
    return p[0] if single else p


def pairwise_probabilities(dec, prob_a, prob_b, n_classes: int) -> np.ndarray:
    """LIBSVM's pairwise probability matrices from pairwise decision values.

    Args:
        dec: (n, n_pairs) pairwise decision values (LIBSVM's order and orientation).
        prob_a, prob_b: (n_pairs,) the pairs' sigmoids.
        n_classes: k.

    Returns:
        (n, k, k): r[:, i, j] = min(max(sigmoid_predict(dec_p, A_p, B_p), 1e-7), 1 - 1e-7)
        for pair p = (i, j), r[:, j, i] = 1 - r[:, i, j], diagonal 0.

    Raises:
        ParameterError: shapes that do not match k.
    """
    dec = np.asarray(dec, dtype=np.float64)
    if dec.ndim == 1:
        dec = dec[:, None]
    n_pairs = n_classes * (n_classes - 1) // 2
    prob_a = np.asarray(prob_a, dtype=np.float64).ravel()
    prob_b = np.asarray(prob_b, dtype=np.float64).ravel()
    if dec.shape[1] != n_pairs or prob_a.shape != (n_pairs,) or prob_b.shape != (n_pairs,):
        raise ParameterError(f"{n_classes} classes need {n_pairs} decision values, probA "
                             f"and probB per row; got {dec.shape[1]}, {prob_a.size}, "
                             f"{prob_b.size}")
    r = np.zeros((dec.shape[0], n_classes, n_classes))
    p = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            rij = np.clip(sigmoid_predict(dec[:, p], prob_a[p], prob_b[p]), MIN_PROB,
                          1 - MIN_PROB)
            r[:, i, j], r[:, j, i] = rij, 1 - rij
            p += 1
    return r


def predict_proba(dec, prob_a, prob_b, n_classes: int, coupling_order=None) -> np.ndarray:
    """Class probabilities of a one-vs-one model, as LIBSVM's ``svm_predict_probability``.

    Args:
        dec: (n, n_pairs) pairwise decision values.
        prob_a, prob_b: (n_pairs,) the pairs' sigmoids.
        n_classes: k.
        coupling_order: the class indices in the order LIBSVM couples them (its ``label``
            order), when that differs from 0..k-1 (a stock file whose labels are not
            ascending, read and re-sorted). LIBSVM's iteration stops at a tolerance of
            0.005 / k, so its result depends on the class order by up to ~1e-3: to give
            stock LIBSVM's numbers, couple in its order. None: 0..k-1.

    Returns:
        (n, k) probabilities in class-index order. LIBSVM's ``-b 1`` label is the argmax
        (ties to the lowest index in its label order): ``np.argmax(p, axis=1)``.

    Raises:
        ParameterError: shapes that do not match k, or a coupling_order that is not a
            permutation of 0..k-1.
    """
    r = pairwise_probabilities(dec, prob_a, prob_b, n_classes)
    if n_classes == 2:
        return np.stack([r[:, 0, 1], r[:, 1, 0]], axis=1)
    if coupling_order is None:
        return multiclass_probability(r)
    order = np.asarray(coupling_order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(n_classes)):
        raise ParameterError(f"coupling_order must be a permutation of 0..{n_classes - 1}; "
                             f"got {order.tolist()}")
    p_file = multiclass_probability(r[:, order][:, :, order])
    p = np.empty_like(p_file)
    p[:, order] = p_file
    return p
