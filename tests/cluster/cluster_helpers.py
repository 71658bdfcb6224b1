"""Helpers of the real-cluster tests: the fixed-route fit they all run, model digests,
``randsvm-dist`` as a separate process, figures printed, a worker killed mid-run, and the
``cluster/`` recipes loaded as modules."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from services import ROOT, python_env

# one fixed route: a sampled fit (iterations, scans), LIBSVM solves; same bytes on any
# cluster (oneDAL's bytes depend on its thread count)
TRAIN = ["--C", "10", "--gamma", "1", "--sample-size", "400", "--route", "sample",
         "--solver", "libsvm", "--random-state", "3"]
TRAIN_PARAMS = {"C": 10.0, "gamma": 1.0, "sample_size": 400, "route": "sample",
                "solver": "libsvm", "random_state": 3}
STREAM = ["--method", "bsgd", "--budget", "50", "--gamma", "1", "--random-state", "0"]


def model_digest(path: Path) -> str:
    """sha256 of a LIBSVM model file's model: its LIBSVM text and the support indices
    (not the trailer's timings and history), 16 hex digits."""
    text = Path(path).read_text()
    libsvm, trailer = text.split("#randsvm-dist-meta ", 1)
    support = json.loads(trailer.split("\n", 1)[0])["support"]
    return hashlib.sha256((libsvm + json.dumps(support)).encode()).hexdigest()[:16]


@dataclass
class Fit:
    """A finished fit: its model file, report (when written) and wall time."""

    model: Path
    seconds: float
    report: dict | None = None

    @property
    def digest(self) -> str:
        return model_digest(self.model)

    @property
    def accuracy(self) -> float | None:
        return (self.report or {}).get("test", {}).get("accuracy")


def cli(*argv: str, env: dict | None = None, cwd: Path | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    """``randsvm-dist ARGV`` as its own process (as a user's shell runs it)."""
    return subprocess.run([sys.executable, "-m", "randsvm_dist.cli", *argv], cwd=cwd,
                          env=python_env(env), capture_output=True, text=True,
                          timeout=timeout)


def print_figure(what: str, **figures) -> None:
    """One line of measured figures in the test output (``-s`` or ``-rA`` shows it)."""
    print(f"\n[figure] {what}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))



def load_recipe(name: str):
    """A module of ``cluster/`` (the recipes are scripts, not part of the package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "cluster" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close_gateway_clients_once() -> None:
    """dask-gateway 2026.3's ``Gateway.close`` raises when called twice (its loop runner is
    stopped), and ``__del__`` calls it again after every ``close``/``with``: make a second
    call a no-op for this test process (left in place: objects are collected later)."""
    from dask_gateway import Gateway as GatewayClient

    close = GatewayClient.close
    if getattr(close, "once", False):
        return

    def close_once(self):
        if not getattr(self, "_randsvm_closed", False):
            self._randsvm_closed = True
            return close(self)

    close_once.once = True
    GatewayClient.close = close_once


def kill_a_busy_worker_mid_run(client, run, prefix: str = "scan_partition") -> str:
    """SIGKILL the worker process running a task whose key starts with ``prefix`` while
    the thread ``run`` runs a fit; returns the worker's address once the scheduler has
    lost it, which must happen before the fit ends (a kill mid-run)."""
    import os
    import signal

    deadline = time.monotonic() + 120
    while not (busy := [w for w, keys in client.processing().items()
                        if any(str(k).startswith(prefix) for k in keys)]):
        assert run.is_alive() and time.monotonic() < deadline, f"no {prefix} to disturb"
        time.sleep(0.01)
    os.kill(client.run(os.getpid, workers=[busy[0]])[busy[0]], signal.SIGKILL)
    while busy[0] in client.scheduler_info()["workers"]:
        time.sleep(0.01)
    assert run.is_alive(), "the fit ended before the worker died"
    return busy[0]
