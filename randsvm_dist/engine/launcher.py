"""Starting a local Dask cluster: a scheduler and its workers as separate programs.

The scheduler and workers are ``python -m distributed.cli.dask_scheduler`` /
``dask_worker`` processes, not ``multiprocessing`` children of the caller, so starting them
works wherever Python runs: a script without a ``__main__`` guard, ``python -``,
``python -c``, IPython/Jupyter, a Dask worker. The caller's environment is left as it was
(the worker processes set their own ``OMP_NUM_THREADS=1``), and everything, the dashboard
included, listens on 127.0.0.1 only; the workers run without Dask's statistical profiler
unless ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED`` says otherwise. Used by the embedded
default (``engine.embedded``) and by ``randsvm-dist cluster start``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from randsvm_dist.engine.parent_watch import PARENT_PID_ENV
from randsvm_dist.exceptions import ClusterError

LOOPBACK = "127.0.0.1"
PROFILER_ENV = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"
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
    children, and Dask's worker profiler off unless ``PROFILER_ENV`` is set."""
    env = dict(os.environ)
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    extra = [p for p in sys.path
             if p and os.path.isdir(p) and not any(p.startswith(x) for x in prefixes)]
    paths = [*env.get("PYTHONPATH", "").split(os.pathsep), *extra]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    env[PARENT_PID_ENV] = str(os.getpid())  # an embedded scheduler stops when this is gone
    # Dask's statistical profiler samples every worker thread's stack 100 times a second,
    # taking the GIL from the solve's and scan's threads: off unless the caller set it
    # (ringnorm 3e5 on 2 workers: 0.6-0.9 s of a ~15.5 s fit, in its scans and warm solve).
    env.setdefault(PROFILER_ENV, "False")
    return env


def _commands(n: int, threads_per_worker: int, scheduler_file: Path, detach: bool,
              memory_limit: str) -> tuple[list[str], list[str]]:
    """The scheduler's and the workers' command lines (see ``launch``)."""
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
    if not detach:  # the nannies (in the worker launcher, this process's child) stop with
        # this process too, their workers with them, busy or not (the scheduler's end alone
        # left busy workers running for tens of seconds)
        worker_cmd += ["--preload-nanny", str(_PARENT_WATCH)]
    return scheduler_cmd, worker_cmd


def _scheduler_address(scheduler_file: Path, procs: LocalProcesses) -> str:
    """Wait for the scheduler to write its address to ``scheduler_file``.

    Raises:
        ClusterError: a process exited, or START_TIMEOUT passed (with their log).
    """
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if procs.scheduler.poll() is not None or procs.workers.poll() is not None:
            raise ClusterError("the local Dask cluster exited while starting:\n"
                               + _log_tail(procs.log_path))
        if time.monotonic() > deadline:
            raise ClusterError(f"the local Dask scheduler did not start in "
                               f"{START_TIMEOUT:.0f} s:\n" + _log_tail(procs.log_path))
        try:
            return json.loads(scheduler_file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)


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
            the scheduler and the workers' nannies stop when this process ends, even if
            killed (``engine.parent_watch``), and the workers with their nannies.
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
    scheduler_cmd, worker_cmd = _commands(n, threads_per_worker, scheduler_file, detach,
                                          memory_limit)
    with open(log_path, "ab") as out:
        popen = dict(stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                     start_new_session=detach, env=_child_environ())
        scheduler = subprocess.Popen(scheduler_cmd, **popen)
        workers = subprocess.Popen(worker_cmd, **popen)
    procs = LocalProcesses("", scheduler, workers, log_path, n, [scheduler_file])
    if own_log and not detach:
        procs.temporary.append(log_path)
    try:
        procs.address = _scheduler_address(scheduler_file, procs)
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
