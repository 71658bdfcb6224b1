"""The embedded default cluster: a local cluster of single-threaded worker processes, one
per core (``engine.launcher``), started once per Python process on first use and closed at
exit; what ``client=None`` resolves to when no other cluster is known
(``engine.client.dask_client``)."""

from __future__ import annotations

import atexit
import logging
import threading

from randsvm_dist.engine.launcher import LocalProcesses, launch, wait_for_workers
from randsvm_dist.engine.probe import CONNECT_TIMEOUT

log = logging.getLogger("randsvm_dist")


class _Embedded:
    """The process-wide embedded cluster: started on first use, closed at exit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: LocalProcesses | None = None
        self.client = None

    def get(self, n_workers: int | None = None):
        with self.lock:
            if self.client is not None and self.client.status == "running" \
                    and self.procs.scheduler.poll() is None:
                return self.client
            self._close()
            from distributed import Client

            procs = launch(n_workers)
            try:
                client = Client(procs.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
                wait_for_workers(client, procs.n_workers)
            except BaseException:
                procs.close()
                raise
            self.procs, self.client = procs, client
            log.info("started a local Dask cluster: %d workers x 1 thread at %s",
                     procs.n_workers, procs.address)
            return client

    def close(self) -> None:
        with self.lock:
            self._close()

    def _close(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - closing at exit: the scheduler may be gone
                pass
        if self.procs is not None:
            self.procs.close()
        self.procs = self.client = None


_EMBEDDED = _Embedded()
atexit.register(_EMBEDDED.close)


def embedded_client(n_workers: int | None = None):
    """The embedded default's client (starting the cluster if none runs).

    Args:
        n_workers: worker processes when starting (default: one per core).

    Returns:
        a ``distributed.Client`` that is not made Dask's default client.

    Raises:
        ClusterError: the cluster did not start.
    """
    return _EMBEDDED.get(n_workers)


def embedded_running() -> bool:
    """Whether the embedded default runs (a fit that needed it, or ``embedded_client``,
    started it)."""
    return _EMBEDDED.client is not None


def close_embedded() -> None:
    """Stop the embedded default if it runs (it is also stopped at exit)."""
    _EMBEDDED.close()
