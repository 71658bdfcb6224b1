"""Screening bounds kept on the worker that computed them, outside Dask's task graph.

A scan leaves, for every row of its partition (or row range) and every problem, the row's
decision value under the scanned models and the radius within which the true value lies
(float32, 8 bytes per row and problem); the next scan of that partition moves them by the
model's change and skips the rows they keep clear of every threshold (see
``partition.scan_partition``). Passing them as task results
would put every scan into the lineage of the next: a worker lost late in a long fit makes
Dask replay earlier scans to rebuild bounds that only save time. So the bounds stay in this
process, keyed by run and partition; the next scan is placed on the same worker, and a scan
that finds nothing (another worker, a restarted one, a resumed run) evaluates every row.
The scan's results do not depend on whether it found bounds (it screens only rows that could
not change any of them), so a hit or a miss changes the time, never the model.

Bounds are held in memory up to ``capacity`` (a tenth of the worker's memory limit, at most
MAX_BYTES); beyond it, in files in the worker's local directory (one ``.npy`` per
partition, read back whole by the next scan of that partition), while the disk keeps
DISK_RESERVE free. On data many times the workers' memory every row is screened that way:
a partition's bounds are 8 bytes a row and problem, against the 4 bytes a feature its
rows take to re-read. The files go with the run (``drop``) or with the worker's directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading

import numpy as np

# At most this many bytes of bounds in a worker's memory, and at most MEMORY_SHARE of the
# worker's memory limit; beyond that they go to its local disk.
MAX_BYTES = 256 << 20
MEMORY_SHARE = 0.1
# Bounds are not written to a disk with less than this many bytes free after the write.
DISK_RESERVE = 1 << 30

_lock = threading.Lock()
_store: dict[tuple[str, int], tuple[int, np.ndarray]] = {}
_on_disk: dict[tuple[str, int], tuple[int, str]] = {}


def capacity(limit: int | None) -> int:
    """The most bytes of bounds a worker with memory limit ``limit`` (None or 0: none)
    keeps in memory."""
    return int(min(MAX_BYTES, MEMORY_SHARE * limit)) if limit else MAX_BYTES


def _worker():
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _capacity() -> int:
    worker = _worker()
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    return capacity(limit)


def _directory(run: str) -> str:
    """This process's directory for the bounds files of ``run``: under the Dask worker's
    local directory (removed with the worker), else the system's temporary directory."""
    base = getattr(_worker(), "local_directory", None) or os.path.join(
        tempfile.gettempdir(), f"randsvm-bounds-{os.getpid()}")
    return os.path.join(base, "randsvm-bounds", run)


def _forget(key: tuple[str, int]) -> None:
    """Remove the bounds of ``key`` from memory and disk (the caller holds ``_lock``)."""
    _store.pop(key, None)
    found = _on_disk.pop(key, None)
    if found is not None:
        try:
            os.remove(found[1])
        except FileNotFoundError:
            pass


def put(run: str, partition: int, iteration: int, bounds: np.ndarray) -> bool:
    """Keep the bounds of (run, partition) after scan ``iteration``, replacing older ones.

    In memory when they fit there (bounds of other runs evicted first, oldest first), else
    in a file on the worker's local disk (other runs' files removed first when the disk
    is short).

    Returns:
        False when nothing was kept: the disk had no room for them either, or it failed.
    """
    capacity = _capacity()
    key = (run, partition)
    with _lock:
        _forget(key)
        used = sum(a.nbytes for _, a in _store.values())
        for other in [k for k in _store if k[0] != run]:
            if used + bounds.nbytes <= capacity:
                break
            used -= _store.pop(other)[1].nbytes
        if used + bounds.nbytes <= capacity:
            _store[key] = (iteration, bounds)
            return True
    return _put_on_disk(key, iteration, bounds)


def _put_on_disk(key: tuple[str, int], iteration: int, bounds: np.ndarray) -> bool:
    directory = _directory(key[0])
    try:
        os.makedirs(directory, exist_ok=True)
        if shutil.disk_usage(directory).free < bounds.nbytes + DISK_RESERVE:
            with _lock:
                for other in [k for k in _on_disk if k[0] != key[0]]:
                    _forget(other)
            if shutil.disk_usage(directory).free < bounds.nbytes + DISK_RESERVE:
                return False
        path = os.path.join(directory, f"{key[1]}.npy")
        staging = f"{path}.{threading.get_ident()}.tmp"
        with open(staging, "wb") as f:
            np.save(f, bounds, allow_pickle=False)
        os.replace(staging, path)
    except OSError:
        return False
    with _lock:
        _on_disk[key] = (iteration, path)
    return True


def get(run: str, partition: int, iteration: int) -> np.ndarray | None:
    """The bounds of (run, partition) from scan ``iteration``, or None if not kept here
    (or their file is gone)."""
    key = (run, partition)
    with _lock:
        found = _store.get(key)
        filed = _on_disk.get(key)
    if found is not None:
        return found[1] if found[0] == iteration else None
    if filed is None or filed[0] != iteration:
        return None
    try:
        return np.load(filed[1], allow_pickle=False)
    except (OSError, ValueError):
        return None


def drop(run: str) -> int:
    """Forget every bound of ``run`` (the run has ended), in memory and on disk; returns
    how many partitions' bounds were dropped."""
    with _lock:
        keys = {k for k in (*_store, *_on_disk) if k[0] == run}
        for k in keys:
            _forget(k)
    shutil.rmtree(_directory(run), ignore_errors=True)
    return len(keys)
