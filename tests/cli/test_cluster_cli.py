"""`randsvm-dist cluster start|status|stop`: one background cluster shared by commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil

from randsvm_dist.data import make


def _cli(*args, env, check=True):
    proc = subprocess.run([sys.executable, "-m", "randsvm_dist.cli", *args], env=env,
                          capture_output=True, text=True, timeout=180)
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_start_status_train_stop(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    env["RANDSVM_DIST_STATE_DIR"] = str(tmp_path / "state")
    started = _cli("cluster", "start", "--workers", "1", env=env)
    name, _, address = started.stdout.strip().removeprefix("export ").partition("=")
    assert name == "RANDSVM_DIST_SCHEDULER" and address.startswith("tcp://127.0.0.1:")
    pids = json.loads((tmp_path / "state" / "cluster.json").read_text())["pids"]
    try:
        again = _cli("cluster", "start", "--workers", "1", env=env)  # the running one's
        assert again.stdout == started.stdout and "already runs" in again.stderr  # export
        env[name] = address  # what `eval "$(randsvm-dist cluster start)"` exports
        status = json.loads(_cli("cluster", "status", "--json", env=env).stdout)
        assert status["running"] and status["workers"] == 1 and status["address"] == address
        make("checkerboard", tmp_path / "cb", rows=600, partitions=2, seed=1)
        trained = _cli("train", str(tmp_path / "cb"), "--C", "10", "--gamma", "1",
                       "--model", str(tmp_path / "cb.model"), "--json", env=env)
        assert json.loads(trained.stdout)["certified"]
        from distributed import Client

        with Client(address, timeout=30) as client:  # train ran its tasks on this cluster
            assert client.run_on_scheduler(lambda dask_scheduler:
                                           dask_scheduler.transition_counter) > 0
    finally:
        _cli("cluster", "stop", env=env)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                   for p in pids)
    stopped = _cli("cluster", "status", env=env, check=False)
    assert stopped.returncode == 1 and "no cluster running" in stopped.stderr + stopped.stdout
