"""Run randsvm-dist over TLS on machines reachable by SSH (SSHCluster).

Needs: keyless SSH to every host, each host in ``~/.ssh/known_hosts`` (host keys are
checked: asyncssh's default; run ``ssh-keyscan`` once or ssh to each host by hand),
``pip install asyncssh`` here, and on every host the same Python environment with
randsvm-dist installed (same dask/distributed versions as here).

TLS: make a CA and a certificate once (``python -m randsvm_dist.engine.tls ~/.dask-tls
node0 node1 node2``), copy the directory to every host (same path), and put
``cluster/dask-tls.yaml`` into ``~/.config/dask/`` on every host: the scheduler and the
workers started over SSH read it (Dask's configuration), this script reads the same
files. Only holders of a certificate signed by that CA can connect.

The first host runs the scheduler; the others run the workers (repeat a host name
to also put workers there). The data set must be readable under the same path/URL on
every worker host (shared filesystem or an fsspec URL such as s3://bucket/cb-train).

    python cluster/ssh_cluster.py /shared/cb-train /shared/cb-test
"""

from __future__ import annotations

import os
import sys

from distributed import Client
from distributed.deploy.ssh import SSHCluster

from randsvm_dist import RandSVMClassifier
from randsvm_dist.engine.tls import make_security

TLS_DIR = os.path.expanduser("~/.dask-tls")  # ca.pem, cert.pem, key.pem on every host

HOSTS = ["node0", "node1", "node2"]  # scheduler on node0, workers on node1 and node2
CORES_PER_HOST = 16


def main(train: str, test: str) -> None:
    """Start the cluster, train RandSVM on ``train``, evaluate on ``test``, shut down."""
    security = make_security(f"{TLS_DIR}/ca.pem", f"{TLS_DIR}/cert.pem", f"{TLS_DIR}/key.pem")
    cluster = SSHCluster(
        HOSTS,
        connect_options={},  # host keys checked against ~/.ssh/known_hosts; add
        # {"username": ..., "client_keys": [...]} as needed, never known_hosts=None
        # TLS on the wire; the dashboard only on the scheduler host's loopback (reach it
        # with ssh -L 8787:localhost:8787 node0)
        scheduler_options={"port": 8786, "protocol": "tls",
                           "dashboard_address": "127.0.0.1:8787"},
        # one single-threaded worker process per core: LIBSVM solves and scans are
        # single-threaded per task (the nanny also sets OMP_NUM_THREADS=1 in each worker)
        worker_options={"n_workers": CORES_PER_HOST, "nthreads": 1},
        security=security,
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
