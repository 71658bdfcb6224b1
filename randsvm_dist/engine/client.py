"""Finding or starting the Dask client, in the manner of ``xgboost.dask``.

``client=None`` resolves, in order, to: the client of the Dask worker we run in (a fit
inside a task), the current default client, the scheduler named by
``$RANDSVM_DIST_SCHEDULER`` (e.g. one ``randsvm-dist cluster start`` runs), else the
embedded default.

The embedded default is a local cluster of single-threaded worker processes, one per core,
started once per Python process on first use and closed at exit. Its scheduler and workers
are separate programs (``python -m distributed.cli.dask_scheduler`` / ``dask_worker``), not
``multiprocessing`` children of the caller, so it works wherever Python runs: a script
without a ``__main__`` guard, ``python -``, ``python -c``, IPython/Jupyter, a Dask worker.
The caller's environment is left as it was (the worker processes set their own
``OMP_NUM_THREADS=1``), and everything, the dashboard included, listens on 127.0.0.1 only.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from randsvm_dist.engine.parent_watch import PARENT_PID_ENV
from randsvm_dist.exceptions import ClusterError

log = logging.getLogger("randsvm_dist")

CONNECT_TIMEOUT = "10s"
SCHEDULER_ENV = "RANDSVM_DIST_SCHEDULER"
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 120.0  # seconds; a loaded 2-core machine needs tens of seconds
_PARENT_WATCH = Path(__file__).with_name("parent_watch.py")


@dataclass
class LocalProcesses:
    """A scheduler and its workers running as local processes (see :func:`launch`)."""

    address: str
    scheduler: subprocess.Popen
    workers: subprocess.Popen
    log_path: Path
    n_workers: int
    temporary: list[Path] = field(default_factory=list)

    def pids(self) -> list[int]:
        """Process ids of the scheduler and of the worker launcher."""
        return [self.scheduler.pid, self.workers.pid]

    def close(self, timeout: float = 15.0) -> None:
        """Stop the workers and the scheduler together (SIGTERM to both at once, so their
        shutdowns overlap; SIGKILL after ``timeout``)."""
        for proc in (self.workers, self.scheduler):
            if proc.poll() is None:
                proc.terminate()
        for proc in (self.workers, self.scheduler):
            _terminate(proc, timeout)
        for path in self.temporary:
            path.unlink(missing_ok=True)


def _terminate(proc: subprocess.Popen, timeout: float) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _child_environ() -> dict[str, str]:
    """This process's environment, with the directories it added to ``sys.path`` (a
    notebook's ``sys.path.append``, pytest's rootdir) on the workers' ``PYTHONPATH``, so
    functions from those modules unpickle there as they would in ``multiprocessing``
    children."""
    env = dict(os.environ)
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    extra = [p for p in sys.path
             if p and os.path.isdir(p) and not any(p.startswith(x) for x in prefixes)]
    paths = [*env.get("PYTHONPATH", "").split(os.pathsep), *extra]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    env[PARENT_PID_ENV] = str(os.getpid())  # an embedded scheduler stops when this is gone
    return env


def launch(n_workers: int | None = None, threads_per_worker: int = 1, *,
           log_path: Path | None = None, detach: bool = False,
           memory_limit: str = "auto") -> LocalProcesses:
    """Start a scheduler and ``n_workers`` worker processes on this machine, loopback only.

    Args:
        n_workers: worker processes (default: one per core).
        threads_per_worker: threads per worker (1: each LIBSVM solve keeps to one core).
        log_path: where the processes write their output (default: a temporary file,
            removed with the processes unless detached).
        detach: the processes outlive this one (``randsvm-dist cluster start``); otherwise
            the scheduler stops when this process ends, even if killed, and the workers
            follow it.
        memory_limit: per worker, as ``dask worker --memory-limit`` takes it ('auto': the
            machine's memory shared out; e.g. '2GB'); a worker above 95% of it is restarted.

    Returns:
        the running processes, their scheduler reachable at ``.address``.

    Raises:
        ClusterError: the scheduler or the workers did not start (with their log).
    """
    n = n_workers or max(1, os.cpu_count() or 1)
    scheduler_file = Path(tempfile.mkstemp(prefix="randsvm-scheduler-", suffix=".json")[1])
    scheduler_file.unlink()  # the workers wait until the scheduler writes it
    own_log = log_path is None
    if own_log:
        fd, name = tempfile.mkstemp(prefix="randsvm-cluster-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    py = [sys.executable, "-m"]
    scheduler_cmd = [*py, "distributed.cli.dask_scheduler", "--host", LOOPBACK, "--port", "0",
                     "--dashboard-address", f"{LOOPBACK}:0",
                     "--scheduler-file", str(scheduler_file)]
    if not detach:
        scheduler_cmd += ["--preload", str(_PARENT_WATCH)]
    worker_cmd = [*py, "distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
                  "--nworkers", str(n), "--nthreads", str(threads_per_worker),
                  "--host", LOOPBACK, "--no-dashboard", "--dashboard-address", f"{LOOPBACK}:0",
                  "--death-timeout", "60",
                  "--memory-limit", str(memory_limit),
                  "--preload", "randsvm_dist.app.worker_preload"]  # imports while the caller works
    with open(log_path, "ab") as out:
        popen = dict(stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                     start_new_session=detach, env=_child_environ())
        scheduler = subprocess.Popen(scheduler_cmd, **popen)
        workers = subprocess.Popen(worker_cmd, **popen)
    procs = LocalProcesses("", scheduler, workers, log_path, n, [scheduler_file])
    if own_log and not detach:
        procs.temporary.append(log_path)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while not procs.address:
            if scheduler.poll() is not None or workers.poll() is not None:
                raise ClusterError("the local Dask cluster exited while starting:\n"
                                   + _log_tail(log_path))
            if time.monotonic() > deadline:
                raise ClusterError(f"the local Dask scheduler did not start in "
                                   f"{START_TIMEOUT:.0f} s:\n" + _log_tail(log_path))
            try:
                procs.address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.05)
    except BaseException:
        procs.close()
        raise
    return procs


def wait_for_workers(client, n: int, timeout: float = START_TIMEOUT) -> None:
    """Block until ``n`` workers are connected.

    Raises:
        ClusterError: they are not there after ``timeout`` seconds.
    """
    try:
        client.wait_for_workers(n, timeout=timeout)
    except TimeoutError:
        have = len(client.scheduler_info().get("workers", {}))
        raise ClusterError(f"the Dask cluster at {client.scheduler.address} has {have} of "
                           f"{n} workers after {timeout:.0f} s") from None


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


def close_embedded() -> None:
    """Stop the embedded default if it runs (it is also stopped at exit)."""
    _EMBEDDED.close()


def _default_client():
    """Dask's current default client, or None."""
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def _in_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
    except ValueError:
        return False
    return True


PROBE_TIMEOUT = 5.0  # seconds for the TCP connect and for a first answer


def split_address(address: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a scheduler address (``tcp://host:8786``, ``host:8786``).

    Raises:
        ClusterError: not of the form ``tcp://HOST:PORT`` or ``tls://HOST:PORT``.
    """
    scheme, sep, rest = str(address).partition("://")
    if not sep:
        scheme, rest = "tcp", str(address)
    host, colon, port = rest.rstrip("/").rpartition(":")
    host = host.strip("[]")
    if scheme not in ("tcp", "tls") or not colon or not host or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise ClusterError(f"{address!r} is not a Dask scheduler address; expected "
                           "tcp://HOST:PORT or tls://HOST:PORT (e.g. tcp://127.0.0.1:8786)")
    return scheme, host, int(port)


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Check, in seconds, that a Dask scheduler may answer at ``address``: something accepts
    TCP connections there and, for ``tcp://``, what answers speaks Dask's protocol (not HTTP,
    e.g. the dashboard port, nor SSH).

    Raises:
        ClusterError: naming the address and what answered (nothing, HTTP, SSH, silence).
    """
    import socket

    scheme, host, port = split_address(address)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: host {host!r} "
                           f"not found ({e.strerror})") from None
    except ConnectionRefusedError:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: nothing listens "
                           "there (connection refused); start one (randsvm-dist cluster "
                           "start) or fix --scheduler / $RANDSVM_DIST_SCHEDULER") from None
    except TimeoutError:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: no answer within "
                           f"{timeout:g} s (a firewall, or the wrong host?)") from None
    except OSError as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{e.strerror or e}") from None
    with sock:
        if scheme != "tcp":
            return  # TLS: the handshake itself is bounded by the Client's timeout
        sock.settimeout(timeout)
        try:
            first = sock.recv(8)  # a Dask scheduler speaks first: its handshake
        except TimeoutError:
            first = b""
        except OSError:
            return  # reset: let the Client report it
        if first.startswith(b"SSH-"):
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: it answered "
                               "but is not a Dask scheduler (an SSH server)")
        if first:
            return
        try:  # silent: ask it as HTTP would
            sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            reply = sock.recv(16)
        except OSError:
            reply = b""
    if reply.startswith(b"HTTP/"):
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: it answered but "
                           "is not a Dask scheduler (HTTP: a dashboard or web server?); the "
                           "scheduler's port is the one `dask scheduler` prints as "
                           "'Scheduler at', usually 8786")
    raise ClusterError(f"cannot reach the Dask scheduler at {address}: it accepts "
                       f"connections but did not answer as a Dask scheduler within "
                       f"{timeout:g} s")


def _tls_configured(security) -> bool:
    if security is not None:
        return bool(getattr(security, "tls_client_cert", None)
                    or getattr(security, "tls_ca_file", None))
    import dask

    return bool(dask.config.get("distributed.comm.tls.ca-file", None)
                or dask.config.get("distributed.comm.tls.client.cert", None))


def connect(address: str, security=None):
    """A client of the scheduler at ``address``, every step bounded: a quick TCP probe
    (:func:`probe`), then the Client's handshake within ``CONNECT_TIMEOUT``.

    Args:
        address: e.g. "tcp://host:8786" or "tls://host:8786".
        security: a ``distributed.Security`` (TLS; see ``randsvm_dist.engine.tls``); None:
            Dask's configuration.

    Raises:
        ClusterError: it cannot be reached, it is not a Dask scheduler, or TLS is asked for
            without certificates (each naming the address and what answered).
    """
    scheme, _, _ = split_address(address)
    if scheme == "tls" and not _tls_configured(security):
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: a TLS address "
                           "but no certificates were given; pass --tls-ca-file, --tls-cert "
                           "and --tls-key (or set Dask's distributed.comm.tls.* "
                           "configuration)")
    probe(address)
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False,
                      security=security)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") \
            from None


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

    if client is None and _in_worker():
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
