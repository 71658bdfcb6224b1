"""The numba kernels an exact fit compiles, compiled ahead while the local cluster starts.

A first fit after install spends most of its extra time in numba compiling (every kernel
is then cached on disk, ``cache=True``). The embedded default's workers run :func:`warm`
in a background thread of their preload (``app.worker_preload``), so the kernels compile
while the cluster starts and the data are placed. The warm SMO's kernels
(``solvers.warm_smo*``) and the fused RBF sums (``numerics.rbf_fused``) declare their one
signature each and compile it when their module is imported, so warming them is importing
them: exactly what a fit runs, nothing run on data, no BLAS thread limits touched; with a
warm cache it only loads them (a fraction of a second). LIBSVM's own CSR conversion
(``libsvm.svm``) is jitted without a cache, so it compiles in every process: warming it
(on eight rows) hides that too.

Processes warming at once split the groups: a process takes a group's lock file
(``fcntl.flock``) or leaves the group to its holder and comes back to it at the end, when
it loads what the other compiled. A task importing a module that this process's warm-up
is importing waits for that import (Python's import lock), compiling nothing twice.
Nothing here changes what a fit computes; a failing warm-up is ignored (the fit compiles
on first use, as without it).
"""

from __future__ import annotations

import fcntl
import importlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _importer(module: str) -> Callable[[], None]:
    """A group that imports ``module`` (which compiles or loads its kernels)."""
    return lambda: importlib.import_module(module)


def _libsvm_csr() -> None:
    """LIBSVM's CSR-to-problem conversion (``libsvm.svm``, jitted without a cache)."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_problem

    X = np.random.default_rng(0).standard_normal((8, 2))
    svm_problem(np.array([1.0, -1.0] * 4), sp.csr_matrix(X))


# name: what compiles; the exact path's groups, most expensive first
EXACT_GROUPS: dict[str, Callable[[], None]] = {
    "warm_smo": _importer("randsvm_dist.solvers.warm_smo"),
    "rbf_fused": _importer("randsvm_dist.numerics.rbf_fused"),
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

