"""The numba kernels an exact fit compiles, compiled ahead while the local cluster starts.

A first fit after install spends most of its extra time in numba compiling (every kernel
is then cached on disk, ``cache=True``). The embedded default's workers run :func:`warm`
in a background thread of their preload (``app.worker_preload``), so the kernels compile
while the cluster starts and the data are placed. The warm SMO's kernels
(``solvers.warm_smo``) and the fused RBF sums (``numerics.rbf_fused``) declare their one
signature each and compile it when their module is imported, so warming them is importing
them: exactly what a fit runs, nothing run on data, no BLAS thread limits touched; with a
warm cache it only loads them (a fraction of a second). LIBSVM's own CSR conversion
(``libsvm.svm``) is jitted without a cache, so it compiles in every process: warming it
(on eight rows) hides that too.

Processes warming at once split the groups: a process takes a group's lock file
(``fcntl.flock``) or leaves the group to its holder and comes back to it at the end, when
it loads what the other compiled. The warm SMO's chain of modules compiles ~8 s in the one
process that imports it; two of its parts (``smo_rows``, ``smo_steps``: ~3-4 s each) are
compiled into numba's disk cache by two processes at once (``app.kernel_pieces``, each in a
process of its own), after which importing the warm SMO compiles only its loop
(``run_smo``) and loads the rest. Until the parts are done, an import of the chain in a
warming process (a task's, say) waits for them rather than compiling them a second time;
a task importing a module that this process's warm-up is importing waits for that import
(Python's import lock). Nothing here changes what a fit computes; a failing warm-up is
ignored (the fit compiles on first use, as without it).
"""

from __future__ import annotations

import fcntl
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from randsvm_dist.app.kernel_pieces import is_cached, run_part


def _importer(module: str) -> Callable[[], None]:
    """A group that imports ``module`` (which compiles or loads its kernels)."""
    return lambda: importlib.import_module(module)


def _libsvm_csr() -> None:
    """LIBSVM's CSR-to-problem conversion (``libsvm.svm``, jitted without a cache)."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_problem

    X = np.random.default_rng(0).standard_normal((8, 2))
    svm_problem(np.array([1.0, -1.0] * 4), sp.csr_matrix(X))


@dataclass(frozen=True)
class _Part:
    """A group compiling ``kernels`` ('package.module.function') and their callees into
    numba's disk cache in a process of its own (``app.kernel_pieces``), unless the cache
    holds them (another process compiled this part) or the warm SMO's last kernel
    (``run_smo``: the whole chain was compiled before)."""

    kernels: tuple[str, ...]

    def __call__(self) -> None:
        if not (is_cached(_SMO_LAST) or all(map(is_cached, self.kernels))):
            run_part(self.kernels)


def _part(*kernels: str) -> _Part:
    return _Part(tuple(f"randsvm_dist.solvers.warm_smo.{k}" for k in kernels))


@dataclass(frozen=True)
class Group:
    """A piece of the warm-up, run by one process at a time (its lock file).

    Attributes:
        run: compiles (or loads) the piece's kernels.
        loads: running it loads its kernels into this process (an import): a process that
            left it to another runs it after the other is done (loading what that one
            compiled); False: it only fills numba's disk cache, nothing to run again.
        after: the groups that must be done first (by whichever process), so that this one
            loads their kernels instead of compiling them a second time.
        holds: modules whose import in this process (by a task, say) waits until this
            group is done, for the same reason.
    """

    run: Callable[[], None]
    loads: bool = True
    after: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()


# name: what compiles; the exact path's groups. The warm SMO's chain (~8 s of compiling in
# one process) is cut into two parts of ~3-4 s each, compiled by two processes at once;
# whichever process then imports the warm SMO compiles only ``run_smo``, which calls them all.
_SMO_PARTS = ("smo_rows", "smo_steps")
_SMO_LAST = "randsvm_dist.solvers.warm_smo.loop.run_smo"
_SMO_FIRST = ("randsvm_dist.solvers.warm_smo.kernels",)  # every other one imports it first
EXACT_GROUPS: dict[str, Group] = {
    "smo_rows": Group(_part("cache.cache_get", "cache.cache_reset",
                            "loop._update_g_bar"), loads=False, holds=_SMO_FIRST),
    "smo_steps": Group(_part("loop._step_i", "loop._select_j",
                             "loop._shrink", "kernels._accumulate_rows"),
                       loads=False, holds=_SMO_FIRST),
    "rbf_fused": Group(_importer("randsvm_dist.numerics.rbf_fused")),
    "libsvm_csr": Group(_libsvm_csr),
    "warm_smo": Group(_importer("randsvm_dist.solvers.warm_smo.solve"), after=_SMO_PARTS),
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


def _wait_for(lock: Path) -> None:
    """Returns once no other process holds ``lock`` (its group is done or never started)."""
    _run_locked(lambda: None, lock, wait=True)


class _HeldLoader(importlib.abc.Loader):
    """A module's own loader whose ``exec_module`` first waits for ``locks`` (its import
    runs under the module's import lock, so every other thread importing it waits too)."""

    def __init__(self, loader, locks: list[Path]) -> None:
        self.loader, self.locks = loader, locks

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        for lock in self.locks:
            _wait_for(lock)
        self.loader.exec_module(module)

    def __getattr__(self, name):  # get_source, get_code, ...: the module's own loader's
        return getattr(self.loader, name)


class _HeldImports(importlib.abc.MetaPathFinder):
    """Holds the first import of a group's ``holds`` modules until that group is done. It
    never waits in ``find_spec`` (called under the interpreter's global import lock: a
    wait there would stop every import of the process) but in the loader."""

    def __init__(self, held: dict[str, list[Path]]) -> None:
        self.held = held

    def find_spec(self, name, path=None, target=None):
        if name not in self.held:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _HeldLoader(spec.loader, self.held[name])
        return spec


def warm(groups: dict[str, Group] | None = None) -> None:
    """Compile (or load from numba's cache) the kernels of ``groups``, sharing the work
    with other processes warming at the same time (see the module doc).

    Args:
        groups: name -> the group (default: the exact path's, ``EXACT_GROUPS``), in the
            order tried.
    """
    groups = EXACT_GROUPS if groups is None else groups
    try:
        locks = _lock_dir()
    except OSError:  # no shared temporary directory: every process warms everything
        for group in groups.values():
            _attempt(group.run)
        return
    held: dict[str, list[Path]] = {}
    for name, group in groups.items():
        for module in group.holds:
            held.setdefault(module, []).append(locks / f"{name}.lock")
    finder = _HeldImports(held)
    sys.meta_path.insert(0, finder)
    try:
        later = []
        for name, group in groups.items():
            for first in group.after:
                _wait_for(locks / f"{first}.lock")
            if not _run_locked(group.run, locks / f"{name}.lock", wait=False) and group.loads:
                later.append(name)
        for name in later:
            _run_locked(groups[name].run, locks / f"{name}.lock", wait=True)
    finally:
        sys.meta_path.remove(finder)
