"""A stable selection of the smallest keys for the streaming learners' numba code."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def first_of_stable_sort(key: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest keys, ascending, ties in position order (the first k of
    a stable argsort), by insertion into a sorted list of k: O(len(key) k), and a tenth of
    the first-use compile time of numba's mergesort (0.13 s against 1.1 s).

    Args:
        key: (n,) float64 keys.
        k: how many, 1 <= k <= n.

    Returns:
        (k,) int64 positions into ``key``.
    """
    out = np.empty(k, dtype=np.int64)
    n = 0
    for i in range(key.shape[0]):
        v = key[i]
        if n == k and key[out[n - 1]] <= v:
            continue
        j = n if n < k else n - 1
        while j > 0 and key[out[j - 1]] > v:
            out[j] = out[j - 1]
            j -= 1
        out[j] = i
        if n < k:
            n += 1
    return out
