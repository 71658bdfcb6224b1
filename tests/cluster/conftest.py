"""Fixtures of the real-cluster tests: the data, the reference fit on the embedded default
(the cluster a user gets without naming one) and the services (``services.py``).

Every service fixture skips its tests with the reason when the service cannot be installed
or started here (not root, package missing, a daemon that did not come up: its log)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from services import Gateway, Slurm, Sshd, Unavailable, python_env

from randsvm_dist.data import make_arrays, write_arrays

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


@pytest.fixture(scope="session")
def cluster_data(tmp_path_factory):
    """3,000 training and 1,000 test rows of checkerboard, 4 and 2 partitions."""
    tmp = tmp_path_factory.mktemp("clusterdata")
    X, y = make_arrays("checkerboard", 3000, seed=1)
    Xt, yt = make_arrays("checkerboard", 1000, seed=2)
    return (write_arrays(X, y, tmp / "train", partitions=4),
            write_arrays(Xt, yt, tmp / "test", partitions=2))


@pytest.fixture(scope="session")
def embedded_reference(cluster_data, tmp_path_factory) -> Fit:
    """The same fit as the cluster tests', on the embedded default (no --scheduler)."""
    train, test = cluster_data
    tmp = tmp_path_factory.mktemp("embedded")
    t0 = time.monotonic()
    done = cli("train", train.url, *TRAIN, "--model", str(tmp / "ref.model"), "--test",
               test.url, "--report", str(tmp / "ref.json"))
    assert done.returncode == 0, done.stderr
    fit = Fit(tmp / "ref.model", time.monotonic() - t0,
              json.loads((tmp / "ref.json").read_text()))
    print_figure("embedded default", seconds=f"{fit.seconds:.1f}",
                 fit_seconds=f"{fit.report['fit_seconds']:.1f}", digest=fit.digest,
                 accuracy=fit.accuracy)
    return fit


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A one-node SLURM (munged, slurmctld, slurmd) for the session; skips with the
    reason where it cannot be installed or started."""
    service = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no SLURM here: {e}")
    yield service
    service.stop()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """sshd on 127.0.0.2 and 127.0.0.3 (key login, host keys checked); skips with the
    reason where it cannot be installed or started."""
    service = Sshd(tmp_path_factory.mktemp("sshd"))
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no sshd here: {e}")
    yield service
    service.stop()


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


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    """A Dask Gateway (cluster/gateway_config.py) with users alice and bob; skips with the
    reason where it cannot be installed or started."""
    service = Gateway(tmp_path_factory.mktemp("gateway"),
                      {"alice": "alice-secret", "bob": "bob-secret"})
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no Dask Gateway here: {e}")
    close_gateway_clients_once()
    yield service
    service.stop()


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
