"""Run randsvm-dist on machines reachable by SSH (distributed.deploy.ssh.SSHCluster).

Needs: keyless SSH to every host, ``pip install asyncssh`` here, and on every host the
same Python environment with randsvm-dist installed (same dask/distributed versions as
here). The first host runs the scheduler; the others run the workers (repeat a host name
to also put workers there). The data set must be readable under the same path/URL on
every worker host (shared filesystem or an fsspec URL such as s3://bucket/cb-train).

    python cluster/ssh_cluster.py /shared/cb-train /shared/cb-test
"""

from __future__ import annotations

import sys

from distributed import Client
from distributed.deploy.ssh import SSHCluster

from randsvm_dist import RandSVMClassifier

HOSTS = ["node0", "node1", "node2"]  # scheduler on node0, workers on node1 and node2
CORES_PER_HOST = 16


def main(train: str, test: str) -> None:
    """Start the cluster, train RandSVM on ``train``, evaluate on ``test``, shut down."""
    cluster = SSHCluster(
        HOSTS,
        connect_options={"known_hosts": None},  # or {"username": ..., "client_keys": [...]}
        # one single-threaded worker process per core: LIBSVM solves and scans are
        # single-threaded per task (the nanny also sets OMP_NUM_THREADS=1 in each worker)
        worker_options={"n_workers": CORES_PER_HOST, "nthreads": 1},
        scheduler_options={"port": 8786, "dashboard_address": ":8787"},
        remote_python="/opt/venvs/randsvm/bin/python",  # the env with randsvm-dist
    )
    with cluster, Client(cluster) as client:
        est = RandSVMClassifier(kernel="rbf", C=100, gamma=1.0, gap_tol=1e-3,
                                random_state=0, client=client)
        est.fit(train)
        print(est.evaluate(test))
        est.save("cb.model")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
