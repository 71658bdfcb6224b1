"""The threads of a solve: the count that minimises a parallel step's time on this host.

``step_threads``: a solver's parallel loops each do one step's work
w (a kernel row or column: rows x (features + KERNEL_ROW_TERMS) terms) and then every
thread waits for the slowest; that wait grows with the threads, so a step with p threads
costs about w / p + sync x (p - 1)^2 terms. The sync costs come from the solve times of
the 16-core reference fits (``exact.cost_model``): the warm SMO's numba kernel rows were
fastest at 2-4 threads on 16-22k rows and 5-7x slower at 16; LIBSVM's OpenMP kernel
columns kept gaining up to 16 threads on 22k rows x 20 features. The reference hardly
tells LIBSVM's apart (its fit is within 2% from 0 to 400 terms): 100, about an OpenMP
barrier, which leaves 11-15 of 16 threads to the reference's 22-25k-row solves.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

KERNEL_ROW_TERMS = 8


def host_cores() -> int:
    """Cores this process may run on: its CPU affinity (a worker pinned with ``taskset``
    has the cores it was given), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def step_threads(work_per_step: float, offered: int, sync_terms: float) -> int:
    """Threads for a solve whose parallel loops each do ``work_per_step`` terms.

    The p in 1..min(offered, host_cores()) minimising w / p + sync_terms x (p - 1)^2
    (a step's share per thread plus the wait for the slowest thread): more threads only
    while each still has enough work, never more than the host's cores.

    Args:
        work_per_step: terms of one parallel step (rows x (features + KERNEL_ROW_TERMS)).
        offered: threads the caller offers (``exact.placement_of_solves``).
        sync_terms: the backend's wait per step and extra thread, in terms.

    Returns:
        the thread count (at least 1).
    """
    return best_threads(work_per_step, min(int(offered), host_cores()), sync_terms)


def best_threads(work_per_step: float, most: int, sync_terms: float) -> int:
    """The p in 1..most minimising work_per_step / p + sync_terms x (p - 1)^2 (the rule of
    ``step_threads`` without the host's cap, for models of other machines)."""
    w = max(float(work_per_step), 0.0)
    costs = [w / p + sync_terms * (p - 1) ** 2 for p in range(1, max(1, int(most)) + 1)]
    return 1 + int(np.argmin(costs))


def kernel_row_terms(X) -> float:
    """Terms of one kernel row or column over the rows of X: rows x (stored features per
    row + KERNEL_ROW_TERMS)."""
    n = X.shape[0]
    per_row = X.nnz / max(n, 1) if sp.issparse(X) else X.shape[1]
    return float(n) * (per_row + KERNEL_ROW_TERMS)
