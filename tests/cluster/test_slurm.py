"""A real one-node SLURM (``slurm`` fixture: munged, slurmctld, slurmd started here):
``cluster/slurm_batch.sh`` submitted with ``sbatch``, ``cluster/jobqueue_cluster.py``'s
SLURMCluster with a worker job cancelled mid-fit, a submitted job followed from another
shell. Models are compared with the embedded default's fit (same route: same bytes)."""

from __future__ import annotations

import json
import re
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from cluster_helpers import STREAM, TRAIN, Fit, cli, load_recipe, model_digest, print_figure
from services import ROOT, python_env

from randsvm_dist.app.model_io import load_model
from randsvm_dist.cli import main as cli_main

pytestmark = pytest.mark.heavy

SMALL_NODE = ["--nodes=1", "--ntasks-per-node=2", "--mem=4G", "--time=00:10:00"]
LOOPBACK = {"DASK_INTERFACE": "lo", "DASK_PORT": "0", "DASK_DASHBOARD_PORT": "0"}


def test_sbatch_script_trains_and_writes_the_model_report_and_private_tls_files(
        slurm, cluster_data, embedded_reference, tmp_path):
    """``sbatch cluster/slurm_batch.sh`` as a user submits it, sized for this node by
    sbatch's own options: the job trains over TLS and writes model and report."""
    train, test = cluster_data
    t0 = time.monotonic()
    done = slurm.run("sbatch", "--wait", *SMALL_NODE, str(ROOT / "cluster/slurm_batch.sh"),
                     train.url, test.url, str(tmp_path), *TRAIN, cwd=tmp_path,
                     env=python_env(LOOPBACK), check=False, timeout=600)
    seconds = time.monotonic() - t0
    job = re.search(r"Submitted batch job (\d+)", done.stdout).group(1)
    log = (tmp_path / f"randsvm-{job}.out").read_text()
    assert done.returncode == 0, log[-3000:]
    report = json.loads((tmp_path / f"report-{job}.json").read_text())
    fit = Fit(tmp_path / f"cb-{job}.model", seconds, report)
    assert fit.digest == embedded_reference.digest
    assert fit.accuracy == embedded_reference.accuracy > 0.9
    certs = tmp_path / f"tls-{job}"
    assert stat.S_IMODE(certs.stat().st_mode) == 0o700
    for name in ("ca.pem", "cert.pem", "key.pem"):
        assert stat.S_IMODE((certs / name).stat().st_mode) == 0o600
    assert json.loads((tmp_path / f"scheduler-{job}.json").read_text())[
        "address"].startswith("tls://127.0.0.1:")
    print_figure("sbatch slurm_batch.sh", job_seconds=f"{seconds:.1f}",
                 fit_seconds=f"{report['fit_seconds']:.1f}", digest=fit.digest,
                 accuracy=fit.accuracy)


def test_a_worker_job_whose_allocation_ends_is_replaced(slurm, monkeypatch, tmp_path):
    """Jobs of a one-minute ``walltime``: SLURM ends them at their time limit, ``adapt``
    submits new ones and the cluster is back to 2 workers. (Before the ``jobqueue``
    fixture's tests: its two jobs would hold both CPUs of the node.)"""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    for key in ("PYTHONPATH", "PATH"):
        monkeypatch.setenv(key, python_env()[key])
    pytest.importorskip("dask_jobqueue", reason="pip install dask-jobqueue")
    from distributed import Client

    cluster = load_recipe("jobqueue_cluster").make_cluster(
        "slurm", tls_dir=str(tmp_path / "tls"), queue="debug", account=None, cores=1,
        memory="1GB", walltime="00:01:00", lifetime="10m", interface="lo",
        dashboard_address="127.0.0.1:0", log_directory=str(tmp_path / "logs"))
    with cluster, Client(cluster) as client:
        cluster.adapt(minimum_jobs=2, maximum_jobs=2)
        client.wait_for_workers(2, timeout=180)
        first = {j.job_id for j in cluster.workers.values()}
        t0 = time.monotonic()
        while first & {j for j, state in slurm.jobs().items() if state == "RUNNING"}:
            assert time.monotonic() - t0 < 240, "the jobs outlived their time limit"
            time.sleep(1)
        ended = time.monotonic() - t0
        client.wait_for_workers(2, timeout=180)
        now = {j.job_id for j in cluster.workers.values()}
        assert len(now) == 2 and not now & first
        log = (slurm.log / "slurmctld.log").read_text()
        assert all(re.search(rf"Time limit exhausted for JobId={j}\b", log)
                   for j in first), log[-2000:]
    print_figure("walltime replacement", jobs_ended_after=f"{ended:.0f}",
                 replaced_by=",".join(sorted(now)))


class JobqueueCluster:
    """``jobqueue_cluster.make_cluster("slurm", ...)`` sized for this node: 2 jobs of one
    single-threaded worker each, kept at 2 by ``adapt``."""

    def __init__(self, slurm, tmp: Path):
        pytest.importorskip("dask_jobqueue", reason="pip install dask-jobqueue "
                                                    "(randsvm-dist[cluster])")
        from distributed import Client

        self.slurm = slurm
        self.tls = tmp / "tls"
        self.cluster = load_recipe("jobqueue_cluster").make_cluster(
            "slurm", tls_dir=str(self.tls), queue="debug", account=None, cores=1,
            memory="2GB", walltime="00:10:00", lifetime="9m", interface="lo",
            dashboard_address="127.0.0.1:0", log_directory=str(tmp / "logs"))
        self.client = Client(self.cluster)
        self.cluster.adapt(minimum_jobs=2, maximum_jobs=2)
        self.client.wait_for_workers(2, timeout=180)

    @property
    def at(self) -> list[str]:
        """The command-line flags that reach this cluster (address and TLS files)."""
        return ["--scheduler", self.cluster.scheduler_address,
                "--tls-ca-file", str(self.tls / "ca.pem"),
                "--tls-cert", str(self.tls / "cert.pem"),
                "--tls-key", str(self.tls / "key.pem")]

    def job_of(self, worker: str) -> str:
        """The SLURM job id running a worker (by address)."""
        name = self.client.scheduler_info()["workers"][worker]["name"]
        return self.cluster.workers[name].job_id

    def cancel_a_busy_job(self, run: threading.Thread, prefix: str = "") -> str:
        """Wait until a worker runs a task (whose key starts with ``prefix``), then
        ``scancel`` that worker's job; returns the job id once the scheduler has lost the
        worker, which must happen while ``run`` still runs (a cancel mid-run)."""
        deadline = time.monotonic() + 120
        while True:
            busy = [w for w, keys in self.client.processing().items()
                    if any(str(k).startswith(prefix) for k in keys)]
            if busy:
                break
            assert run.is_alive() and time.monotonic() < deadline, "no task to cancel"
            time.sleep(0.01)
        job = self.job_of(busy[0])
        self.slurm.run("scancel", job)
        while busy[0] in self.client.scheduler_info()["workers"]:
            time.sleep(0.01)
        assert run.is_alive(), "the run ended before its worker's job was cancelled"
        return job

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


@pytest.fixture(scope="module")
def jobqueue(slurm, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("SLURM_CONF", str(slurm.conf))
    for key, value in python_env().items():
        if key in ("PYTHONPATH", "PATH"):
            monkeypatch_module.setenv(key, value)
    cluster = JobqueueCluster(slurm, tmp_path_factory.mktemp("jobqueue"))
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def run_with_cancel(jobqueue, argv: list[str], prefix: str) -> tuple[float, str]:
    """Run ``randsvm-dist ARGV`` (in a thread of this process) and cancel a busy worker's
    job mid-run; returns (seconds, the cancelled job id)."""
    outcome = {}
    t0 = time.monotonic()
    run = threading.Thread(target=lambda: outcome.setdefault("rc", cli_main(argv)))
    run.start()
    job = jobqueue.cancel_a_busy_job(run, prefix)
    run.join(600)
    assert not run.is_alive() and outcome["rc"] == 0
    return time.monotonic() - t0, job


def test_jobqueue_slurmcluster_fit_and_stream_with_a_worker_job_cancelled(
        jobqueue, slurm, cluster_data, embedded_reference, tmp_path):
    """Undisturbed fit and stream on the SLURMCluster, then each again with one worker
    job ``scancel``-ed mid-run: the same models; the cancelled job is replaced."""
    train, test = cluster_data
    t0 = time.monotonic()
    assert cli_main(["train", train.url, *TRAIN, "--model", str(tmp_path / "m.model"),
                     "--test", test.url, "--report", str(tmp_path / "m.json"),
                     *jobqueue.at]) == 0
    fit = Fit(tmp_path / "m.model", time.monotonic() - t0,
              json.loads((tmp_path / "m.json").read_text()))
    assert fit.digest == embedded_reference.digest
    assert fit.accuracy == embedded_reference.accuracy
    assert cli_main(["stream", train.url, *STREAM, "--model", str(tmp_path / "s.npz"),
                     *jobqueue.at]) == 0

    seconds, job = run_with_cancel(jobqueue, ["train", train.url, *TRAIN, "--model", str(
        tmp_path / "hit.model"), *jobqueue.at], "scan_partition")
    assert model_digest(tmp_path / "hit.model") == fit.digest
    assert job not in slurm.jobs() or slurm.jobs()[job] != "RUNNING"
    jobqueue.client.wait_for_workers(2, timeout=180)  # adapt submitted a new job
    assert job not in {j.job_id for j in jobqueue.cluster.workers.values()}
    _, stream_job = run_with_cancel(jobqueue, ["stream", train.url, *STREAM, "--model", str(
        tmp_path / "hit.npz"), *jobqueue.at], "fit_partition")
    X, _ = train.read_partition(0)
    np.testing.assert_array_equal(load_model(tmp_path / "hit.npz").decision_function(X),
                                  load_model(tmp_path / "s.npz").decision_function(X))
    jobqueue.client.wait_for_workers(2, timeout=180)
    print_figure("jobqueue SLURMCluster", fit_seconds=f"{fit.report['fit_seconds']:.1f}",
                 digest=fit.digest, accuracy=fit.accuracy,
                 cancelled_fit_seconds=f"{seconds:.1f}", cancelled_jobs=f"{job},{stream_job}",
                 same_model=True)


def test_a_job_submitted_onto_the_slurmcluster_is_followed_from_another_shell(
        jobqueue, cluster_data, embedded_reference, tmp_path):
    """``randsvm-dist submit`` in a process that exits at once; ``jobs status`` from a
    later one: done, the model identical."""
    train, _ = cluster_data
    job_dir = str(tmp_path / "jobs")
    submitted = cli("submit", "train", train.url, *TRAIN, "--model",
                    str(tmp_path / "job.model"), "--job-dir", job_dir, *jobqueue.at)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split()[0]
    t0 = time.monotonic()
    while True:
        status = cli("jobs", "status", job_id, "--job-dir", job_dir, "--json", *jobqueue.at)
        state = json.loads(status.stdout)["state"]
        if state not in ("submitted", "running"):
            break
        assert time.monotonic() - t0 < 300, f"job still {state}"
        time.sleep(2)
    assert state == "done" and status.returncode == 0, status.stdout
    assert model_digest(tmp_path / "job.model") == embedded_reference.digest
    print_figure("submit onto SLURMCluster", job_seconds=f"{time.monotonic() - t0:.1f}",
                 digest=model_digest(tmp_path / "job.model"))


