"""Processes that must not outlive the process that started them: the embedded cluster's
scheduler, worker launcher and worker processes (busy or not) when their owner is killed;
``engine.parent_watch.watch_parent`` for any child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil

from randsvm_dist.engine import parent_watch

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 30.0  # the watch polls every second, then closes; a forced exit after 10 s

OWNER = textwrap.dedent("""
    import json, os, signal, time
    import psutil
    from randsvm_dist.engine import embedded

    def busy(seconds):  # holds the GIL, as a long Python-level task does
        import time
        t = time.time()
        while time.time() - t < seconds:
            sum(range(10_000))

    client = embedded.embedded_client(2)
    procs = embedded._EMBEDDED.procs
    futures = [client.submit(busy, 600, pure=False) for _ in range(2)]
    deadline = time.time() + 60  # both tasks running
    while sum(map(len, client.processing().values())) < 2 and time.time() < deadline:
        time.sleep(0.2)
    workers = psutil.Process(procs.workers.pid).children(recursive=True)
    print(json.dumps([*procs.pids(), *[p.pid for p in workers]]), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_killed_owner_takes_its_busy_workers_with_it():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", OWNER], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    pids = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(pids) >= 4  # scheduler, launcher, two workers (and the resource tracker)
    procs = [psutil.Process(p) for p in pids if psutil.pid_exists(p)]
    _, alive = psutil.wait_procs(procs, timeout=GONE_WITHIN_S)
    names = [p.cmdline()[-3:] for p in alive if p.is_running()]
    for p in alive:
        p.kill()
    assert not alive, names


def test_watch_parent_acts_once_the_parent_is_not_this_ones(monkeypatch):
    exits, gone = [], threading.Event()
    monkeypatch.setattr(parent_watch.os, "_exit", exits.append)
    thread = parent_watch.watch_parent(os.getppid() + 10**7, gone.set, exit_after=0.0)
    thread.join(5.0)
    assert gone.is_set() and exits == [0]

