"""The numba kernels an exact fit compiles, compiled ahead while the local cluster starts.

A first fit after install spends most of its extra time in numba compiling (every kernel
is then cached on disk, ``cache=True``). The embedded default's workers run :func:`warm`
in a background thread of their preload (``app.worker_preload``), so the kernels compile
while the cluster starts and the data are placed. (The calling process does not: an exact
fit compiles nothing there, and a warm-up thread would change its BLAS thread limits
(``threadpoolctl``, process-wide) under its feet.) Each group below runs the library's
own entry point on a few rows of the dtypes and layouts a fit passes, so it compiles
exactly the specialisations the fit uses; with a warm cache it only loads them
(milliseconds). LIBSVM's own CSR conversion (``libsvm.svm``) is jitted without
a cache, so it compiles in every process: warming it hides that too.

Processes warming at once split the groups: a process takes a group's lock file
(``fcntl.flock``) or leaves the group to its holder and comes back to it at the end, when
it loads what the other compiled. Nothing here changes what a fit computes; a failing
warm-up is ignored (the fit compiles on first use, as without it).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _tiny_rows(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Eight float32 rows of d features (C order, as the driver holds them), two classes."""
    X = np.random.default_rng(0).standard_normal((8, d)).astype(np.float32)
    return X, np.array([1, -1] * 4, dtype=np.float64)


def _rbf_decision_values() -> None:
    """``numerics.rbf_fused``: the direct kernel (<= 4 features), the GEMM one (dense and
    CSR rows)."""
    import scipy.sparse as sp

    from randsvm_dist.numerics.kernels import Kernel, decision_values

    kernel = Kernel("rbf", 0.5)
    for d in (2, 8):
        X, y = _tiny_rows(d)
        decision_values(X, X[:3], y[:3], 0.0, kernel)
        if d > 4:
            decision_values(sp.csr_matrix(X), sp.csr_matrix(X[:3]), y[:3], 0.0, kernel)


def _warm_smo() -> None:
    """``solvers.warm_smo``: a warm-started re-solve, with and without per-row bounds."""
    from randsvm_dist.numerics.kernels import Kernel
    from randsvm_dist.solvers.libsvm_adapter import SolverParams
    from randsvm_dist.solvers.warm_smo import solve_warm

    X, y = _tiny_rows(2)
    params = SolverParams(1.0, Kernel("rbf", 0.5))
    alpha0 = np.full(len(y), 0.5)
    solve_warm(X, y, params, alpha0)
    solve_warm(X, y, params, alpha0, row_C=np.ones(len(y)))


def _libsvm_csr() -> None:
    """LIBSVM's CSR-to-problem conversion (``libsvm.svm``, jitted without a cache)."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_problem

    X, y = _tiny_rows(2)
    svm_problem(y, sp.csr_matrix(X, dtype=np.float64))


# name: what compiles; the exact path's groups, most expensive first
EXACT_GROUPS: dict[str, Callable[[], None]] = {
    "warm_smo": _warm_smo,
    "rbf_fused": _rbf_decision_values,
    "libsvm_csr": _libsvm_csr,
}


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"randsvm-warmup-{os.getuid()}"
    path.mkdir(exist_ok=True)
    return path


def _attempt(group: Callable[[], None]) -> None:
    try:
        group()
    except Exception:  # noqa: BLE001 - a warm-up only: the fit reports real errors
        pass


def _run_locked(group: Callable[[], None], lock: Path, wait: bool) -> bool:
    """Run group holding lock; False (not run) when another process holds it and not wait."""
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        _attempt(group)
        return True


def warm(groups: dict[str, Callable[[], None]] | None = None) -> None:
    """Compile (or load from numba's cache) the kernels of ``groups``, sharing the work
    with other processes warming at the same time (see the module doc).

    Args:
        groups: name -> a function running the kernels on a few rows (default: the exact
            path's, ``EXACT_GROUPS``).
    """
    groups = EXACT_GROUPS if groups is None else groups
    try:
        locks = _lock_dir()
    except OSError:  # no shared temporary directory: every process warms everything
        for group in groups.values():
            _attempt(group)
        return
    later = [name for name, group in groups.items()
             if not _run_locked(group, locks / f"{name}.lock", wait=False)]
    for name in later:
        _run_locked(groups[name], locks / f"{name}.lock", wait=True)

