"""The embedded default works wherever Python runs and leaves the caller as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import psutil
import pytest

from randsvm_dist.cli import main
from randsvm_dist.engine import client as cluster
from randsvm_dist.engine import embedded, launcher, probe

ROOT = Path(__file__).resolve().parents[2]

# No ``if __name__ == "__main__":`` guard on purpose: this is what users write.
FIT_SCRIPT = textwrap.dedent("""
    import json, os
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays
    before = dict(os.environ)  # after the imports: sklearn's own sets KMP_* variables
    X, y = make_arrays("checkerboard", 1500, 1)
    est = RandSVMClassifier(C=10, gamma=1.0, random_state=0).fit(X, y)
    print(json.dumps({"score": est.score(X, y), "n_sv": int(len(est.support_)),
                      "env_unchanged": dict(os.environ) == before,
                      "omp": os.environ.get("OMP_NUM_THREADS")}))
""")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != cluster.SCHEDULER_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("OMP_NUM_THREADS", None)
    return env


def _run(how: str, tmp_path: Path) -> dict:
    if how == "script":
        script = tmp_path / "fit.py"
        script.write_text(FIT_SCRIPT)
        cmd, stdin = [sys.executable, str(script)], None
    elif how == "stdin":
        cmd, stdin = [sys.executable, "-"], FIT_SCRIPT
    elif how == "-c":
        cmd, stdin = [sys.executable, "-c", FIT_SCRIPT], None
    else:  # IPython runs the code as its own __main__ (as Jupyter's kernel does)
        pytest.importorskip("IPython")
        script = tmp_path / "fit.ipy"
        script.write_text(FIT_SCRIPT)
        cmd, stdin = [sys.executable, "-m", "IPython", "--no-banner", "--quick",
                      str(script)], None
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=_env(),
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nanny failed to start" not in proc.stderr
    line = [s for s in proc.stdout.splitlines() if s.startswith("{")][-1]
    return json.loads(line)


@pytest.mark.parametrize("how", ["script", "stdin",
                                 pytest.param("-c", marks=pytest.mark.heavy),
                                 pytest.param("ipython", marks=pytest.mark.heavy)])
def test_fit_with_the_embedded_default_without_a_main_guard(how, tmp_path):
    out = _run(how, tmp_path)
    assert out["score"] > 0.95 and out["n_sv"] > 0
    assert out["env_unchanged"] and out["omp"] is None


def _listening(pids: list[int]) -> list[tuple[str, str]]:
    procs = []
    for pid in pids:
        p = psutil.Process(pid)
        procs += [p, *p.children(recursive=True)]
    return [(" ".join(p.cmdline()[:3]), c.laddr.ip) for p in procs
            for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]


def test_embedded_binds_loopback_only_and_leaves_the_environment(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = dict(os.environ)
    embedded.close_embedded()
    client = embedded.embedded_client()
    try:
        assert dict(os.environ) == before
        assert client.scheduler_info()["services"].get("dashboard")  # there is one...
        listening = _listening(embedded._EMBEDDED.procs.pids())
        # scheduler + dashboard, and per worker its nanny, worker and http server
        assert len(listening) >= 4
        assert {ip for _, ip in listening} == {"127.0.0.1"}, listening  # ...on loopback
        # the workers themselves are single-threaded for LIBSVM
        omp = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        assert set(omp.values()) == {"1"}
        # and run without Dask's stack-sampling profiler
        profiling = client.run(lambda: __import__("dask").config.get(
            "distributed.worker.profile.enabled"))
        assert set(profiling.values()) == {False}
        assert embedded.embedded_client() is client  # started once per process
    finally:
        embedded.close_embedded()
    assert embedded._EMBEDDED.client is None


def test_a_callers_profiler_setting_reaches_the_workers(monkeypatch):
    monkeypatch.delenv(launcher.PROFILER_ENV, raising=False)
    assert launcher._child_environ()[launcher.PROFILER_ENV] == "False"
    monkeypatch.setenv(launcher.PROFILER_ENV, "True")
    assert launcher._child_environ()[launcher.PROFILER_ENV] == "True"


@pytest.mark.heavy
def test_embedded_stops_when_its_python_process_is_killed(tmp_path):
    code = ("import json, os, signal\n"
            "from randsvm_dist.engine import embedded\n"
            "embedded.embedded_client()\n"
            "print(json.dumps(embedded._EMBEDDED.procs.pids()), flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert proc.returncode == -signal.SIGKILL
    pids = json.loads(proc.stdout.strip().splitlines()[-1])
    procs = [psutil.Process(p) for p in pids if psutil.pid_exists(p)]
    _, alive = psutil.wait_procs(procs, timeout=90)
    for p in alive:
        p.kill()
    assert not alive, [p.cmdline() for p in alive]


def _fit_inside_a_task(seed: int) -> float:
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays

    X, y = make_arrays("twonorm", 400, seed)
    return RandSVMClassifier(kernel="linear", C=1.0, random_state=0).fit(X, y).score(X, y)


def test_fit_inside_a_dask_worker_uses_that_cluster(dask_client):
    score = dask_client.submit(_fit_inside_a_task, 3).result(timeout=300)
    assert score > 0.9
    assert embedded._EMBEDDED.client is None  # nothing new was started


def test_scheduler_env_names_the_cluster(dask_client, monkeypatch):
    addr = dask_client.scheduler.address
    monkeypatch.setattr(cluster, "_default_client", lambda: None)
    monkeypatch.setenv(cluster.SCHEDULER_ENV, addr)
    with cluster.dask_client(None) as c:
        assert c.scheduler.address == addr and c is not dask_client
    assert c.status == "closed"  # a connection it opened, closed again
    assert embedded._EMBEDDED.client is None
    monkeypatch.setattr(probe, "CONNECT_TIMEOUT", "1s")
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp://127.0.0.1:9")
    with pytest.raises(cluster.ClusterError, match="cannot reach.*127.0.0.1:9"):
        with cluster.dask_client(None):
            pass


def test_train_with_test_starts_one_cluster(tmp_path, monkeypatch, capsys):
    from randsvm_dist.data import make

    make("checkerboard", tmp_path / "train", rows=1500, partitions=2, seed=1)
    make("checkerboard", tmp_path / "test", rows=500, partitions=1, seed=2)
    embedded.close_embedded()
    launches = []
    real_launch = embedded.launch

    def counting_launch(*a, **kw):
        launches.append(a)
        return real_launch(*a, **kw)

    monkeypatch.setattr(embedded, "launch", counting_launch)
    monkeypatch.setattr(cluster, "_default_client", lambda: None)
    rc = main(["train", str(tmp_path / "train"), "--C", "10", "--gamma", "1",
               "--model", str(tmp_path / "m"), "--test", str(tmp_path / "test"), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["test"]["rows"] == 500 and out["test"]["accuracy"] > 0.9
    assert len(launches) == 1
    assert embedded._EMBEDDED.client is None  # closed when the command ended
    assert np.isfinite(out["fit_seconds"])
