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
        ClusterError: ``timeout`` seconds passed, the cluster had no worker for
            ``empty_timeout`` seconds, every worker stayed paused at its memory limit for
            ``$RANDSVM_DIST_PAUSE_TIMEOUT`` seconds (120), or workers died more than
            ``$RANDSVM_DIST_MAX_WORKER_LOSSES`` times (twice the workers, at least 4)
            during the wait (see ``_ClusterWatch``).
    """
    t0 = time.monotonic()
    all_done = _all_done_event(futures)
    watch = _ClusterWatch(client, what, len(futures))
    while not (all_done.wait(POLL_SECONDS) or all(f.done() for f in futures)):
        now = time.monotonic()
        unfinished = sum(not f.done() for f in futures)
        address = client.scheduler.address
        watch.check(now, unfinished, empty_timeout)
        if timeout is not None and now - t0 >= timeout:
            raise ClusterError(
                f"gave up after {timeout:.0f} s waiting for {what}: {unfinished} of "
                f"{len(futures)} tasks unfinished on {n_workers(client)} worker(s) of "
                f"{address}. Raise RANDSVM_DIST_TIMEOUT or add workers") from None


class _ClusterWatch:
    """What the workers did during one wait: how long the cluster had none, how long all
    of them were paused at their memory limit, and how many died (a worker restarted by
    its nanny comes back under a new address).

    Dask retries a task whose worker died, and marks it failed (``KilledWorker``) after a
    few deaths while it ran; but a worker that dies while it only holds data, or one Dask
    pauses at its memory limit and never resumes, would keep a wait going forever. These
    bounds end it with a ``ClusterError`` naming the cause.
    """

    def __init__(self, client, what: str, n_futures: int) -> None:
        self.client, self.what, self.n_futures = client, what, n_futures
        self.t0 = time.monotonic()
        self.empty_since: float | None = None
        self.paused_since: float | None = None
        self.seen: set[str] = set()
        self.lost: list[str] = []
        self.pause_timeout = _env_seconds("RANDSVM_DIST_PAUSE_TIMEOUT", 120.0)
        self.max_losses = _env_seconds("RANDSVM_DIST_MAX_WORKER_LOSSES", None)

    def check(self, now: float, unfinished: int, empty_timeout: float) -> None:
        """Look at the workers once (every poll of the wait).

        Raises:
            ClusterError: a bound was passed.
        """
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        address = self.client.scheduler.address
        self.lost += sorted(self.seen - set(workers))
        self.seen = set(workers)
        held = f"({unfinished} of {self.n_futures} tasks unfinished)"
        if not workers:
            self.empty_since = now if self.empty_since is None else self.empty_since
            if now - self.empty_since >= empty_timeout:
                raise ClusterError(
                    f"waited {now - self.t0:.0f} s for {self.what} {held}, but the cluster "
                    f"at {address} has had no workers for {now - self.empty_since:.0f} s. "
                    f"Start workers (`dask worker {address}`) or find why they died, then "
                    "run again (a submitted job or a --resume run continues from its "
                    "checkpoint); RANDSVM_DIST_EMPTY_TIMEOUT sets this wait") from None
            return
        self.empty_since = None
        bound = self.max_losses or max(4, 2 * len(workers))
        if len(self.lost) > bound:
            raise ClusterError(
                f"{self.what} {held}: workers died {len(self.lost)} times while it ran "
                f"(last {self.lost[-1]}), usually a task past the workers' memory limit; "
                "give the workers more memory or the data smaller partitions (a --resume "
                "run continues from its checkpoint); RANDSVM_DIST_MAX_WORKER_LOSSES sets "
                "this bound") from None
        if all(w.get("status") == "paused" for w in workers.values()):
            self.paused_since = now if self.paused_since is None else self.paused_since
            if now - self.paused_since >= self.pause_timeout:
                name, info = sorted(workers.items())[0]
                rss = info.get("metrics", {}).get("memory", 0) / (1 << 20)
                limit = (info.get("memory_limit") or 0) / (1 << 20)
                raise ClusterError(
                    f"{self.what} {held}: every worker has been paused at its memory limit "
                    f"for {now - self.paused_since:.0f} s ({name}: {rss:.0f} of "
                    f"{limit:.0f} MB), so no task can run; give the workers more memory "
                    "(a --resume run continues from its checkpoint); "
                    "RANDSVM_DIST_PAUSE_TIMEOUT sets this wait") from None
        else:
            self.paused_since = None
