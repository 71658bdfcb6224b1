"""The compiled SGD pass of :class:`.budgeted_sgd.BudgetedSGD` over dense rows
(numba; compiled for its one signature, :mod:`._types`, when imported: the learner
imports it on its first fit on dense rows)."""

from __future__ import annotations

import numpy as np
from numba import njit

from randsvm_dist.streaming.bsgd._kernels import admit, violates
from randsvm_dist.streaming.bsgd._types import F4_2D_IN, PASS_TAIL, PASSED


@njit(cache=True, inline="always")
def _dot_dense(sv, n_sv, X, r, out):
    """out[j] = <sv_j, X[r]>."""
    for j in range(n_sv):
        s = 0.0
        for f in range(X.shape[1]):
            s += sv[j, f] * np.float64(X[r, f])
        out[j] = s


@njit(PASSED(F4_2D_IN, *PASS_TAIL), cache=True, no_cfunc_wrapper=True)
def train_dense(X, y, w, order, sv, sqn, beta, n_sv, t, lam, bias, fit_intercept, gamma,
                budget, merge_size, maintain, counters, dots, wd, z, partners):
    """One pass of budgeted Pegasos over the dense float32 rows X[order]; the other
    arguments and the result as :func:`._pass_csr.train_sparse`'s."""
    d = X.shape[1]
    for q in range(order.shape[0]):
        r = order[q]
        t += 1
        xsq = 0.0
        for f in range(d):
            v = np.float64(X[r, f])
            xsq += v * v
        _dot_dense(sv, n_sv, X, r, dots)
        if violates(sqn, beta, n_sv, dots, xsq, y[r], t, lam, bias, gamma, counters):
            for f in range(d):
                sv[n_sv, f] = X[r, f]
            n_sv, bias = admit(sv, sqn, beta, n_sv, xsq, y[r] * w[r], bias, fit_intercept,
                               gamma, budget, merge_size, maintain, counters, wd, z, partners)
    return n_sv, t, bias
