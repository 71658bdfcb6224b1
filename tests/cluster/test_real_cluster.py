"""On real processes: ``dask scheduler`` and ``dask worker`` started as OS processes on
127.0.0.1, driven through ``--scheduler``: train, stream, predict, evaluate, submitted jobs,
and workers (or the job's driver) killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from randsvm_dist import jobs
from randsvm_dist.app.model_io import load_model
from randsvm_dist.cli import main as cli_main
from randsvm_dist.data import make_arrays, write_arrays

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["--C", "10", "--gamma", "1", "--k", "5000", "--sample-size", "400",
         "--random-state", "3"]
TRAIN_PARAMS = {"C": 10.0, "gamma": 1.0, "k": 5000, "sample_size": 400, "random_state": 3}


def same_model(a: Path, b: Path) -> bool:
    """The LIBSVM sections and SV rows are byte-identical (the history's timings differ)."""
    def body(p: Path) -> tuple[str, list]:
        text = p.read_text()
        meta = json.loads(text.split("#randsvm-dist-meta ", 1)[1].split("\n", 1)[0])
        return text.split("#randsvm-dist-meta ", 1)[0], meta["support"]
    return body(a) == body(b)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, dask_cli_cluster):
    c = dask_cli_cluster(tmp_path_factory.mktemp("real"))
    yield c
    c.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("realdata")
    X, y = make_arrays("checkerboard", 3000, seed=1)
    Xt, yt = make_arrays("checkerboard", 1000, seed=2)
    return (write_arrays(X, y, tmp / "train", partitions=4),
            write_arrays(Xt, yt, tmp / "test", partitions=2))


def test_train_stream_predict_evaluate_and_a_submitted_job(cluster, data, tmp_path, capsys):
    train, test = data
    at = ["--scheduler", cluster.address]
    assert cli_main(["train", train.url, "--model", str(tmp_path / "m.model"), *TRAIN,
                     *at]) == 0
    assert cli_main(["stream", train.url, "--method", "bsgd", "--budget", "50", "--gamma", "1",
                     "--model", str(tmp_path / "s.npz"), *at]) == 0
    assert cli_main(["predict", str(tmp_path / "m.model"), test.url, str(tmp_path / "pred"),
                     *at]) == 0
    capsys.readouterr()
    assert cli_main(["evaluate", str(tmp_path / "m.model"), test.url, "--json", *at]) == 0
    accuracy = json.loads(capsys.readouterr().out)["accuracy"]
    assert accuracy > 0.9
    # the same fit as a submitted job: the driver runs on a worker; the id comes at once
    job_dir = tmp_path / "jobs"
    assert cli_main(["submit", "train", train.url, "--model", str(tmp_path / "job.model"),
                     *TRAIN, *at, "--job-dir", str(job_dir)]) == 0
    job_id = capsys.readouterr().out.split()[0]
    assert jobs.wait(str(job_dir), job_id, timeout=300)["state"] == "done"
    assert same_model(tmp_path / "job.model", tmp_path / "m.model")
    assert cli_main(["jobs", "result", job_id, "--job-dir", str(job_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_support"] > 0
    assert cli_main(["jobs", "logs", job_id, "--job-dir", str(job_dir)]) == 0
    assert "attempt 1 on worker tcp://127.0.0.1" in capsys.readouterr().out
    assert [j["job_id"] for j in jobs.list_jobs(str(job_dir))] == [job_id]


def _kill_busy_worker_when(cluster, started: callable, spare: set[str] = frozenset()):
    """Kill (SIGKILL) a worker process that is running a task, once ``started()``."""
    deadline = time.monotonic() + 120
    while not started():
        if time.monotonic() > deadline:
            raise RuntimeError("the run never reached the point to kill a worker")
        time.sleep(0.05)
    busy = cluster.client.processing()
    pids = cluster.worker_pids()
    victim = next((w for w, tasks in busy.items() if tasks and w not in spare),
                  next(iter(pids)))
    os.kill(pids[victim], signal.SIGKILL)
    return victim


@pytest.mark.heavy
def test_killing_a_worker_during_a_fit_or_a_streaming_reduce_changes_nothing(cluster, data,
                                                                             tmp_path):
    import threading

    train, _ = data
    at = ["--scheduler", cluster.address]
    cli_main(["train", train.url, "--model", str(tmp_path / "ref.model"), *TRAIN, *at])
    cli_main(["stream", train.url, "--method", "streamsvm", "--model",
              str(tmp_path / "ref.npz"), *at])
    for name, argv in (("m.model", ["train", train.url, *TRAIN]),
                       ("s.npz", ["stream", train.url, "--method", "streamsvm"])):
        run = threading.Thread(target=cli_main, args=([*argv, "--model", str(tmp_path / name),
                                                       *at],))
        run.start()
        _kill_busy_worker_when(cluster, lambda: any(cluster.client.processing().values()))
        run.join(300)
        cluster.client.wait_for_workers(2, timeout=60)
    assert same_model(tmp_path / "m.model", tmp_path / "ref.model")
    X, _ = train.read_partition(0)
    np.testing.assert_array_equal(load_model(tmp_path / "s.npz").decision_function(X),
                                  load_model(tmp_path / "ref.npz").decision_function(X))


@pytest.mark.heavy
def test_killing_the_worker_that_runs_a_submitted_driver(cluster, data, tmp_path):
    train, _ = data
    cli_main(["train", train.url, "--model", str(tmp_path / "ref.model"), *TRAIN,
              "--scheduler", cluster.address])
    job_dir = str(tmp_path / "jobs")
    job_id = jobs.submit("train", data=train.url, model=str(tmp_path / "job.model"),
                         params=TRAIN_PARAMS, scheduler=cluster.address, job_dir=job_dir)

    deadline = time.monotonic() + 120
    while jobs.status(job_dir, job_id)["state"] != "running" or not (
            tmp_path / "jobs" / job_id / "log.txt").exists():
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    worker = jobs.status(job_dir, job_id)["worker"]
    os.kill(cluster.worker_pids()[worker], signal.SIGKILL)  # the driver's own worker
    final = jobs.wait(job_dir, job_id, timeout=300)
    assert final["state"] == "done" and final["attempt"] >= 2
    assert same_model(tmp_path / "job.model", tmp_path / "ref.model")
    cluster.client.wait_for_workers(2, timeout=60)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Enough rows (20,000) that the driver samples and iterates (no direct solve)."""
    X, y = make_arrays("checkerboard", 20000, seed=3)
    return write_arrays(X, y, tmp_path_factory.mktemp("big") / "train", partitions=4)


# route 'sample': the cost model would solve 20,000 rows at once (no iteration to checkpoint)
LONG = ["--C", "10", "--gamma", "1", "--sample-size", "500", "--max-iter", "12",
        "--gap-tol", "0", "--random-state", "4", "--route", "sample"]
LONG_PARAMS = {"C": 10.0, "gamma": 1.0, "sample_size": 500, "max_iter": 12, "gap_tol": 0.0,
               "random_state": 4, "route": "sample"}


def _wait_for_checkpoint(path: Path, proc=None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc is None or proc.poll() is None, "the run ended before its checkpoint"
        assert time.monotonic() < deadline, f"no checkpoint at {path}"
        time.sleep(0.05)


@pytest.mark.heavy
def test_killing_the_local_driver_process_then_resume(cluster, big, tmp_path):
    at = ["--scheduler", cluster.address]
    assert cli_main(["train", big.url, "--model", str(tmp_path / "ref.model"), *LONG,
                     *at]) == 0
    ck = tmp_path / "ck"
    argv = ["train", big.url, "--model", str(tmp_path / "m.model"), *LONG, *at,
            "--checkpoint", str(ck)]
    proc = subprocess.Popen([sys.executable, "-m", "randsvm_dist.cli", *argv],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_checkpoint(ck / "state.npz", proc)
    proc.kill()  # SIGKILL: the driver dies mid-fit
    proc.wait()
    assert not (tmp_path / "m.model").exists()
    assert cli_main([*argv, "--resume"]) == 0
    assert same_model(tmp_path / "m.model", tmp_path / "ref.model")


@pytest.mark.heavy
def test_a_job_survives_a_scheduler_restart_from_its_checkpoint(big, tmp_path, dask_cli_cluster):
    first = dask_cli_cluster(tmp_path / "c1")
    try:
        assert cli_main(["train", big.url, "--model", str(tmp_path / "ref.model"), *LONG,
                         "--scheduler", first.address]) == 0
        job_dir = str(tmp_path / "jobs")
        job_id = jobs.submit("train", data=big.url, model=str(tmp_path / "job.model"),
                             params=LONG_PARAMS, scheduler=first.address, job_dir=job_dir)
        _wait_for_checkpoint(Path(job_dir) / job_id / "checkpoint" / "state.npz")
    finally:
        first.close()  # the scheduler and its workers go away mid-fit
    # SIGKILL leaves it "running"; a shutdown lets the driver record "failed": either restarts
    assert jobs.status(job_dir, job_id)["state"] in ("running", "failed")
    second = dask_cli_cluster(tmp_path / "c2")
    try:
        jobs.restart(job_dir, job_id, scheduler=second.address)
        final = jobs.wait(job_dir, job_id, timeout=300)
        assert final["state"] == "done", final
        assert "resuming from" in jobs.logs(job_dir, job_id)
        assert same_model(tmp_path / "job.model", tmp_path / "ref.model")
    finally:
        second.close()


@pytest.fixture(scope="module")
def ringnorm_big(tmp_path_factory):
    """40,000 ringnorm rows in 4 partitions: scans and solves long enough to be hit."""
    X, y = make_arrays("ringnorm", 40000, seed=6)
    return write_arrays(X, y, tmp_path_factory.mktemp("ringbig") / "train", partitions=4)


PHASES = {"scan": ("train", "scan_partition"),
          "solve": ("train", "solve_working_set_task"),
          "streaming reduce": ("stream", "fit_partition")}


@pytest.mark.heavy
@pytest.mark.parametrize("phase", list(PHASES))
def test_killing_a_worker_in_each_phase_changes_nothing(cluster, ringnorm_big, tmp_path,
                                                        phase):
    """SIGKILL the worker that runs a task of the phase (a violator scan, a working-set
    solve, a streaming learner's partition pass): the result is the undisturbed run's."""
    import threading

    command, prefix = PHASES[phase]
    argv = ([command, ringnorm_big.url, "--C", "1", "--gamma", "0.05", "--random-state",
             "5", "--scheduler", cluster.address]
            # LIBSVM: oneDAL's bytes depend on its thread count, and iterations planned
            # while the killed worker is away offer a solve fewer threads
            + (["--sample-size", "8000", "--route", "sample", "--solver", "libsvm"]
               if command == "train"
               else ["--method", "bsgd", "--budget", "200"]))
    ext = ".model" if command == "train" else ".npz"
    assert cli_main([*argv, "--model", str(tmp_path / f"ref{ext}")]) == 0

    def running() -> dict:
        return {w: k for w, keys in cluster.client.processing().items() for k in keys
                if str(k).startswith(prefix)}

    outcome = {}
    run = threading.Thread(target=lambda: outcome.setdefault(
        "rc", cli_main([*argv, "--model", str(tmp_path / f"hit{ext}")])))
    run.start()
    deadline = time.monotonic() + 120
    while not (hit := running()):
        assert run.is_alive() and time.monotonic() < deadline, f"no {phase} task was seen"
        time.sleep(0.005)
    victim = next(iter(hit))
    os.kill(cluster.worker_pids()[victim], signal.SIGKILL)
    run.join(600)
    assert not run.is_alive() and outcome["rc"] == 0
    cluster.client.wait_for_workers(2, timeout=60)
    if command == "train":
        assert same_model(tmp_path / "hit.model", tmp_path / "ref.model")
    else:
        X, _ = ringnorm_big.read_partition(0)
        np.testing.assert_array_equal(load_model(tmp_path / "hit.npz").decision_function(X),
                                      load_model(tmp_path / "ref.npz").decision_function(X))
