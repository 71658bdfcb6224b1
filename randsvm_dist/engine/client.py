"""Resolving the Dask client a call runs on, in the manner of ``xgboost.dask``, and
shipping objects to its workers.

``client=None`` resolves, in order, to: the client of the Dask worker we run in (a fit
inside a task), the current default client, the scheduler named by
``$RANDSVM_DIST_SCHEDULER`` (e.g. one ``randsvm-dist cluster start`` runs), else the
embedded default (``engine.embedded``: a local cluster started once per process).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from randsvm_dist.core.current_worker import worker_address
from randsvm_dist.engine.embedded import embedded_client
from randsvm_dist.engine.launcher import wait_for_workers
from randsvm_dist.engine.probe import connect
from randsvm_dist.engine.scheduler_env import SCHEDULER_ENV
from randsvm_dist.exceptions import ClusterError

LOST_SCHEDULER = "lost the Dask scheduler"


def lost_cluster(e: BaseException) -> ClusterError | None:
    """The ClusterError a lost scheduler or cluster shows up as, or None for anything
    else: tasks cancelled because the connection to the scheduler was lost, a closed
    comm, a closed client's event loop.

    Args:
        e: an exception that ended a call.
    """
    name = type(e).__name__
    text = str(e)
    # a client that gave up reconnecting cancels what it waited on with reason 'unknown'
    if name == "FutureCancelledError" and ("scheduler-connection-lost" in text
                                           or "reason: unknown" in text) or \
            name in ("CommClosedError", "StreamClosedError") or \
            (isinstance(e, RuntimeError) and "IOLoop is closed" in text) or \
            _closed_client_attribute(e):
        return ClusterError(f"{LOST_SCHEDULER} while the command ran ({name}: "
                            f"{text.splitlines()[0][:120] if text else 'connection closed'}): "
                            "the cluster or its scheduler stopped; start it again")
    return None


def _closed_client_attribute(e: BaseException) -> bool:
    """An AttributeError on None raised inside distributed: a client that gave up
    reconnecting to a lost scheduler closes and drops its scheduler handle, and the next
    call on it fails so ("'NoneType' object has no attribute 'address'")."""
    if not isinstance(e, AttributeError) or "'NoneType' object" not in str(e):
        return False
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and "distributed" in tb.tb_frame.f_code.co_filename


def _default_client():
    """Dask's current default client, or None."""
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


@contextmanager
def dask_client(client=None, security=None):
    """Yield a usable ``distributed.Client``; close only what this call connected.

    Args:
        client: None (see the module docstring for the order tried), a scheduler address
            ("tcp://host:8786"), or a Client.
        security: a ``distributed.Security`` for an address (TLS; see
            ``randsvm_dist.engine.tls``); None: Dask's configuration.

    Raises:
        ClusterError: the address cannot be reached, or the cluster has no workers.
    """
    from distributed import Client, worker_client

    if client is None and worker_address() is not None:
        with worker_client() as c:  # secedes from the worker's thread pool while we wait
            yield c
        return
    owned = False
    if client is None:
        client = _default_client()
    if client is None:
        address = os.environ.get(SCHEDULER_ENV)
        if address:
            client, owned = connect(address, security), True
        else:
            client = embedded_client()
    elif isinstance(client, str):
        client, owned = connect(client, security), True
    elif not isinstance(client, Client):
        raise ClusterError(f"client must be None, a scheduler address or a "
                           f"distributed.Client; got {type(client).__name__}")
    elif client.status in ("closing", "closed"):
        raise ClusterError(f"the distributed.Client passed is {client.status} (closed "
                           "clients cannot run tasks): pass an open one, a scheduler "
                           "address, or None")
    try:
        if not client.scheduler_info().get("workers"):
            wait_for_workers(client, 1, timeout=30)
        yield client
    finally:
        if owned:
            client.close()


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
