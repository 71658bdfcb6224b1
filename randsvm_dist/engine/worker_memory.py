"""What memory each Dask worker has for a fit's tasks: its limit, what it already holds,
and where Dask pauses and restarts it.

A worker started with ``--memory-limit M`` is paused by Dask when its process memory
passes ``distributed.worker.memory.pause`` x M (0.8 by default) and restarted by its
nanny past ``distributed.worker.memory.terminate`` x M (0.95). A task therefore has
``pause x M`` minus what the worker holds before it starts: the interpreter, Dask and the
modules a fit's tasks import (``baseline``, measured after importing them). Nothing here
decides how to use it (``exact.memory_plan`` does).
"""

from __future__ import annotations

import gc
import importlib
import sys
from dataclasses import dataclass

from randsvm_dist.core.current_worker import worker_address

MB = 1 << 20


@dataclass(frozen=True)
class WorkerMemory:
    """One worker's memory, in bytes.

    Attributes:
        address: the worker's address.
        limit: its ``--memory-limit`` (0: none).
        baseline: its process memory (RSS) after importing a fit's task modules.
        pause: the fraction of ``limit`` at which Dask pauses it (1.0 when pausing is off).
        terminate: the fraction at which its nanny restarts it (1.0 when off).
    """

    address: str
    limit: int
    baseline: int
    pause: float = 0.8
    terminate: float = 0.95

    @property
    def usable(self) -> int | None:
        """Bytes a task may add to the baseline before Dask pauses the worker (None: no
        limit, or one Dask neither pauses nor restarts at)."""
        if self.limit <= 0 or (self.pause >= 1.0 and self.terminate >= 1.0):
            return None
        return int(self.pause * self.limit) - self.baseline


def _fraction(value) -> float:
    """A Dask memory threshold as a fraction (``False``/None: never, 1.0)."""
    return 1.0 if value in (False, None) else float(value)


def _measure(modules: tuple[str, ...], warm: tuple = (), loaded: tuple[str, ...] = (),
             dask_worker=None) -> dict:
    """Run on a worker: import ``modules``, call the warm-up ``warm`` ((``module:function``,
    args) or empty), collect garbage, report memory (see ``worker_memory``) and whether
    the modules ``loaded`` names are all imported already."""
    import dask
    import psutil

    for name in modules:
        importlib.import_module(name)
    if warm:
        where, args = warm
        module, function = where.split(":")
        getattr(importlib.import_module(module), function)(*args)
    gc.collect()
    limit = getattr(getattr(dask_worker, "memory_manager", None), "memory_limit", None)
    return {"limit": int(limit or 0), "rss": int(psutil.Process().memory_info().rss),
            "loaded": all(name in sys.modules for name in loaded),
            "pause": _fraction(dask.config.get("distributed.worker.memory.pause", 0.8)),
            "terminate": _fraction(dask.config.get("distributed.worker.memory.terminate",
                                                   0.95))}


def worker_memory(client, modules: tuple[str, ...] = (), import_bytes: int = 0,
                  warm: tuple = ()) -> list[WorkerMemory]:
    """Every worker's memory limit and baseline, after importing ``modules`` on it and
    calling the warm-up ``warm`` (``("module:function", args)``: e.g. a tiny task that
    loads the compiled kernels a fit's tasks run, which stay in the process).

    A worker whose memory now plus ``import_bytes`` (what importing ``modules`` is
    expected to add) already passes its pause threshold is not asked to import them (the
    import itself could get it restarted): its baseline is that estimate. A worker that
    dies while importing counts as one whose baseline is its limit.

    Args:
        client: distributed.Client.
        modules: dotted module names a fit's tasks import (counted in the baseline).
        import_bytes: the memory importing ``modules`` and the warm-up are expected to add.
        warm: the warm-up, or empty.

    Returns:
        one WorkerMemory per worker, by address.
    """
    bare = client.run(_measure, (), (), tuple(modules))
    # a worker that imported the modules already (an earlier measure) holds them in its rss
    out = {a: WorkerMemory(a, m["limit"], m["rss"] + (0 if m["loaded"] else import_bytes),
                           m["pause"], m["terminate"])
           for a, m in bare.items()}
    roomy = [a for a, w in out.items() if w.usable is None or w.usable > 0]
    if modules and roomy:
        got = client.run(_measure, tuple(modules), tuple(warm), workers=roomy,
                         on_error="return")
        for a, m in got.items():
            w = out[a]
            out[a] = (WorkerMemory(a, m["limit"], m["rss"], m["pause"], m["terminate"])
                      if isinstance(m, dict) else WorkerMemory(a, w.limit, w.limit, w.pause,
                                                               w.terminate))
    return [out[a] for a in sorted(out)]


def use_system_arrow_pool() -> None:
    """In a Dask worker process, make Arrow allocate through the C library's ``malloc``.

    Arrow's default pool (mimalloc or jemalloc) keeps memory freed after a Parquet read
    for later reads instead of returning it: a worker re-reading partitions of 250,000 x
    16 float32 rows held ~70 MB more than it used. Through ``malloc``, freed memory goes
    back to the system, as the nanny's ``MALLOC_TRIM_THRESHOLD_`` asks (Dask sets it to
    64 KiB for its workers), so a worker's memory between tasks is what it holds. Outside
    a worker (the user's own process) nothing changes.
    """
    global _ARROW_POOL_SET
    if _ARROW_POOL_SET:
        return
    if worker_address() is None:
        return
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    _ARROW_POOL_SET = True


_ARROW_POOL_SET = False


def process_peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (Linux/macOS; 0 elsewhere)."""
    try:
        import resource
        import sys
    except ImportError:
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def process_rss() -> int:
    """This process's resident memory now, in bytes."""
    import psutil

    return int(psutil.Process().memory_info().rss)
