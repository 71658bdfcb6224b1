"""One-vs-one multi-class decisions as LIBSVM and scikit-learn's SVC make them.

Pairs are ordered as LIBSVM orders them: (0, 1), (0, 2), ..., (0, k-1), (1, 2), ...; the
pair (i, j) has decision value f_ij(x) > 0 for class i.
"""

from __future__ import annotations

import numpy as np


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The class pairs (i, j), i < j, in LIBSVM's order."""
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def ovo_votes(values: np.ndarray, n_classes: int) -> np.ndarray:
    """(n, k) votes from (n, k(k-1)/2) pairwise decision values (f > 0 votes for i)."""
    votes = np.zeros((values.shape[0], n_classes), dtype=np.int64)
    for p, (i, j) in enumerate(ovo_pairs(n_classes)):
        win_i = values[:, p] > 0
        votes[:, i] += win_i
        votes[:, j] += ~win_i
    return votes


def ovo_predict_index(values: np.ndarray, n_classes: int) -> np.ndarray:
    """The class index LIBSVM predicts: most votes, ties to the lowest class index."""
    return np.argmax(ovo_votes(values, n_classes), axis=1)


def ovr_decision_function(values: np.ndarray, n_classes: int) -> np.ndarray:
    """(n, k) one-vs-rest shaped scores from pairwise decision values, as SVC's
    ``decision_function_shape='ovr'``: the votes plus the summed confidences scaled into
    (-1/3, 1/3), so they break ties without changing any clear vote."""
    votes = ovo_votes(values, n_classes).astype(np.float64)
    conf = np.zeros_like(votes)
    for p, (i, j) in enumerate(ovo_pairs(n_classes)):
        conf[:, i] += values[:, p]
        conf[:, j] -= values[:, p]
    scaled = conf / (3 * (np.abs(conf) + 1))
    return votes + scaled
