"""One-vs-one's pairs and voting as LIBSVM and scikit-learn's SVC do them.

- ``ovo_pairs``: LIBSVM's pair order; ``pair_coef_matrix``: its shared-SV coefficient
  columns (``model_files.ovo_layout``) as one column per pair.

Pairwise decision values ``dec`` are (n, k(k-1)/2) in LIBSVM's pair order (0,1), (0,2),
..., (k-2,k-1) (``ovo_pairs``), pair (i, j) positive
towards class i: what ``svm_predict_values`` computes and what SVC's
``decision_function_shape='ovo'`` returns for k > 2.

- ``ovo_votes`` / ``ovo_predict``: LIBSVM's ``svm_predict``: pair (i, j) votes for i when
  its value is > 0, else for j (a value of exactly 0 votes for j); the class with the most
  votes wins, a tie goes to the lowest class index.
- ``ovr_decision_function``: SVC's ``decision_function_shape='ovr'`` (scikit-learn's
  ``_ovr_decision_function(dec < 0, -dec, k)``): votes plus the summed confidences squashed
  into (-1/3, 1/3), so they only order classes with equal votes. Here a value of exactly 0
  votes for i (scikit-learn's transform), unlike LIBSVM's vote (an exact 0 is rare, but
  then this matches SVC's ``decision_function`` bit for bit).
- ``predict``: ``break_ties=False`` -> ``ovo_predict``; ``break_ties=True`` (k > 2) ->
  argmax of ``ovr_decision_function``, as SVC.
- ``decision_function``: SVC's public shapes, including the binary case (one column,
  negated: positive towards the second class).
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.exceptions import ParameterError


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """LIBSVM's pair order: [(0, 1), (0, 2), ..., (k-2, k-1)]."""
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def pair_coef_matrix(sv_coef: np.ndarray, n_support) -> np.ndarray:
    """LIBSVM's (n_sv, k-1) coefficient columns -> one column per pair (n_sv, n_pairs).

    Column p of the result holds the coefficients of pair p = (i, j) over all SVs (zero
    outside classes i and j), so ``K(X, SV) @ M - rho`` are LIBSVM's decision values.
    """
    n_support = np.asarray(n_support, dtype=np.int64)
    k = len(n_support)
    start = np.concatenate([[0], np.cumsum(n_support)])
    out = np.zeros((sv_coef.shape[0], k * (k - 1) // 2))
    for p, (i, j) in enumerate(ovo_pairs(k)):
        out[start[i]:start[i + 1], p] = sv_coef[start[i]:start[i + 1], j - 1]
        out[start[j]:start[j + 1], p] = sv_coef[start[j]:start[j + 1], i]
    return out


def ovr_predict(scores) -> np.ndarray:
    """The class index of one-vs-rest scores: (n,) scores of two classes -> 1 where the
    score is positive, else 0; (n, k) scores -> the argmax (ties to the lowest index)."""
    scores = np.asarray(scores)
    if scores.ndim == 1:
        return (scores > 0).astype(np.int64)
    return np.argmax(scores, axis=1)


def n_classes_of(n_pairs: int) -> int:
    """k with k(k-1)/2 == n_pairs.

    Raises:
        ParameterError: n_pairs is not a triangular number >= 1.
    """
    k = int(round((1 + np.sqrt(1 + 8 * n_pairs)) / 2))
    if k * (k - 1) // 2 != n_pairs or k < 2:
        raise ParameterError(f"{n_pairs} pairwise decision values do not match any number "
                             "of classes")
    return k


def _dec(dec, n_classes: int) -> np.ndarray:
    dec = np.asarray(dec, dtype=np.float64)
    if dec.ndim == 1:
        dec = dec[:, None]
    if dec.ndim != 2 or dec.shape[1] != n_classes * (n_classes - 1) // 2:
        raise ParameterError(f"expected (n, {n_classes * (n_classes - 1) // 2}) pairwise "
                             f"decision values for {n_classes} classes; got {dec.shape}")
    return dec


def ovo_votes(dec, n_classes: int) -> np.ndarray:
    """LIBSVM's votes.

    Args:
        dec: (n, n_pairs) pairwise decision values (LIBSVM's order and orientation).
        n_classes: k.

    Returns:
        (n, k) int64 vote counts.

    Raises:
        ParameterError: dec of the wrong shape.
    """
    dec = _dec(dec, n_classes)
    votes = np.zeros((dec.shape[0], n_classes), dtype=np.int64)
    p = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            pos = dec[:, p] > 0
            votes[:, i] += pos
            votes[:, j] += ~pos
            p += 1
    return votes


def ovo_predict(dec, n_classes: int) -> np.ndarray:
    """LIBSVM's prediction: most votes, ties to the lowest class index.

    Returns:
        (n,) int64 class indices.
    """
    return np.argmax(ovo_votes(dec, n_classes), axis=1)  # argmax: first maximum


def ovr_decision_function(dec, n_classes: int) -> np.ndarray:
    """SVC's one-vs-rest-shaped decision function from one-vs-one values.

    votes[i] counts the pairs won by i (a pair (i, j) with value >= 0 goes to i); the
    confidence of class i sums +dec over its pairs (i, j) and -dec over its pairs (j, i);
    the result is votes + conf / (3 (|conf| + 1)).

    Args:
        dec: (n, n_pairs) pairwise decision values.
        n_classes: k.

    Returns:
        (n, k) float64.
    """
    dec = _dec(dec, n_classes)
    n = dec.shape[0]
    votes = np.zeros((n, n_classes))
    conf = np.zeros((n, n_classes))
    p = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            conf[:, i] += dec[:, p]
            conf[:, j] -= dec[:, p]
            lost = dec[:, p] < 0
            votes[~lost, i] += 1
            votes[lost, j] += 1
            p += 1
    return votes + conf / (3 * (np.abs(conf) + 1))


def predict(dec, n_classes: int, break_ties: bool = False,
            decision_function_shape: str = "ovr") -> np.ndarray:
    """SVC's ``predict`` from pairwise decision values.

    Args:
        dec: (n, n_pairs) pairwise decision values.
        n_classes: k.
        break_ties: as SVC: with k > 2 and shape 'ovr', the argmax of
            ``ovr_decision_function`` (ties to the lowest index) instead of the vote.
        decision_function_shape: 'ovr' or 'ovo'.

    Returns:
        (n,) int64 class indices.

    Raises:
        ParameterError: break_ties with shape 'ovo' (SVC's rule), or a bad shape name.
    """
    if decision_function_shape not in ("ovr", "ovo"):
        raise ParameterError("decision_function_shape must be 'ovr' or 'ovo'; got "
                             f"{decision_function_shape!r}")
    if break_ties and decision_function_shape == "ovo":
        raise ParameterError("break_ties must be False when decision_function_shape is "
                             "'ovo'")
    if break_ties and n_classes > 2:
        return np.argmax(ovr_decision_function(dec, n_classes), axis=1)
    return ovo_predict(dec, n_classes)


def decision_function(dec, n_classes: int, decision_function_shape: str = "ovr"):
    """SVC's ``decision_function`` from pairwise decision values.

    Returns:
        k == 2: (n,) -dec (positive towards the second class, as SVC); k > 2: (n, k)
        ``ovr_decision_function`` for 'ovr', (n, n_pairs) dec for 'ovo'.

    Raises:
        ParameterError: a bad shape name or dec of the wrong shape.
    """
    if decision_function_shape not in ("ovr", "ovo"):
        raise ParameterError("decision_function_shape must be 'ovr' or 'ovo'; got "
                             f"{decision_function_shape!r}")
    dec = _dec(dec, n_classes)
    if n_classes == 2:
        return -dec[:, 0]
    if decision_function_shape == "ovr":
        return ovr_decision_function(dec, n_classes)
    return dec
