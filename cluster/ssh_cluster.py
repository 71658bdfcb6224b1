"""Run randsvm-dist over TLS on machines reachable by SSH (SSHCluster).

Needs: key-based SSH to every host, each host's key in ``~/.ssh/known_hosts`` (host keys
are checked: asyncssh's default; run ``ssh-keyscan`` once or ssh to each host by hand),
``pip install asyncssh`` here (or ``pip install 'randsvm-dist[cluster]'``), and on every
host the same Python environment with randsvm-dist installed (same dask/distributed
versions as here).

TLS: make a CA and a certificate once (``python -m randsvm_dist.engine.tls ~/.dask-tls
node0 node1 node2``) and copy the directory to every host (same path). ``make_cluster``
sets Dask's TLS configuration (``tls_config``) while it starts the cluster: SSHCluster
hands this process's Dask configuration to the scheduler and the workers it starts over
SSH, so they use the same files; only holders of a certificate signed by that CA can
connect.

The first host runs the scheduler; the others run the workers (repeat a host name to
also put workers there). The data set must be readable under the same path/URL on every
worker host (shared filesystem or an fsspec URL such as s3://bucket/cb-train).

    python cluster/ssh_cluster.py /shared/cb-train /shared/cb-test

``tests/cluster/test_ssh.py`` runs ``make_cluster`` against an sshd on this machine with
two hosts (127.0.0.2, 127.0.0.3), kills one host's worker mid-fit and gets the same model.
"""

from __future__ import annotations

import os
import sys

import dask
from distributed import Client
from distributed.deploy.ssh import SSHCluster

from randsvm_dist import RandSVMClassifier
from randsvm_dist.engine.tls import make_security

TLS_DIR = os.path.expanduser("~/.dask-tls")  # ca.pem, cert.pem, key.pem on every host

HOSTS = ["node0", "node1", "node2"]  # scheduler on node0, workers on node1 and node2
# override any of these as make_cluster's keyword arguments
SITE = {"cores_per_host": 16,  # single-threaded worker processes per worker host
        "remote_python": "/opt/venvs/randsvm/bin/python",  # the env with randsvm-dist
        "connect_options": {},  # e.g. {"username": ..., "client_keys": [...]}; host keys
        # are checked against ~/.ssh/known_hosts: never set "known_hosts": None
        "scheduler_host": None,  # None: the scheduler listens on all its addresses
        "interface": None,  # the workers' network interface, e.g. "ib0"
        "port": 8786, "dashboard_address": "127.0.0.1:8787"}


def tls_config(tls_dir: str) -> dict:
    """Dask's configuration for TLS-only connections with the files in ``tls_dir``."""
    files = {"cert": f"{tls_dir}/cert.pem", "key": f"{tls_dir}/key.pem"}
    return {"distributed.comm.require-encryption": True,
            "distributed.comm.default-scheme": "tls",
            "distributed.comm.tls.ca-file": f"{tls_dir}/ca.pem",
            **{f"distributed.comm.tls.{role}.{k}": v for role in ("scheduler", "worker",
                                                                   "client")
               for k, v in files.items()}}


def make_cluster(hosts: list[str] = HOSTS, tls_dir: str = TLS_DIR, **site) -> SSHCluster:
    """Start the scheduler on ``hosts[0]`` and workers on the others, TLS only.

    Args:
        hosts: the scheduler's host, then the worker hosts.
        tls_dir: CA, certificate and key, at this path on every host.
        site: overrides of ``SITE``.
    """
    s = {**SITE, **site}
    security = make_security(f"{tls_dir}/ca.pem", f"{tls_dir}/cert.pem",
                             f"{tls_dir}/key.pem")
    worker = {"n_workers": s["cores_per_host"], "nthreads": 1}
    if s["interface"]:
        worker["interface"] = s["interface"]
    # the dashboard only on the scheduler host's loopback (ssh -L 8787:localhost:8787 node0)
    scheduler = {"port": s["port"], "protocol": "tls",
                 "dashboard_address": s["dashboard_address"]}
    if s["scheduler_host"]:
        scheduler["host"] = s["scheduler_host"]
    # what the remote processes inherit: TLS, and Dask's INFO log, whose "Scheduler at" and
    # "worker at" lines SSHCluster waits for (a quieter level set in this process, e.g.
    # by randsvm-dist's command line, would leave it waiting forever)
    with dask.config.set({**tls_config(tls_dir), "logging.distributed": "info"}):
        # one single-threaded worker process per core: LIBSVM solves and scans are
        # single-threaded per task (the nanny also sets OMP_NUM_THREADS=1 in each worker)
        return SSHCluster(hosts, connect_options=s["connect_options"],
                          worker_options=worker, scheduler_options=scheduler,
                          security=security, remote_python=s["remote_python"])


def main(train: str, test: str) -> None:
    """Start the cluster, train RandSVM on ``train``, evaluate on ``test``, shut down."""
    with make_cluster() as cluster, Client(cluster) as client:
        est = RandSVMClassifier(kernel="rbf", C=100, gamma=1.0, gap_tol=1e-3,
                                random_state=0, client=client)
        est.fit(train)
        print(est.evaluate(test))
        est.save("cb.model")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
