"""Which rows a scan may skip (the screening maths of ``exact.scan.partition``): feature-norm bounds
||phi(x)||, the rows a residual bound clears, and the partial-model size that minimises
the kernel evaluations.
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.numerics.kernels import Kernel, row_sq_norms


def feature_norms(X, kernel: Kernel) -> np.ndarray:
    """||phi(x)|| = sqrt(k(x, x)) per row (inf where the kernel gives no such bound)."""
    if kernel.name == "rbf":
        return np.ones(X.shape[0], dtype=np.float32)
    sq = row_sq_norms(X).astype(np.float64)
    if kernel.name == "linear":
        return np.sqrt(sq)
    if kernel.name == "poly" and kernel.coef0 >= 0:
        return (kernel.gamma * sq + kernel.coef0) ** (kernel.degree / 2.0)
    return np.full(X.shape[0], np.inf)  # sigmoid is not positive definite


def neg_slack(requests, active, coded, rows, f):
    """-s of the given rows for every active problem (columns of f)."""
    out = np.empty((len(rows), len(active)))
    for col, p in enumerate(active):
        out[:, col] = -requests[p].kind.slack(f[:, col], coded[col][0][rows])
    return out


def clear_rows(neg_s, radius, members, threshold):
    """Rows (of neg_s) whose every problem keeps -s - radius >= threshold."""
    with np.errstate(invalid="ignore"):
        ok = (neg_s - radius >= threshold) | ~members
    return ok.all(axis=1)


def cheapest_size(neg_s, radius, members, threshold, delta, active, phi, full_cost) -> int:
    """The index into delta.sizes minimising the expected kernel evaluations of these rows:
    len(rows) x |B_t| for the partial decision values plus, per row that still fails, its
    full evaluation (``full_cost``: per row, the support vectors it meets); a row is
    expected to pass with B_t when its margin covers the residual (as if the partial values
    did not move its centre)."""
    with np.errstate(invalid="ignore"):
        margin = np.where(members, (neg_s - radius - threshold) / phi[:, None], np.inf)
    best, best_cost = 0, int(full_cost.sum())
    for i in range(1, len(delta.sizes)):
        res = delta.residual[i, active]
        failing = ~(margin >= res).all(axis=1)
        cost = len(neg_s) * int(delta.sizes[i]) + int(full_cost[failing].sum())
        if cost < best_cost:
            best, best_cost = i, cost
    return best
