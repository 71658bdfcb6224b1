"""Shared fixtures: the small committed data sets, the ../shared data sets, a local cluster.

Tests that need the full data sets in ``../shared/datasets`` (or
``$RANDSVM_SHARED_DATASETS``) take the ``shared_datasets`` fixture: they are marked
``shared_data`` and skipped, with the reason, when the directory is absent, so a fresh
clone passes. ``tests/data/`` holds small real sets every clone has.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = ROOT / "tests" / "data"
SHARED_DATASETS = Path(os.environ.get("RANDSVM_SHARED_DATASETS",
                                      ROOT.parent / "shared" / "datasets"))


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every test that takes ``shared_datasets`` as ``shared_data``."""
    for item in items:
        if "shared_datasets" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """Path of ../shared/datasets (the full LIBSVM-format data sets); skips without it."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"needs the shared data sets: {SHARED_DATASETS} not found (set "
                    "RANDSVM_SHARED_DATASETS or clone beside ../shared)")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def test_data() -> Path:
    """Path of tests/data: small real sets committed with the code (see its README)."""
    return TEST_DATA


@pytest.fixture(autouse=True)
def _no_shared_scheduler(monkeypatch) -> None:
    """A scheduler the developer started (``randsvm-dist cluster start``) stays out of the
    tests unless a test names it."""
    monkeypatch.delenv("RANDSVM_DIST_SCHEDULER", raising=False)


@pytest.fixture(scope="session")
def dask_client():
    """A local cluster sized for 2 cores: 2 workers x 1 thread, loopback only. Not Dask's
    default client (the project never makes one, so neither do the tests): pass it, or its
    address, explicitly."""
    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    procs = launch(n_workers=2)
    try:
        with Client(procs.address, set_as_default=False, timeout="60s") as client:
            wait_for_workers(client, 2)
            yield client
    finally:
        procs.close()


@pytest.fixture
def current_dask_client(dask_client):
    """``dask_client`` made the current client for one test (``Client.as_current``), as a
    user's own ``Client()`` is: for tests of ``client=None`` picking the current client."""
    with dask_client.as_current():
        yield dask_client


class DaskCliCluster:
    """``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` started as OS
    processes on 127.0.0.1 with Dask's own CLI (``memory_limit``: the workers'
    ``--memory-limit``); the workers' log is kept in ``log``."""

    def __init__(self, tmp: Path, n_workers: int = 2, memory_limit: str | None = None):
        import json
        import subprocess
        import sys
        import time

        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        tmp.mkdir(parents=True, exist_ok=True)
        file, self.log = tmp / "scheduler.json", tmp / "workers.log"
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--dashboard-address", "127.0.0.1:0", "--scheduler-file",
             str(file)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.monotonic() + 60
        while not file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("dask scheduler did not start")
            time.sleep(0.2)
        self.address = json.loads(file.read_text())["address"]
        limit = ["--memory-limit", memory_limit] if memory_limit else []
        with open(self.log, "wb") as out:
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                 "--nworkers", str(n_workers), "--nthreads", "1", "--host", "127.0.0.1",
                 "--no-dashboard", *limit], env=env, stdout=out, stderr=subprocess.STDOUT))
        self.client = self.connect()
        self.client.wait_for_workers(n_workers, timeout=60)

    def connect(self):
        """A new Client of the scheduler (not the default client)."""
        from distributed import Client

        return Client(self.address, set_as_default=False, timeout="20s")

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> its process id."""
        return self.client.run(os.getpid, on_error="ignore")

    def restarts_and_pauses(self) -> tuple[int, int]:
        """How often the workers' log says a worker was restarted, and paused."""
        text = self.log.read_text()
        return text.count("Restarting"), text.count("Pausing worker")

    def close(self) -> None:
        import subprocess

        self.client.close()
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="session")
def dask_cli_cluster():
    """The ``DaskCliCluster`` class (tests start and close their own)."""
    return DaskCliCluster
