"""TLS on loopback with certificates made here, bounded waits on an empty cluster, and
errors that name the partition and the worker (KilledWorker, a data path a worker lacks).
The recipes of ``cluster/`` are started for real in ``tests/cluster/`` (SLURM, SSH, a Dask
Gateway; the Kubernetes manifest and Dockerfile checked by their parsers)."""

from __future__ import annotations

import os
import shutil
import time

import dask
import pytest

from randsvm_dist.app.model_io import save_model
from randsvm_dist.cli import main as cli_main
from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.distributed.predict import evaluate_dataset
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.tls import make_security, write_certificates
from randsvm_dist.exceptions import ClusterError, DataFormatError
from randsvm_dist.streaming import StreamSVM


@pytest.fixture(scope="module")
def model_and_data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safety")
    X, y = make_arrays("twonorm", 400, seed=2)
    save_model(StreamSVM(C=1.0).fit(X, y), tmp / "m.npz")
    return tmp / "m.npz", write_arrays(X, y, tmp / "d", partitions=2)


def test_tls_round_trip_on_loopback_and_a_client_without_certificates_is_refused(
        tmp_path, model_and_data, capsys):
    from distributed import LocalCluster, Security

    model, data = model_and_data
    files = write_certificates(tmp_path / "tls", ("127.0.0.1", "localhost"))
    other = write_certificates(tmp_path / "other", ("127.0.0.1",))
    assert oct(os.stat(files["key"]).st_mode & 0o777) == "0o600"
    server = Security(tls_ca_file=files["ca"], tls_scheduler_cert=files["cert"],
                      tls_scheduler_key=files["key"], tls_worker_cert=files["cert"],
                      tls_worker_key=files["key"], tls_client_cert=files["cert"],
                      tls_client_key=files["key"], require_encryption=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                      host="127.0.0.1", security=server, dashboard_address=":0") as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        tls = ["--tls-ca-file", files["ca"], "--tls-cert", files["cert"], "--tls-key",
               files["key"]]
        assert cli_main(["evaluate", str(model), data.url, "--scheduler", address, "--json",
                         *tls]) == 0
        assert '"accuracy"' in capsys.readouterr().out
        with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
            assert cli_main(["evaluate", str(model), data.url, "--scheduler", address]) == 2
            assert "cannot reach the Dask scheduler" in capsys.readouterr().err
            wrong = ["--tls-ca-file", other["ca"], "--tls-cert", other["cert"], "--tls-key",
                     other["key"]]
            assert cli_main(["evaluate", str(model), data.url, "--scheduler", address,
                             *wrong]) == 2
            assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    with pytest.raises(Exception, match="missing --tls-key"):
        make_security(files["ca"], files["cert"], None)


def test_gather_on_an_empty_cluster_gives_up_with_a_clear_error():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        futures = [client.submit(sum, [i, 1], pure=False) for i in range(3)]
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match=r"predictions of x.*3 of 3 tasks unfinished"
                                               r".*no workers.*dask worker"):
            gather(client, futures, "predictions of x", empty_timeout=2)
        assert time.monotonic() - t0 < 15
        with pytest.raises(ClusterError, match="gave up after 1 s waiting for y"):
            gather(client, futures, "y", timeout=1, empty_timeout=100)


def _die():
    os._exit(1)


def test_killed_worker_is_reported_with_the_partition_and_the_worker():
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        future = client.submit(_die, pure=False)
        with pytest.raises(ClusterError, match=r"fit of d: partition 7 killed 1 worker "
                                               r"processes \(last tcp://"):
            gather(client, [future], "fit of d", ["partition 7"], empty_timeout=60)


def test_a_data_path_missing_on_the_worker_names_partition_and_worker(dask_client,
                                                                      model_and_data,
                                                                      tmp_path):
    from randsvm_dist.app.model_io import load_model
    from randsvm_dist.data import Dataset

    model, data = model_and_data
    copy = tmp_path / "copy"
    shutil.copytree(data.url, copy)
    ds = Dataset.open(copy)
    (copy / "part-00001.parquet").unlink()  # e.g. not mounted on the worker
    with pytest.raises(DataFormatError, match=r"cannot read partition 1 .* on worker tcp://"):
        evaluate_dataset(load_model(model), ds, client=dask_client)
