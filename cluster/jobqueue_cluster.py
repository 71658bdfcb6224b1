"""Run randsvm-dist on a SLURM or PBS cluster through dask-jobqueue.

Run this on a login node (``pip install dask-jobqueue`` in the same environment as
randsvm-dist). Each batch job is one node running ``cores`` single-threaded worker
processes; the scheduler runs here, in this process. The data set must be on a filesystem
every compute node mounts (or an fsspec URL such as s3://...).

    python cluster/jobqueue_cluster.py slurm /scratch/$USER/cb-train /scratch/$USER/cb-test

Every connection is TLS: the first run makes a CA and a certificate in ``~/.dask-tls``
(``randsvm_dist.engine.tls.write_certificates``, keys mode 0600, on the shared home the
compute nodes mount) and dask-jobqueue passes them to the scheduler and every worker
(``protocol="tls://"``, ``security=``).
"""

from __future__ import annotations

import os
import sys

from distributed import Client

from randsvm_dist.distributed.streaming import fit_streaming
from randsvm_dist.engine.tls import make_security, write_certificates
from randsvm_dist.streaming import BudgetedSGD

TLS_DIR = os.path.expanduser("~/.dask-tls")

CORES = 32  # cores per node (= worker processes per job, one thread each)
PROLOGUE = [
    "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1",
    "source /path/to/venv/bin/activate",  # the environment with randsvm-dist
]


def make_cluster(kind: str):
    """A SLURMCluster or PBSCluster of single-threaded workers, TLS only."""
    if not os.path.exists(f"{TLS_DIR}/key.pem"):
        write_certificates(TLS_DIR, ("localhost",))  # hostname checks are off in Dask
    tls = {"protocol": "tls://", "security": make_security(
        f"{TLS_DIR}/ca.pem", f"{TLS_DIR}/cert.pem", f"{TLS_DIR}/key.pem"),
        "scheduler_options": {"dashboard_address": "127.0.0.1:8787"}}
    if kind == "slurm":
        from dask_jobqueue import SLURMCluster

        return SLURMCluster(queue="compute", account="myproject", cores=CORES,
                            processes=CORES, memory="120GB", walltime="02:00:00",
                            job_script_prologue=PROLOGUE,
                            local_directory="$TMPDIR", log_directory="dask-logs", **tls)
    if kind == "pbs":
        from dask_jobqueue import PBSCluster

        return PBSCluster(queue="workq", account="myproject", cores=CORES,
                          processes=CORES, memory="120GB", walltime="02:00:00",
                          resource_spec=f"select=1:ncpus={CORES}:mem=120GB",
                          job_script_prologue=PROLOGUE,
                          local_directory="$TMPDIR", log_directory="dask-logs", **tls)
    raise SystemExit(f"kind must be slurm or pbs; got {kind!r}")


def main(kind: str, train: str, test: str) -> None:
    """Start 4 node jobs, fit a budgeted SGD model in one pass, evaluate it."""
    from randsvm_dist.distributed.predict import evaluate_dataset

    with make_cluster(kind) as cluster, Client(cluster) as client:
        print(cluster.job_script())  # the batch script each job runs
        cluster.scale(jobs=4)
        client.wait_for_workers(4 * CORES, timeout=1800)  # queue wait
        model = fit_streaming(BudgetedSGD(C=10, gamma=1.0, budget=500, random_state=0),
                              train, client=client)
        print(model.reduce_info_["seconds"], evaluate_dataset(model, test, client=client))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
