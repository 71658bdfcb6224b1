"""Fixtures of the real-cluster tests: the data, the reference fit on the embedded default
(the cluster a user gets without naming one) and the services (``services.py``).

Every service fixture skips its tests with the reason when the service cannot be installed
or started here (not root, package missing, a daemon that did not come up: its log)."""

from __future__ import annotations

import json
import time

import pytest
from cluster_helpers import TRAIN, Fit, cli, close_gateway_clients_once, print_figure
from services import Gateway, Slurm, Sshd, Unavailable

from randsvm_dist.data import make_arrays, write_arrays


@pytest.fixture(scope="session")
def cluster_data(tmp_path_factory):
    """3,000 training and 1,000 test rows of checkerboard, 4 and 2 partitions."""
    tmp = tmp_path_factory.mktemp("clusterdata")
    X, y = make_arrays("checkerboard", 3000, seed=1)
    Xt, yt = make_arrays("checkerboard", 1000, seed=2)
    return (write_arrays(X, y, tmp / "train", partitions=4),
            write_arrays(Xt, yt, tmp / "test", partitions=2))


@pytest.fixture(scope="session")
def embedded_reference(cluster_data, tmp_path_factory) -> Fit:
    """The same fit as the cluster tests', on the embedded default (no --scheduler)."""
    train, test = cluster_data
    tmp = tmp_path_factory.mktemp("embedded")
    t0 = time.monotonic()
    done = cli("train", train.url, *TRAIN, "--model", str(tmp / "ref.model"), "--test",
               test.url, "--report", str(tmp / "ref.json"))
    assert done.returncode == 0, done.stderr
    fit = Fit(tmp / "ref.model", time.monotonic() - t0,
              json.loads((tmp / "ref.json").read_text()))
    print_figure("embedded default", seconds=f"{fit.seconds:.1f}",
                 fit_seconds=f"{fit.report['fit_seconds']:.1f}", digest=fit.digest,
                 accuracy=fit.accuracy)
    return fit


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A one-node SLURM (munged, slurmctld, slurmd) for the session; skips with the
    reason where it cannot be installed or started."""
    service = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no SLURM here: {e}")
    yield service
    service.stop()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """sshd on 127.0.0.2 and 127.0.0.3 (key login, host keys checked); skips with the
    reason where it cannot be installed or started."""
    service = Sshd(tmp_path_factory.mktemp("sshd"))
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no sshd here: {e}")
    yield service
    service.stop()


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    """A Dask Gateway (cluster/gateway_config.py) with users alice and bob; skips with the
    reason where it cannot be installed or started."""
    service = Gateway(tmp_path_factory.mktemp("gateway"),
                      {"alice": "alice-secret", "bob": "bob-secret"})
    try:
        service.start()
    except Unavailable as e:
        service.stop()
        pytest.skip(f"no Dask Gateway here: {e}")
    close_gateway_clients_once()
    yield service
    service.stop()
