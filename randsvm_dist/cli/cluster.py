"""``randsvm-dist cluster start|status|stop``: one local cluster shared by many commands.

``eval "$(randsvm-dist cluster start)"`` starts a scheduler and workers in the background
(loopback only) and exports ``RANDSVM_DIST_SCHEDULER``, which every later command (and
``client=None`` in Python) then uses instead of starting its own;
``eval "$(randsvm-dist cluster stop)"`` stops it and unsets the variable. The cluster's
address, process ids and log live in ``$XDG_CACHE_HOME/randsvm-dist/cluster.json`` (default
``~/.cache``), or under ``$RANDSVM_DIST_STATE_DIR``; ``start`` and ``stop`` hold a lock file
there, so two of them at once cannot both start (or half stop) a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from randsvm_dist.cli.options import add_output, emit
from randsvm_dist.engine.scheduler_env import SCHEDULER_ENV
from randsvm_dist.exceptions import ClusterError, OutputBusyError

STOP_TIMEOUT = 30.0
HELP = ('eval "$(randsvm-dist cluster start)" starts a scheduler and workers in the '
        f"background (loopback only) and exports {SCHEDULER_ENV}, which every later command "
        "then uses; eval \"$(randsvm-dist cluster stop)\" stops them and unsets it. State "
        "and log: $RANDSVM_DIST_STATE_DIR, default $XDG_CACHE_HOME/randsvm-dist "
        "(~/.cache/randsvm-dist).")


def state_dir() -> Path:
    """Where ``cluster start`` keeps its state file and log."""
    explicit = os.environ.get("RANDSVM_DIST_STATE_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "randsvm-dist"


def _state_file() -> Path:
    return state_dir() / "cluster.json"


class _StateLock:
    """The state directory's lock: one ``cluster start``/``stop`` at a time."""

    def __enter__(self):
        from randsvm_dist.data.publish import OutputLock

        state_dir().mkdir(parents=True, exist_ok=True)
        self.lock = OutputLock(_state_file())
        try:
            self.lock.acquire()
        except OutputBusyError:
            raise ClusterError(f"another 'randsvm-dist cluster start/stop' is running on "
                               f"{state_dir()} (lock {self.lock.path}); wait for it") from None
        return self

    def __exit__(self, *exc) -> None:
        self.lock.release()


def _read_state() -> dict | None:
    try:
        return json.loads(_state_file().read_text())
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise ClusterError(f"{_state_file()} is not a cluster state file ({e}); delete "
                           "it") from None


def _status(address: str) -> dict | None:
    """The running cluster's facts, or None when nothing answers at ``address``."""
    from randsvm_dist.engine.probe import connect

    try:
        client = connect(address)
    except ClusterError:
        return None
    with client:
        info = client.scheduler_info()
        workers = info.get("workers", {})
        port = info.get("services", {}).get("dashboard")
        return {"address": address, "workers": len(workers),
                "threads": sum(w.get("nthreads", 0) for w in workers.values()),
                "dashboard": f"http://127.0.0.1:{port}/status" if port else None}


def cmd_start(args: argparse.Namespace) -> int:
    """Start the background cluster (or find the one running); print its ``export`` line
    for the shell.

    Raises:
        ClusterError: it did not start.
    """
    with _StateLock():
        return _start(args)


def _start(args: argparse.Namespace) -> int:
    from randsvm_dist.engine.launcher import launch, wait_for_workers
    from randsvm_dist.engine.probe import connect

    state = _read_state()
    if state and _status(state["address"]):  # the running one, for eval in a new shell
        print(f"a local Dask cluster already runs at {state['address']} (randsvm-dist "
              "cluster stop, to start another)", file=sys.stderr)
        print(f"export {SCHEDULER_ENV}={state['address']}")
        return 0
    state_dir().mkdir(parents=True, exist_ok=True)
    log_path = state_dir() / "cluster.log"
    procs = launch(args.workers, args.threads_per_worker, log_path=log_path, detach=True)
    try:
        with connect(procs.address) as client:
            wait_for_workers(client, procs.n_workers)
    except BaseException:
        procs.close()
        raise
    state = {"address": procs.address, "pids": procs.pids(), "log": str(log_path)}
    _state_file().write_text(json.dumps(state, indent=2) + "\n")
    status = _status(procs.address) or {}
    print(f"started a local Dask cluster at {procs.address}: {status.get('workers')} "
          f"workers, dashboard {status.get('dashboard')}, log {log_path}", file=sys.stderr)
    print(f"export {SCHEDULER_ENV}={procs.address}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print whether the cluster runs, its address, workers and dashboard.

    Returns:
        0 if it runs, 1 if not.
    """
    state = _read_state()
    address = os.environ.get(SCHEDULER_ENV) or (state or {}).get("address")
    status = _status(address) if address else None
    result = status or {"address": address, "workers": 0, "threads": 0, "dashboard": None}
    result["running"] = status is not None
    if status:
        summary = (f"running at {status['address']}: {status['workers']} workers, "
                   f"{status['threads']} threads, dashboard {status['dashboard']}")
    else:
        summary = "no cluster running" + (f" at {address}" if address else "")
    emit(args, result, summary)
    return 0 if status else 1


def cmd_stop(args: argparse.Namespace) -> int:
    """Shut the cluster down (scheduler and workers), forget it, and print
    ``unset RANDSVM_DIST_SCHEDULER`` for ``eval``.

    Returns:
        0 when it was running and is stopped; 1 when nothing answered at its address (its
        leftover processes, if any, are stopped and the state is removed all the same).

    Raises:
        ClusterError: no cluster was started with ``cluster start``.
    """
    with _StateLock():
        return _stop(args)


def _stop(args: argparse.Namespace) -> int:
    import psutil

    from randsvm_dist.engine.probe import connect

    state = _read_state()
    if state is None:
        print(f"unset {SCHEDULER_ENV}")
        raise ClusterError(f"no cluster started with 'randsvm-dist cluster start' "
                           f"({_state_file()} not found)")
    answered = True
    try:
        with connect(state["address"]) as client:
            client.shutdown()
    except (ClusterError, OSError):
        answered = False  # already gone: make sure its processes are, too
    procs = []
    for pid in state.get("pids", []):
        try:
            proc = psutil.Process(pid)
            if any("distributed.cli" in part for part in proc.cmdline()):
                procs.append(proc)
        except psutil.Error:
            continue
    for proc in procs:
        proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=STOP_TIMEOUT)
    for proc in alive:
        proc.kill()
    _state_file().unlink(missing_ok=True)
    print(f"unset {SCHEDULER_ENV}")  # for eval "$(randsvm-dist cluster stop)"
    if not answered:
        print(f"randsvm-dist: no cluster answered at {state['address']} (it had stopped or "
              f"died); {len(procs)} leftover process(es) stopped, state removed",
              file=sys.stderr)
        return 1
    print(f"stopped the cluster at {state['address']}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add the ``cluster`` command group."""
    p = subparsers.add_parser("cluster", help="start/stop a local cluster shared by commands",
                              description=HELP)
    sub = p.add_subparsers(dest="cluster_command", required=True)
    s = sub.add_parser("start", help="start scheduler and workers in the background; prints "
                                     f"'export {SCHEDULER_ENV}=...' for eval")
    s.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: one per core)")
    s.add_argument("--threads-per-worker", type=int, default=1, metavar="T")
    s.set_defaults(func=cmd_start)
    s = sub.add_parser("status", help="is it running: address, workers, dashboard")
    add_output(s, report=False)
    s.set_defaults(func=cmd_status)
    s = sub.add_parser("stop", help="shut the cluster down; prints "
                                    f"'unset {SCHEDULER_ENV}' for eval")
    s.set_defaults(func=cmd_stop)
