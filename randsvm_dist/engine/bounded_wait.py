"""Bounded waits on the cluster: gathering results never hangs on an empty cluster.

``gather`` waits for futures in short slices. It gives up, with a ``ClusterError`` naming
what it waited for and what to do, when the cluster has had no workers for
``empty_timeout`` seconds (tasks of a cluster with no workers would wait forever) or when
``timeout`` has passed. A task that killed its workers (``KilledWorker``) is reported with
its label (e.g. the partition) and the last worker.

Defaults come from the environment: ``RANDSVM_DIST_EMPTY_TIMEOUT`` (seconds, 60) and
``RANDSVM_DIST_TIMEOUT`` (seconds; unset means no overall bound: a fit may take hours).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

from randsvm_dist.exceptions import ClusterError

POLL_SECONDS = 1.0


def _env_seconds(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ClusterError(f"{name} must be a number of seconds; got {raw!r}") from None


def n_workers(client) -> int:
    """Workers connected to the scheduler now (asks the scheduler)."""
    return len(client.scheduler_info(n_workers=-1).get("workers", {}))


def gather(client, futures: Sequence, what: str, labels: Sequence[str] | None = None, *,
           timeout: float | None = None, empty_timeout: float | None = None) -> list:
    """``client.gather(futures)`` with bounded waiting and errors that say where.

    Args:
        client: the ``distributed.Client``.
        futures: a flat sequence of futures.
        what: what the results are, for messages (e.g. "predictions of data/test").
        labels: one label per future (e.g. "partition 3"), default "task i".
        timeout: most seconds to wait in all (default ``$RANDSVM_DIST_TIMEOUT``, or none).
        empty_timeout: most seconds to wait while the cluster has no worker (default
            ``$RANDSVM_DIST_EMPTY_TIMEOUT`` or 60).

    Returns:
        the results, in order.

    Raises:
        ClusterError: a bound was reached, or a task killed its workers (``KilledWorker``).
        Exception: the exception a task raised, as it was raised.
    """
    from distributed import KilledWorker

    futures = list(futures)
    labels = list(labels) if labels is not None else [f"task {i}" for i in
                                                      range(len(futures))]
    timeout = _env_seconds("RANDSVM_DIST_TIMEOUT", None) if timeout is None else timeout
    empty_timeout = (_env_seconds("RANDSVM_DIST_EMPTY_TIMEOUT", 60.0)
                     if empty_timeout is None else empty_timeout)
    _wait_bounded(client, futures, what, timeout, empty_timeout)
    for f, label in zip(futures, labels):
        if f.status == "error":
            exc = f.exception()
            if isinstance(exc, KilledWorker):
                worker = getattr(exc.last_worker, "address", exc.last_worker)
                raise ClusterError(
                    f"{what}: {label} killed {exc.allowed_failures + 1} worker processes "
                    f"(last {worker}); each died while running it, usually out of memory. "
                    "Use smaller partitions or workers with more memory") from None
            raise exc
    return client.gather(futures)


def _all_done_event(futures: list) -> threading.Event:
    """An event set once every future is done (finished, failed or cancelled).

    It is set by the futures' own done callbacks, so a wait on it ends when the last
    future finishes (no polling interval rounds the wait up).
    """
    event, lock, remaining = threading.Event(), threading.Lock(), [len(futures)]

    def one_done(_future) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0] <= 0:
                event.set()

    if not futures:
        event.set()
    for f in futures:
        f.add_done_callback(one_done)
    return event


def _wait_bounded(client, futures: list, what: str, timeout: float | None,
                  empty_timeout: float) -> None:
    """Wait until every future is done (finished, failed or cancelled).

    Raises:
        ClusterError: ``timeout`` seconds passed, or the cluster had no worker for
            ``empty_timeout`` seconds.
    """
    t0 = time.monotonic()
    empty_since, all_done = None, _all_done_event(futures)
    while not (all_done.wait(POLL_SECONDS) or all(f.done() for f in futures)):
        now = time.monotonic()
        unfinished = sum(not f.done() for f in futures)
        address = client.scheduler.address
        if n_workers(client) == 0:
            empty_since = now if empty_since is None else empty_since
            if now - empty_since >= empty_timeout:
                raise ClusterError(
                    f"waited {now - t0:.0f} s for {what} ({unfinished} of {len(futures)} "
                    f"tasks unfinished), but the cluster at {address} has had no workers "
                    f"for {now - empty_since:.0f} s. Start workers (`dask worker "
                    f"{address}`) or find why they died, then run again (a submitted job "
                    "or a --resume run continues from its checkpoint); "
                    "RANDSVM_DIST_EMPTY_TIMEOUT sets this wait") from None
        else:
            empty_since = None
        if timeout is not None and now - t0 >= timeout:
            raise ClusterError(
                f"gave up after {timeout:.0f} s waiting for {what}: {unfinished} of "
                f"{len(futures)} tasks unfinished on {n_workers(client)} worker(s) of "
                f"{address}. Raise RANDSVM_DIST_TIMEOUT or add workers") from None
