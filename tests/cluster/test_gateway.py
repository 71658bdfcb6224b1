"""A Dask Gateway for real: ``dask-gateway-server -f cluster/gateway_config.py`` (local
processes, a password per user) on loopback. Alice's ``Gateway().new_cluster()`` client
is passed as ``client=``: the embedded default's model, also with a worker killed mid-fit;
Bob, another user, can neither see nor reach her cluster."""

from __future__ import annotations

import threading
import time

import pytest
from cluster_helpers import (
    TRAIN_PARAMS,
    kill_a_busy_worker_mid_run,
    load_recipe,
    model_digest,
    print_figure,
)

pytestmark = pytest.mark.heavy


def test_a_gateway_cluster_trains_and_another_user_cannot_reach_it(
        gateway, cluster_data, embedded_reference, tmp_path):
    recipe = load_recipe("gateway_cluster")
    train, test = cluster_data
    alice = recipe.connect(gateway.address, "alice", "alice-secret", gateway.proxy_address)
    bob = recipe.connect(gateway.address, "bob", "bob-secret", gateway.proxy_address)
    mallory = recipe.connect(gateway.address, "alice", "guess", gateway.proxy_address)
    t0 = time.monotonic()
    with alice.new_cluster() as cluster:
        # the other user: no list entry, no connection, no stop; a wrong password: nothing
        assert [c.name for c in alice.list_clusters()] == [cluster.name]
        assert bob.list_clusters() == []
        with pytest.raises(Exception, match="403.*Forbidden"):
            bob.connect(cluster.name)
        try:
            bob.stop_cluster(cluster.name)
        except Exception as e:  # refused, or ignored: either way her cluster runs on
            assert "403" in str(e)
        assert alice.list_clusters()[0].status.name == "RUNNING"
        with pytest.raises(Exception, match="401|Unauthorized"):
            mallory.list_clusters()
        # a client with TLS credentials of its own (not the cluster's) is refused
        from distributed import Client

        from randsvm_dist.engine.tls import make_security, write_certificates

        own = write_certificates(tmp_path / "own", ("127.0.0.1",))
        with pytest.raises((OSError, TimeoutError)):
            Client(cluster.scheduler_address, timeout="5s", set_as_default=False,
                   security=make_security(own["ca"], own["cert"], own["key"]))

        accuracy = recipe.train(cluster, train.url, str(tmp_path / "m.model"), test=test.url,
                                **TRAIN_PARAMS)
        seconds = time.monotonic() - t0
        assert model_digest(tmp_path / "m.model") == embedded_reference.digest
        assert accuracy == embedded_reference.accuracy

        with cluster.get_client(set_as_default=False) as client:
            run = threading.Thread(target=recipe.train, args=(
                cluster, train.url, str(tmp_path / "hit.model")), kwargs=TRAIN_PARAMS)
            run.start()
            victim = kill_a_busy_worker_mid_run(client, run)
            run.join(300)
            assert not run.is_alive()
        assert model_digest(tmp_path / "hit.model") == embedded_reference.digest
    for g in (alice, bob, mallory):
        g.close()
    print_figure("Dask Gateway", cluster_and_fit_seconds=f"{seconds:.1f}",
                 digest=model_digest(tmp_path / "m.model"), accuracy=accuracy,
                 killed_worker=victim, same_model=True)
