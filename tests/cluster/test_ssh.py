"""``cluster/ssh_cluster.py`` for real: an sshd on this machine serving two "hosts"
(127.0.0.2 and 127.0.0.3; key login, host keys checked against a known_hosts file), the
scheduler and a worker on the first, a worker on the second, TLS between all of them. A
fit, then the same fit with one host's worker killed: the embedded default's model."""

from __future__ import annotations

import asyncio
import os
import sys
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

from randsvm_dist import RandSVMClassifier

pytestmark = pytest.mark.heavy


def test_a_host_whose_key_is_not_in_known_hosts_is_refused(sshd, tmp_path):
    """Host keys are checked: a known_hosts with another key for the host refuses it."""
    asyncssh = pytest.importorskip("asyncssh", reason="pip install asyncssh")
    other = tmp_path / "other"
    os.system(f"ssh-keygen -q -t ed25519 -N '' -f {other}")
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.3]:{sshd.port} "
                     + " ".join(other.with_suffix(".pub").read_text().split()[:2]) + "\n")

    async def login(known_hosts: str) -> str:
        options = {**sshd.connect_options(), "known_hosts": known_hosts}
        async with asyncssh.connect("127.0.0.3", **options) as conn:
            return (await conn.run("echo $SSH_CONNECTION")).stdout

    assert asyncio.run(login(str(sshd.known_hosts))).split()[2] == "127.0.0.3"
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        asyncio.run(login(str(wrong)))


def host_of_workers(client) -> dict[str, str]:
    """Worker address -> the SSH host it was started on (from its SSH session)."""
    return {w: env.split()[2] for w, env in client.run(
        lambda: os.environ.get("SSH_CONNECTION", "? ? ?")).items()}


def fit(client, train, path, test=None) -> tuple[float, float | None]:
    """The recipe's Python route: an estimator given the SSHCluster's client, saved to
    ``path``; (seconds, accuracy on ``test`` when given)."""
    t0 = time.monotonic()
    est = RandSVMClassifier(**TRAIN_PARAMS, client=client).fit(train.url)
    est.save(path)
    seconds = time.monotonic() - t0
    return seconds, est.evaluate(test.url)["accuracy"] if test is not None else None


def test_ssh_cluster_trains_and_a_killed_host_worker_changes_nothing(
        sshd, cluster_data, embedded_reference, tmp_path):
    pytest.importorskip("asyncssh", reason="pip install asyncssh (randsvm-dist[cluster])")
    from distributed import Client

    from randsvm_dist.engine.tls import write_certificates

    train, test = cluster_data
    tls = tmp_path / "tls"
    write_certificates(tls, ("127.0.0.2", "127.0.0.3"))
    t0 = time.monotonic()
    cluster = load_recipe("ssh_cluster").make_cluster(
        ["127.0.0.2", "127.0.0.2", "127.0.0.3"], str(tls), cores_per_host=1,
        remote_python=sys.executable, connect_options=sshd.connect_options(),
        scheduler_host="127.0.0.2", interface="lo", port=0,
        dashboard_address="127.0.0.1:0")
    with cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        start_seconds = time.monotonic() - t0
        assert cluster.scheduler_address.startswith("tls://127.0.0.2:")
        hosts = host_of_workers(client)
        assert sorted(hosts.values()) == ["127.0.0.2", "127.0.0.3"]
        seconds, accuracy = fit(client, train, tmp_path / "m.model", test)
        assert model_digest(tmp_path / "m.model") == embedded_reference.digest
        assert accuracy == embedded_reference.accuracy

        run = threading.Thread(target=fit, args=(client, train, tmp_path / "hit.model"))
        run.start()
        victim = kill_a_busy_worker_mid_run(client, run)
        run.join(300)
        assert not run.is_alive()
        assert model_digest(tmp_path / "hit.model") == embedded_reference.digest
        client.wait_for_workers(2, timeout=120)  # the host's nanny started a new one
    print_figure("SSHCluster", start_seconds=f"{start_seconds:.1f}",
                 fit_seconds=f"{seconds:.1f}", digest=model_digest(tmp_path / "m.model"),
                 accuracy=accuracy, killed_worker_host=hosts[victim], same_model=True)
