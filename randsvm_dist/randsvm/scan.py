"""The per-partition violator scan, run on the workers once per iteration.

For every binary problem it returns the violator count (rows outside the problem's working
set with y f(x) < 1 - tol), margin statistics, the hinge-loss sums that give the primal
objective on the whole data set, and the m violators with the smallest random keys (global
row index and key only: the driver fetches the rows it finally draws).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..kernels import Kernel, decision_values
from .partitions import Partition
from .sampling import row_keys, smallest_keys

DENSE_SV_BYTES = 256 << 20


@dataclass
class ScanModel:
    """The models of all binary problems, sharing one support-vector matrix.

    Attributes:
        kernel: resolved kernel.
        support_vectors: union of the problems' SVs (float32 ndarray or CSR), or None
            before the first solve (then every row counts as a violator).
        coef: (n_sv, n_problems) dual coefficients (zero where a row is not a problem's SV).
        intercept: (n_problems,).
    """

    kernel: Kernel
    support_vectors: object | None
    coef: np.ndarray
    intercept: np.ndarray


@dataclass
class ProblemRequest:
    """What the scan should report for one binary problem.

    Attributes:
        positive: class index labelled +1 (the others are -1).
        exclude: sorted global indices of the working set (never violators).
        n_draw: how many smallest-key violators to return.
        stream: random stream of the keys.
        tol: margin tolerance: a violator has y f(x) < 1 - tol.
    """

    positive: int
    exclude: np.ndarray
    n_draw: int
    stream: int
    tol: float = 1e-3


@dataclass
class ProblemScan:
    """A partition's answer for one problem (additive over partitions, except the draw)."""

    n_violators: int = 0
    n_errors: int = 0           # rows with y f(x) < 0
    hinge_pos: float = 0.0      # sum of max(0, 1 - y f) over +1 rows
    hinge_neg: float = 0.0      # same over -1 rows
    min_margin: float = np.inf
    keys: np.ndarray = field(default_factory=lambda: np.empty(0))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))


def _dense_svs(sv):
    if sv is not None and sp.issparse(sv) and sv.shape[0] * sv.shape[1] * 4 <= DENSE_SV_BYTES:
        return np.ascontiguousarray(sv.toarray(), dtype=np.float32)
    return sv


def scan_partition(part: Partition, model: ScanModel,
                   requests: list[ProblemRequest]) -> list[ProblemScan]:
    """Scan one partition for the violators of every problem (runs on a worker).

    Args:
        part: the partition.
        model: the current models (see ScanModel).
        requests: one ProblemRequest per problem (None for a finished problem).

    Returns:
        one ProblemScan per request (None where the request is None).
    """
    n = part.n_rows
    active = [p for p, r in enumerate(requests) if r is not None]
    if model.support_vectors is None:
        f = np.zeros((n, len(requests)))
    else:
        f = decision_values(part.X, _dense_svs(model.support_vectors), model.coef[:, active],
                            model.intercept[active], model.kernel)
        f = f.reshape(n, len(active))
    out: list[ProblemScan | None] = [None] * len(requests)
    gidx = np.arange(part.offset, part.offset + n, dtype=np.int64)
    for col, p in enumerate(active):
        req = requests[p]
        y = np.where(part.cls == req.positive, 1.0, -1.0)
        if model.support_vectors is None:
            yf = np.zeros(n)
        else:
            yf = y * f[:, col]
        hinge = np.maximum(0.0, 1.0 - yf)
        outside = np.ones(n, dtype=bool)
        if len(req.exclude):
            lo, hi = np.searchsorted(req.exclude, [part.offset, part.offset + n])
            outside[req.exclude[lo:hi] - part.offset] = False
        viol = np.flatnonzero(outside & (yf < 1.0 - req.tol))
        keys = row_keys(req.stream, part.offset, n)[viol]
        pick = smallest_keys(keys, req.n_draw)
        out[p] = ProblemScan(
            n_violators=len(viol),
            n_errors=int((yf < 0).sum()),
            hinge_pos=float(hinge[y > 0].sum()),
            hinge_neg=float(hinge[y < 0].sum()),
            min_margin=float(yf.min()) if n else np.inf,
            keys=keys[pick],
            rows=gidx[viol[pick]],
        )
    return out
