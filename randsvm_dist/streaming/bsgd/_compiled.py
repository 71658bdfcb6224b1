"""BudgetedSGD's way into its compiled kernels: each kernel module is imported on first use.

Importing a kernel module compiles its kernels for their one signature each, or loads
them from numba's cache (:mod:`._types`), so a fit pays only for what it runs: a fit
on CSR rows with the default golden-section merges imports :mod:`._merge`,
:mod:`._kernels` and :mod:`._pass_csr` alone (five kernels), never the dense
pass or the gradient merge, and a program importing the streaming learners without
fitting this one compiles nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from randsvm_dist.streaming.bsgd._types import MERGE_GOLDEN


def training_pass(sparse: bool) -> Callable:
    """The compiled SGD pass over CSR (``sparse``) or dense rows.

    Returns:
        :func:`._pass_csr.train_sparse` or :func:`._pass_dense.train_dense`.
    """
    if sparse:
        from randsvm_dist.streaming.bsgd._pass_csr import train_sparse

        return train_sparse
    from randsvm_dist.streaming.bsgd._pass_dense import train_dense

    return train_dense


def scratch(capacity: int, n_features: int, merge_size: int) -> tuple:
    """The kernels' scratch arrays (they allocate nothing: numba's allocation code alone
    compiled for a tenth of a second), for a budget of ``capacity`` slots.

    Returns:
        (dots, wd, z, partners): a pass's dots with the budget and the degradations
        (``capacity`` float64 each), the merged point (``n_features`` float64), the partner
        indices (``merge_size`` int64).
    """
    return (np.empty(capacity), np.empty(capacity), np.empty(n_features),
            np.empty(max(merge_size, 1), dtype=np.int64))


def maintenance(method: int, m: int) -> Callable:
    """The compiled budget maintenance step merging ``m`` points by ``method``
    (``MERGE_*``): a chain of golden-section merges for ``MERGE_GOLDEN`` and for any merge
    of two points, else the gradient merge. A training pass takes it as an argument
    (:data:`._types.MAINTAIN_FN`); each step modifies sv/sqn/beta/counters and
    returns the new number of SVs (n_sv - m + 1).

    Returns:
        :func:`._kernels.maintain_golden` or :func:`._gradient.maintain_gradient`.
    """
    if method == MERGE_GOLDEN or m == 2:
        from randsvm_dist.streaming.bsgd._kernels import maintain_golden

        return maintain_golden
    from randsvm_dist.streaming.bsgd._gradient import maintain_gradient

    return maintain_gradient


def shrink_to_budget(sv: np.ndarray, sqn: np.ndarray, beta: np.ndarray, n_sv: int,
                     budget: int, gamma: float, merge_size: int, method: int,
                     counters: np.ndarray) -> int:
    """Multi-merge (:func:`maintenance`) until at most ``budget`` SVs remain; the last merge
    takes only as many points as needed.

    Returns:
        the new number of SVs.
    """
    _, wd, z, partners = scratch(sv.shape[0], sv.shape[1], merge_size)
    while n_sv > budget:
        m = min(merge_size, n_sv - budget + 1)
        n_sv = int(maintenance(method, m)(sv, sqn, beta, n_sv, gamma, m, counters, wd, z,
                                          partners))
    return n_sv
