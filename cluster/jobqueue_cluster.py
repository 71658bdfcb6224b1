"""Run randsvm-dist on a SLURM or PBS cluster through dask-jobqueue.

Run this on a login node (``pip install dask-jobqueue`` in the same environment as
randsvm-dist, or ``pip install 'randsvm-dist[cluster]'``). Each batch job is one node
running ``cores`` single-threaded worker processes; the scheduler runs here, in this
process. The data set must be on a filesystem every compute node mounts (or an fsspec URL
such as s3://...).

    python cluster/jobqueue_cluster.py slurm /scratch/$USER/cb-train /scratch/$USER/cb-test

Every connection is TLS: the first run makes a CA and a certificate in ``~/.dask-tls``
(``randsvm_dist.engine.tls.write_certificates``, keys mode 0600, on the shared home the
compute nodes mount) and dask-jobqueue passes them to the scheduler and every worker
(``protocol="tls://"``, ``security=``).

Batch jobs end when their allocation does (``walltime``): each worker retires itself a
little before (``--lifetime``), and ``cluster.adapt(minimum_jobs=N, maximum_jobs=N)``
submits a new job for every one that ended or was cancelled (``scancel``); tasks of a
lost worker run again elsewhere, so a fit ends with the same model.
``tests/cluster/test_slurm.py`` runs ``make_cluster`` on a one-node SLURM.
"""

from __future__ import annotations

import os
import sys

from distributed import Client

from randsvm_dist.distributed.streaming import fit_streaming
from randsvm_dist.engine.tls import make_security, write_certificates
from randsvm_dist.streaming import BudgetedSGD

TLS_DIR = os.path.expanduser("~/.dask-tls")

# a site's batch job: one node; override any of these as make_cluster's keyword arguments
SITE = {"queue": "compute", "account": "myproject",
        "cores": 32,  # cores per node (= worker processes per job, one thread each)
        "memory": "120GB", "walltime": "02:00:00", "lifetime": "115m",
        "interface": None,  # e.g. "ib0"; None: the hostname's address
        "dashboard_address": "127.0.0.1:8787", "log_directory": "dask-logs"}


def prologue() -> list[str]:
    """Lines each batch job runs before its workers: one thread per process, and the
    environment with randsvm-dist ($RANDSVM_VENV; unset: the environment sbatch exports
    from this shell)."""
    lines = ["export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1"]
    if os.environ.get("RANDSVM_VENV"):
        lines.append(f"source {os.environ['RANDSVM_VENV']}/bin/activate")
    return lines


def make_cluster(kind: str, tls_dir: str = TLS_DIR, **site):
    """A SLURMCluster or PBSCluster of single-threaded workers, TLS only.

    Args:
        kind: "slurm" or "pbs".
        tls_dir: where the CA, certificate and key are (made here the first time).
        site: overrides of ``SITE`` (queue, account, cores, memory, walltime, lifetime,
            interface, dashboard_address, log_directory).
    """
    s = {**SITE, **site}
    if not os.path.exists(f"{tls_dir}/key.pem"):
        write_certificates(tls_dir, ("localhost",))  # hostname checks are off in Dask
    common = dict(
        protocol="tls://", security=make_security(
            f"{tls_dir}/ca.pem", f"{tls_dir}/cert.pem", f"{tls_dir}/key.pem"),
        scheduler_options={"dashboard_address": s["dashboard_address"],
                           "interface": s["interface"]},
        queue=s["queue"], account=s["account"], cores=s["cores"], processes=s["cores"],
        memory=s["memory"], walltime=s["walltime"], interface=s["interface"],
        # a worker leaves before its allocation ends; adapt() replaces its job
        worker_extra_args=["--lifetime", s["lifetime"], "--lifetime-stagger", "1m"],
        job_script_prologue=prologue(), local_directory="${TMPDIR:-/tmp}",
        log_directory=s["log_directory"])
    if kind == "slurm":
        from dask_jobqueue import SLURMCluster

        return SLURMCluster(**common)
    if kind == "pbs":
        from dask_jobqueue import PBSCluster

        return PBSCluster(resource_spec=f"select=1:ncpus={s['cores']}:mem={s['memory']}",
                          **common)
    raise SystemExit(f"kind must be slurm or pbs; got {kind!r}")


def main(kind: str, train: str, test: str, jobs: int = 4) -> None:
    """Keep ``jobs`` node jobs running, fit a budgeted SGD model in one pass, evaluate."""
    from randsvm_dist.distributed.predict import evaluate_dataset

    with make_cluster(kind) as cluster, Client(cluster) as client:
        print(cluster.job_script())  # the batch script each job runs
        cluster.adapt(minimum_jobs=jobs, maximum_jobs=jobs)
        client.wait_for_workers(jobs * SITE["cores"], timeout=1800)  # queue wait
        model = fit_streaming(BudgetedSGD(C=10, gamma=1.0, budget=500, random_state=0),
                              train, client=client)
        print(model.reduce_info_["seconds"], evaluate_dataset(model, test, client=client))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
