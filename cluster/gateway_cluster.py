"""Run randsvm-dist on a cluster from a Dask Gateway (``cluster/gateway_config.py``).

    pip install dask-gateway        # or: pip install 'randsvm-dist[cluster]'
    python cluster/gateway_cluster.py http://gateway:8000 USER /shared/cb-train /shared/cb-test

The password is read from ``$GATEWAY_PASSWORD`` (else asked for). The gateway starts a
scheduler and ``WORKERS`` single-threaded workers for you; their client is passed to
randsvm-dist as ``client=``. The data set must be readable by the gateway's workers under
the same path or URL. ``tests/cluster/test_gateway.py`` runs ``connect`` and ``train``.
"""

from __future__ import annotations

import getpass
import os
import sys

from randsvm_dist import RandSVMClassifier

WORKERS = 2


def connect(address: str, user: str, password: str, proxy_address: str | None = None):
    """A ``dask_gateway.Gateway`` logged in as ``user`` (HTTP Basic auth)."""
    from dask_gateway import BasicAuth, Gateway

    return Gateway(address, proxy_address=proxy_address, auth=BasicAuth(user, password))


def train(cluster, train_data: str, model: str, workers: int = WORKERS,
          test: str | None = None, **params) -> float | None:
    """Scale a gateway cluster to ``workers``, fit RandSVM on it with its client (passed as
    ``client=``), save the model; returns the accuracy on ``test`` (when given)."""
    cluster.scale(workers)
    with cluster.get_client(set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=600)
        est = RandSVMClassifier(**params, client=client).fit(train_data)
        est.save(model)
        return est.evaluate(test, client=client)["accuracy"] if test else None


if __name__ == "__main__":
    address, user, data, test_data = sys.argv[1:5]
    password = os.environ.get("GATEWAY_PASSWORD") or getpass.getpass()
    with connect(address, user, password).new_cluster() as gateway_cluster:
        print(train(gateway_cluster, data, "cb.model", kernel="rbf", C=100, gamma=1.0,
                    gap_tol=1e-3, random_state=0, test=test_data))
