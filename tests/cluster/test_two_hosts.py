"""Two hosts emulated on this machine, started as a user would: ``dask scheduler`` on
127.0.0.1 and one ``dask worker`` bound to each of 127.0.0.2 and 127.0.0.3 (two hosts to
Dask), each pinned to its own core with ``taskset`` when the machine has two. Solves are
placed one per host with their host's threads; fits give the model a local cluster gives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import get_task_stream
from test_fixed_route_identical import (
    FIT,
    fit_and_save,
    fit_on_layouts,
    model_body,
    ringnorm_and_three_classes,
)

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.placement_of_solves import (
    Host,
    SolvePlace,
    cluster_hosts,
    place_here,
    place_solves,
    spread,
)
from randsvm_dist.exact.solving import solve_rows, solve_working_set
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import LIBSVM_SYNC_TERMS
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.threads import host_cores, kernel_row_terms, step_threads

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ("127.0.0.2", "127.0.0.3")
START_TIMEOUT = 90.0


class TwoHosts:
    """A scheduler and one single-threaded worker on each emulated host, each in its own
    process group (stopped with it, so no process outlives the fixture)."""

    def __init__(self, tmp: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_LOGGING__DISTRIBUTED": "error"}
        dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or "dask"
        pin = shutil.which("taskset") if len(os.sched_getaffinity(0)) >= 2 else None
        self.pinned = pin is not None
        cores = sorted(os.sched_getaffinity(0))
        file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        popen = dict(env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            self.procs.append(subprocess.Popen(
                [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(file)], **popen))
            self.address = self._address(file)
            for k, host in enumerate(HOSTS):
                taskset = [pin, "-c", str(cores[k])] if pin else []
                self.procs.append(subprocess.Popen(
                    [*taskset, dask, "worker", self.address, "--host", host, "--nthreads", "1",
                     "--no-dashboard", "--death-timeout", "60", "--memory-limit", "2GB"],
                    **popen))
            from distributed import Client

            self.client = Client(self.address, set_as_default=False, timeout="30s")
            self.client.wait_for_workers(len(HOSTS), timeout=START_TIMEOUT)
        except BaseException:
            self.close()
            raise

    def _address(self, file: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while not file.exists():
            if self.procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("dask scheduler did not start")
            time.sleep(0.1)
        return json.loads(file.read_text())["address"]

    def close(self) -> None:
        """Stop every process group started here (workers first), then make sure none is
        left."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        for p in reversed(self.procs):
            _signal_group(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                _signal_group(p.pid, signal.SIGKILL)
                p.wait(20)
            _signal_group(p.pid, signal.SIGKILL)  # a worker the nanny started, if any
        deadline = time.monotonic() + 30  # a killed nanny's worker ends (and is reaped)
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)

    def alive(self) -> list[int]:
        """Process groups started here that still have a process."""
        return [p.pid for p in self.procs if _group_alive(p.pid)]


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    cluster = TwoHosts(tmp_path_factory.mktemp("two-hosts"))
    yield cluster
    cluster.close()
    assert not cluster.alive(), "orphaned processes"


def test_spread_offers_each_solve_its_own_hosts_threads():
    big, small = Host("big", ("tcp://big:1",), 16), Host("small", ("tcp://small:1",), 4)
    one = spread([big, small], 1)
    assert [(p.host, p.threads) for p in one] == [("big", 16)]
    # two solves: one per host, each with all of its host's threads (not both the 4 the
    # smaller host has)
    assert [(p.host, p.threads) for p in spread([big, small], 2)] == [("big", 16),
                                                                     ("small", 4)]
    assert [(p.host, p.threads) for p in spread([big, small], 3)] == \
        [("big", 8), ("small", 4), ("big", 8)]
    three = Host("three", ("tcp://three:1", "tcp://three:2"), 3)
    for hosts in ([big, small], [big], [three], [big, small, three]):
        for n in range(1, 40):
            places = spread(hosts, n)
            assert len(places) == n
            for h in hosts:
                offered = [p.threads for p in places if p.host == h.name]
                assert all(p.workers == h.workers for p in places if p.host == h.name)
                assert all(t >= 1 for t in offered)
                if len(offered) <= h.threads:  # shared out, never more than the host has
                    assert sum(offered) == (h.threads if offered else 0)
                else:                          # more solves than threads: one each
                    assert offered == [1] * len(offered)
            used = {p.host for p in places}
            assert len(used) == min(n, len(hosts))  # spread before sharing a host
    assert [(p.threads, p.submit_options()) for p in spread([], 2)] == [(1, {}), (1, {})]
    assert spread([three], 1)[0].submit_options() == {
        "workers": ["tcp://three:1", "tcp://three:2"], "allow_other_workers": True}


class FakeScheduler:
    """``client.scheduler_info`` of a cluster: {host: [nthreads of each worker]}."""

    def __init__(self, hosts: dict[str, list[int]]):
        self.workers = {f"tcp://{h}:{k}": {"host": h, "nthreads": n}
                        for h, ns in hosts.items() for k, n in enumerate(ns)}

    def scheduler_info(self, n_workers: int = 5) -> dict:
        return {"workers": self.workers}


def test_a_cascades_final_solve_stays_on_the_host_it_was_offered(monkeypatch):
    import distributed

    client = FakeScheduler({"a": [4, 4], "b": [2]})
    hosts = cluster_hosts(client)
    assert [(h.name, h.threads, len(h.workers)) for h in hosts] == [("a", 8, 2), ("b", 2, 1)]
    assert place_here(client, 16) == SolvePlace("a", hosts[0].workers, 8)  # the driver
    monkeypatch.setattr(distributed, "get_worker", lambda: type("W", (), {"address":
                                                                        "tcp://b:0"})())
    assert place_here(client, 16) == SolvePlace("b", ("tcp://b:0",), 2)   # never above b's
    assert place_here(client, 1).threads == 1
    assert [p.threads for p in place_solves(client, 2)] == [8, 2]
    assert place_here(FakeScheduler({}), 4) == SolvePlace("", (), 1)


def test_the_cluster_has_two_hosts_and_solves_spread_over_them(two_hosts):
    client = two_hosts.client
    places = place_solves(client, 2)
    assert sorted(p.host for p in places) == list(HOSTS)
    assert [p.threads for p in places] == [1, 1]
    assert [p.threads for p in place_solves(client, 3)] == [1, 1, 1]
    for n in (1, 2, 3, 8):  # never more than a host's one thread
        assert all(p.threads == 1 for p in place_solves(client, n))
    if two_hosts.pinned:
        assert client.run(host_cores) == {w: 1 for w in client.scheduler_info()["workers"]}


def test_a_solve_runs_on_its_own_host_with_its_hosts_threads(two_hosts):
    client = two_hosts.client
    X, y = make_arrays("ringnorm", 1500, seed=2)
    t = np.where(y > 0, 1.0, -1.0)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", gamma=0.05))
    places = place_solves(client, 2)
    futures = [client.submit(solve_rows, X, t, None, params, p.threads, pure=False,
                             **p.submit_options()) for p in places]
    solutions = client.gather(futures)
    ran_on = {w for f in futures for w in client.who_has(f)[f.key]}
    for p, f in zip(places, futures):
        worker, = client.who_has(f)[f.key]
        assert worker in p.workers  # on the host it was placed on
        taken = client.submit(step_threads, kernel_row_terms(X), p.threads,
                              LIBSVM_SYNC_TERMS, workers=[worker], pure=False).result()
        assert 1 <= taken <= p.threads <= 1  # the host's one thread, whatever was offered
        if two_hosts.pinned:
            many = client.submit(step_threads, 1e12, 64, 0.0, workers=[worker],
                                 pure=False).result()
            assert many == 1  # its taskset core caps any offer
    assert len(ran_on) == 2  # the two concurrent solves ran on the two hosts
    a, b = solutions
    assert a.support.tobytes() == b.support.tobytes()
    assert a.dual_coef.tobytes() == b.dual_coef.tobytes() and a.intercept == b.intercept


def test_a_fit_on_two_hosts_is_a_local_clusters_fit(two_hosts, tmp_path):
    """The fixed route (sampled working sets, LIBSVM then the warm SMO) gives the same
    model bytes on the two hosts as on a local cluster of 1 and of 2 workers."""
    local = fit_on_layouts(tmp_path, {"1 worker": (1, 1), "2 workers": (2, 1)})
    for s, (X, y) in ringnorm_and_three_classes().items():
        path = tmp_path / f"two-hosts-{s}.model".replace(" ", "_")
        fit_and_save(two_hosts.client, X, y, path)
        for name in ("1 worker", "2 workers"):
            assert model_body(path) == model_body(local[name, s]), f"{s}: {name}"


def test_routes_chosen_by_the_workers_reach_the_same_optimum(two_hosts):
    """A working set solved whole (1 worker) or as a cascade over the two hosts, and fits
    by every route, give the same certified optimum."""
    client = two_hosts.client
    X, y = make_arrays("ringnorm", 2000, seed=7)
    t = np.where(y > 0, 1.0, -1.0)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", gamma=0.05), tol=1e-5)
    rows = np.arange(len(t))
    whole = solve_working_set(client, CSVC(1), X, t, None, rows, params, 1, 1, 11)
    with get_task_stream(client) as stream:
        cascade = solve_working_set(client, CSVC(1), X, t, None, rows, params, 1, 2, 11)
    assert cascade.parts and len(cascade.parts) == 2 and not whole.parts
    ran_on = [r["worker"] for r in stream.data if r["key"].startswith("solve_rows")]
    assert len(ran_on) >= 3 and len(set(ran_on[:2])) == 2  # a part on each host, then final
    f = {name: decision_values(X, X[s.support], s.solution.dual_coef, s.solution.intercept,
                               params.kernel) for name, s in (("whole", whole),
                                                              ("cascade", cascade))}
    np.testing.assert_allclose(f["cascade"], f["whole"], atol=20 * params.tol)
    fits = {route: RandSVMClassifier(client=client, **{**FIT, "route": route, "tol": 1e-5,
                                                       "gap_tol": 1e-5}).fit(X, y)
            for route in ("auto", "sample", "direct")}
    for route, est in fits.items():
        last = [h for h in est.history_ if h["problem"] == 0][-1]
        assert last["stop_reason"] == "optimal" and last["relative_gap"] <= 1e-5, route
        np.testing.assert_allclose(est.decision_function(X), f["whole"], atol=20 * params.tol)


def _kill_a_worker_running(client, prefix: str, until: float, alive) -> str:
    """SIGKILL the worker process running a task whose key starts with ``prefix`` (its
    nanny starts another); returns its address."""
    while True:
        running = [w for w, keys in client.processing().items()
                   if any(str(k).startswith(prefix) for k in keys)]
        if running:
            break
        assert alive() and time.monotonic() < until, f"no {prefix} task was seen"
        time.sleep(0.005)
    os.kill(client.run(os.getpid, workers=[running[0]])[running[0]], signal.SIGKILL)
    return running[0]


def _in_thread(fn):
    import threading

    out: dict = {}
    run = threading.Thread(target=lambda: out.setdefault("value", fn()))
    run.start()
    return run, out


@pytest.mark.heavy
def test_a_host_lost_during_a_cascade_or_concurrent_solves_changes_nothing(two_hosts,
                                                                          tmp_path):
    """SIGKILL the worker running one of a cascade's part solves, then one running a
    working-set solve of a 3-class fit (three concurrent solves over the two hosts): the
    part runs again elsewhere (``allow_other_workers``) and the results are the
    undisturbed runs', bit for bit."""
    client = two_hosts.client
    X, y = make_arrays("ringnorm", 12_000, seed=8)
    t = np.where(y > 0, 1.0, -1.0)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", gamma=0.05))
    rows = np.arange(len(t))

    def cascade():
        return solve_working_set(client, CSVC(1), X, t, None, rows, params, 1, 2, 12)

    ref = cascade()
    run, out = _in_thread(cascade)
    _kill_a_worker_running(client, "solve_rows", time.monotonic() + 120, run.is_alive)
    run.join(600)
    client.wait_for_workers(len(HOSTS), timeout=120)
    hit = out["value"]
    assert hit.parts == ref.parts and hit.support.tobytes() == ref.support.tobytes()
    assert hit.solution.dual_coef.tobytes() == ref.solution.dual_coef.tobytes()

    X3, y3 = make_arrays("ringnorm", 20_000, seed=9)
    y3 = np.where(y3 > 0, np.where(X3[:, 0] > 0, 2, 1), 0)
    fit = {**FIT, "sample_size": 3000}
    RandSVMClassifier(client=client, **fit).fit(X3, y3).save(tmp_path / "ref.model")
    run, out = _in_thread(lambda: RandSVMClassifier(client=client, **fit).fit(X3, y3))
    _kill_a_worker_running(client, "solve_working_set_task", time.monotonic() + 300,
                           run.is_alive)
    run.join(900)
    assert not run.is_alive() and "value" in out
    out["value"].save(tmp_path / "hit.model")
    assert model_body(tmp_path / "hit.model") == model_body(tmp_path / "ref.model")
    client.wait_for_workers(len(HOSTS), timeout=120)
