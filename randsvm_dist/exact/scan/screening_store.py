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
"""

from __future__ import annotations

import threading

import numpy as np

# At most this many bytes of bounds per worker process, and at most MEMORY_SHARE of the
# worker's memory limit.
MAX_BYTES = 256 << 20
MEMORY_SHARE = 0.1

_lock = threading.Lock()
_store: dict[tuple[str, int], tuple[int, np.ndarray]] = {}


def capacity(limit: int | None) -> int:
    """The most bytes of bounds a worker with memory limit ``limit`` (None or 0: none)
    keeps."""
    return int(min(MAX_BYTES, MEMORY_SHARE * limit)) if limit else MAX_BYTES


def _capacity() -> int:
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        limit = None
    return capacity(limit)


def put(run: str, partition: int, iteration: int, lower: np.ndarray) -> bool:
    """Keep the bounds of (run, partition) after scan ``iteration``, replacing older ones.

    Bounds of other runs are evicted first, oldest first, when the store would exceed its
    capacity; returns False (nothing kept) if the bounds do not fit even then.
    """
    capacity = _capacity()
    with _lock:
        _store.pop((run, partition), None)
        used = sum(a.nbytes for _, a in _store.values())
        for key in [k for k in _store if k[0] != run] + [k for k in _store if k[0] == run]:
            if used + lower.nbytes <= capacity:
                break
            used -= _store.pop(key)[1].nbytes
        if used + lower.nbytes > capacity:
            return False
        _store[(run, partition)] = (iteration, lower)
        return True


def get(run: str, partition: int, iteration: int) -> np.ndarray | None:
    """The bounds of (run, partition) from scan ``iteration``, or None if not kept here."""
    with _lock:
        found = _store.get((run, partition))
    if found is None or found[0] != iteration:
        return None
    return found[1]


def drop(run: str) -> int:
    """Forget every bound of ``run`` (the run has ended); returns how many were dropped."""
    with _lock:
        keys = [k for k in _store if k[0] == run]
        for k in keys:
            del _store[k]
    return len(keys)
