"""Finding or starting the Dask client, in the manner of ``xgboost.dask``.

``client=None`` uses the current default client if there is one, else starts the embedded
default: a LocalCluster sized to the machine (one single-threaded worker process per core,
so each LIBSVM solve and scan keeps to one core). A scheduler address or a ``Client`` may
be given instead.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

from .exceptions import ClusterError

log = logging.getLogger("randsvm_dist")

CONNECT_TIMEOUT = "10s"


def start_local_cluster(n_workers: int | None = None, threads_per_worker: int = 1):
    """Start the embedded default: a LocalCluster of single-threaded worker processes.

    Returns:
        (cluster, client).
    """
    from distributed import Client, LocalCluster

    n = n_workers or max(1, os.cpu_count() or 1)
    cluster = LocalCluster(n_workers=n, threads_per_worker=threads_per_worker,
                           processes=True, dashboard_address=":0",
                           silence_logs=logging.WARNING)
    log.info("started a LocalCluster: %d workers x %d thread", n, threads_per_worker)
    return cluster, Client(cluster)


@contextmanager
def dask_client(client=None, security=None):
    """Yield a usable ``distributed.Client``; close only what this call started.

    Args:
        client: None (default client, else a new LocalCluster), a scheduler address
            ("tcp://host:8786"), or a Client.
        security: a ``distributed.Security`` for an address (TLS; see
            ``randsvm_dist.security``); None: Dask's configuration.

    Raises:
        ClusterError: the address cannot be reached, or the cluster has no workers.
    """
    from distributed import Client, default_client

    started = None
    if client is None:
        try:
            client = default_client()
        except ValueError:
            started = start_local_cluster()
            client = started[1]
    elif isinstance(client, str):
        try:
            client = Client(client, timeout=CONNECT_TIMEOUT, set_as_default=False,
                            security=security)
        except (OSError, TimeoutError, ValueError, TypeError) as e:  # TLS without certs
            raise ClusterError(f"cannot reach the Dask scheduler at {client!r}: {e}") from None
        started = (None, client)
    elif not isinstance(client, Client):
        raise ClusterError(f"client must be None, a scheduler address or a "
                           f"distributed.Client; got {type(client).__name__}")
    try:
        if not client.scheduler_info().get("workers"):
            try:
                client.wait_for_workers(1, timeout=30)
            except TimeoutError:
                raise ClusterError(f"the Dask cluster at {client.scheduler.address} has no "
                                   "workers (waited 30 s)") from None
        yield client
    finally:
        if started is not None:
            cluster, c = started
            c.close()
            if cluster is not None:
                cluster.close()


def _identity(obj):
    return obj


def put(client, obj):
    """Ship an object to the workers as a recomputable task.

    Unlike ``client.scatter``, whose data is lost with the workers holding it, the object
    travels inside the task itself, so after a worker dies Dask can rebuild it and every
    task that depends on it.

    Returns:
        a Future of the object.
    """
    return client.submit(_identity, obj, pure=False)
