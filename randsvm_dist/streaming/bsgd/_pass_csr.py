"""The compiled SGD pass of :class:`.budgeted_sgd.BudgetedSGD` over CSR rows
(numba; compiled for its one signature, :mod:`._types`, when imported: the learner
imports it on its first fit on sparse rows)."""

from __future__ import annotations

import numpy as np
from numba import njit

from randsvm_dist.streaming.bsgd._kernels import admit, violates
from randsvm_dist.streaming.bsgd._types import (
    F4_1D_IN,
    I8_1D_IN,
    PASS_TAIL,
    PASSED,
)


@njit(cache=True, inline="always")
def _dot_sparse(sv, n_sv, indices, data, start, end, out):
    """out[j] = <sv_j, x> for the CSR row x = (indices, data)[start:end]."""
    for j in range(n_sv):
        s = 0.0
        for k in range(start, end):
            s += sv[j, indices[k]] * np.float64(data[k])
        out[j] = s


@njit(PASSED(I8_1D_IN, I8_1D_IN, F4_1D_IN, *PASS_TAIL), cache=True, no_cfunc_wrapper=True)
def train_sparse(indptr, indices, data, y, w, order, sv, sqn, beta, n_sv, t, lam, bias,
                 fit_intercept, gamma, budget, merge_size, maintain, counters, dots, wd, z,
                 partners):
    """One pass of budgeted Pegasos over the CSR rows (indptr, indices, data: int64, int64,
    float32) in ``order``; the dot products with the budget run over each row's
    non-zeros only (X is never densified).

    Args:
        y: (n,) float64 in {-1, +1}; w: (n,) row weights (> 0: a row's hinge gradient is
            scaled by its weight); order: row order (int64).
        sv, sqn, beta: the budget (capacity >= budget + 1), first n_sv rows in use.
        t: steps done so far; lam: lambda; bias: unscaled intercept (sum of added betas).
        maintain: the budget maintenance step (``maintain_golden`` or
            ``maintain_gradient``, :func:`._compiled.maintenance`).
        dots, wd, z, partners: scratch (:func:`._compiled.scratch`).

    Returns:
        (n_sv, t, bias) after the pass.
    """
    for q in range(order.shape[0]):
        r = order[q]
        t += 1
        s, e = indptr[r], indptr[r + 1]
        xsq = 0.0
        for k in range(s, e):
            v = np.float64(data[k])
            xsq += v * v
        _dot_sparse(sv, n_sv, indices, data, s, e, dots)
        if violates(sqn, beta, n_sv, dots, xsq, y[r], t, lam, bias, gamma, counters):
            for f in range(sv.shape[1]):
                sv[n_sv, f] = 0.0
            for k in range(s, e):
                sv[n_sv, indices[k]] = data[k]
            n_sv, bias = admit(sv, sqn, beta, n_sv, xsq, y[r] * w[r], bias, fit_intercept,
                               gamma, budget, merge_size, maintain, counters, wd, z, partners)
    return n_sv, t, bias
