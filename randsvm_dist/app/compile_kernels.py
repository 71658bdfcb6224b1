"""Every numba kernel of the package compiled into numba's disk cache ahead of the first fit
(``randsvm-dist compile``).

A fit compiles each numba kernel it runs the first time that kernel runs on a machine, and
loads it from numba's disk cache (``cache=True``) ever after. Measured on 2 cores
(``benchmarks/bench_first_fit.py``): the exact path's kernels take ~10 s of compiling, of
which the embedded cluster's start hides part (``app.warmup``); a streaming learner's 1.4-7
s, against warm fits of 0.8-13 s. :func:`compile_kernels` compiles all of them once, in
``processes`` processes at once that share the work as the embedded cluster's workers do
(``app.warmup``: a lock file per group, each group compiled by one process):

- the exact path's groups (``warmup.EXACT_GROUPS``: the warm SMO in parts, the fused RBF
  sums);
- one group per streaming learner (``streaming.LEARNERS``), which fits it with small
  settings on generated rows, dense and CSR, with and without sample weights: the learners
  convert every input to float32 rows, so these are the specialisations their fits compile
  (``tests/cli/test_compile_command.py`` checks dense and CSR, binary and multi-class fits);
  the small budget and look-ahead send the fits through budget maintenance and ball
  merges.

Then this process loads every group itself and counts the kernels numba still had to
compile (``CompileReport.compiled_after``: 0 when the cache holds them all; LIBSVM's own
CSR conversion is jitted without a cache and compiles in every process, so it is not
counted). Nothing runs on a user's data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from randsvm_dist.app.warmup import EXACT_GROUPS, Group, warm

#: rows of each generated set a streaming learner is fitted on
WARM_UP_ROWS = 600
#: the small settings that take each streaming learner through its budget or ball paths
_SMALL_SETTINGS = {"bsgd": {"budget": 16}, "streamsvm": {"lookahead": 50},
                   "blurred_ball": {"lookahead": 50}, "ramp": {}}
#: seconds the compiling processes may take before they are stopped (a hung compile)
COMPILE_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class CompileReport:
    """What :func:`compile_kernels` did.

    Attributes:
        seconds: wall seconds, from start to the end of the check.
        processes: the processes that compiled at once.
        groups: the groups' names, in the order tried.
        compiled_after: kernels of this package that the check in this process still
            compiled (0: every one was loaded from numba's cache).
        cache_dir: numba's cache directory when ``NUMBA_CACHE_DIR`` names one, else None
            (each module's ``__pycache__``, or numba's per-user directory when that is
            not writable).
    """

    seconds: float
    processes: int
    groups: tuple[str, ...]
    compiled_after: int
    cache_dir: str | None


def _rows(n: int, sparse: bool, seed: int):
    """(X, y, sample_weight): n generated rows of two classes, dense or CSR, float64 (as a
    user passes them; the learners convert)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, 6)) + 0.5 * y[:, None]
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.5, X, 0.0))
    return X, y, rng.uniform(0.5, 2.0, n)


def _fit_learner(name: str) -> Callable[[], None]:
    """A group that fits the streaming learner ``name`` on the generated sets."""

    def run() -> None:
        from randsvm_dist.streaming import LEARNERS

        for seed, sparse in enumerate((False, True)):
            X, y, w = _rows(WARM_UP_ROWS, sparse, seed)
            for weights in (None, w):
                LEARNERS[name](random_state=0, **_SMALL_SETTINGS.get(name, {})).fit(
                    X, y, sample_weight=weights)

    return run


def streaming_groups() -> dict[str, Group]:
    """One group per streaming learner (``streaming.LEARNERS``): it only fills numba's
    cache, so a process that finds it taken does not run it again."""
    from randsvm_dist.streaming import LEARNERS

    return {f"stream_{name}": Group(_fit_learner(name), loads=False) for name in LEARNERS}


def all_groups() -> dict[str, Group]:
    """The exact path's groups, then the streaming learners'."""
    return {**EXACT_GROUPS, **streaming_groups()}


def compile_kernels(processes: int | None = None,
                    timeout: float = COMPILE_TIMEOUT_S) -> CompileReport:
    """Compile every numba kernel of the package into numba's disk cache, then check.

    Args:
        processes: processes compiling at once (default: the machine's cores, at most the
            number of groups).
        timeout: seconds before the compiling processes are stopped.

    Returns:
        CompileReport.

    Raises:
        RuntimeError: a compiling process failed or took longer than ``timeout``.
    """
    t0 = time.perf_counter()
    groups = all_groups()
    count = processes or min(os.cpu_count() or 1, len(groups))
    children = [subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid())],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for _ in range(count)]
    failed = []
    for child in children:
        try:
            _, err = child.communicate(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
        except subprocess.TimeoutExpired:
            child.kill()
            failed.append(f"a compiling process took more than {timeout:g} s")
            continue
        if child.returncode:
            lines = err.decode(errors="replace").strip().splitlines()
            failed.append(lines[-1] if lines else f"exit code {child.returncode}")
    if failed:
        raise RuntimeError("compiling the kernels failed: " + "; ".join(failed))
    compiled = _count_compiles(lambda: _run_all(groups))
    return CompileReport(time.perf_counter() - t0, count, tuple(groups), compiled,
                         os.environ.get("NUMBA_CACHE_DIR"))


def _run_all(groups: dict[str, Group]) -> None:
    """Every group in this process, failures raised (the check)."""
    for group in groups.values():
        group.run()


class CompileCounter:
    """Counts numba's compilations of this package's kernels while it listens
    (``listen``): ``kernels`` (one per kernel and signature compiled; a kernel whose
    compilation compiles a callee counts both) and ``seconds`` (their wall time, nested
    ones once). Loading a kernel from numba's cache is no compilation."""

    def __init__(self) -> None:
        self.kernels, self.seconds, self._open = 0, 0.0, []

    def listen(self):
        """Register with numba's compile events; returns the listener (for
        ``numba.core.event.unregister("numba:compile", ...)``)."""
        from numba.core import event

        counter = self

        class Listener(event.Listener):
            def on_start(self, ev) -> None:
                counter._open.append(time.perf_counter())

            def on_end(self, ev) -> None:
                t0 = counter._open.pop()
                disp = ev.data.get("dispatcher")
                if getattr(disp, "__module__", "").startswith("randsvm_dist"):
                    counter.kernels += 1
                if not counter._open:
                    counter.seconds += time.perf_counter() - t0

        listener = Listener()
        event.register("numba:compile", listener)
        return listener


def _count_compiles(run: Callable[[], None]) -> int:
    """The kernels of this package numba compiles while ``run`` runs."""
    from numba.core import event

    counter = CompileCounter()
    listener = counter.listen()
    try:
        run()
    finally:
        event.unregister("numba:compile", listener)
    return counter.kernels


def main(argv: list[str]) -> int:
    """``PARENT_PID``: compile the groups this process gets (``app.warmup.warm``), stopping
    early if the parent ends."""
    from randsvm_dist.engine.parent_watch import watch_parent

    watch_parent(int(argv[0]), lambda: os._exit(0))
    warm(all_groups())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
