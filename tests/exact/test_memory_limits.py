"""Fits under real worker memory limits (``dask worker --memory-limit``): the memory plan
refuses workers too small for the data in one line, before any work; a tight but
sufficient limit fits with no pause or restart; workers dying again and again end the fit
with a clear error, and ``--resume`` goes on from the checkpoint; re-read and cached data
give the same model."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import Dataset, make, make_arrays
from randsvm_dist.engine.worker_memory import MB, WorkerMemory
from randsvm_dist.exact.memory_plan import cache_fits, plan_memory, scan_task_bytes
from randsvm_dist.exceptions import ClusterError

FIT = {"C": 1.0, "gamma": 0.05, "random_state": 0}


@pytest.fixture
def curved(tmp_path) -> Path:
    """40,000 rows of the 16-feature curved set in 4 Parquet partitions."""
    path = tmp_path / "curved"
    make("curved16", path, rows=40_000, partitions=4, seed=1)
    return path


def test_the_plan_refuses_a_worker_too_small_for_one_scan_task_naming_need_and_limit():
    w = WorkerMemory("tcp://127.0.0.1:1", limit=300 * MB, baseline=200 * MB)
    with pytest.raises(ClusterError) as err:
        plan_memory([w], {w.address: 1}, np.array([1_000_000]), 16, 72.0, False, False,
                    1, 20_000, 200.0, 30 * MB)
    message = str(err.value)
    assert "\n" not in message
    assert "each worker needs at least" in message and "tcp://127.0.0.1:1 has 315 MB" in message
    need = int(message.split("at least ")[1].split(" MB")[0])
    assert need * 1e6 >= (200 * MB + scan_task_bytes(1_000_000, 72.0, 1, True)) / 0.7 - 1e6


def test_the_plan_moves_solves_to_the_client_and_shrinks_the_cache_by_what_workers_spare():
    roomy = WorkerMemory("w", limit=4000 * MB, baseline=200 * MB)
    plan = plan_memory([roomy], {"w": 1}, np.array([100_000] * 8), 16, 72.0, False, False,
                       1, 20_000, 200.0, 30 * MB)
    assert plan.solve_in == "workers" and plan.cache_mb == 200.0 and plan.limited
    tight = WorkerMemory("w", limit=800 * MB, baseline=200 * MB)
    plan = plan_memory([tight], {"w": 1}, np.array([100_000] * 8), 16, 72.0, False, False,
                       1, 20_000, 200.0, 30 * MB)
    assert plan.solve_in == "workers" and 16.0 <= plan.cache_mb < 200.0
    small = WorkerMemory("w", limit=450 * MB, baseline=200 * MB)
    plan = plan_memory([small], {"w": 1}, np.array([100_000] * 8), 16, 72.0, False, False,
                       1, 20_000, 200.0, 30 * MB)
    assert plan.solve_in == "client" and not plan.direct_fits
    unlimited = WorkerMemory("w", limit=0, baseline=200 * MB)
    plan = plan_memory([unlimited], {"w": 1}, np.array([100_000]), 16, 72.0, False, False,
                       1, 20_000, 200.0, 30 * MB)
    assert not plan.limited and plan.solve_in == "workers" and plan.cache_mb == 200.0


def test_workers_below_the_need_are_refused_in_seconds_before_any_work(tmp_path, curved,
                                                                      dask_cli_cluster):
    cluster = dask_cli_cluster(tmp_path / "cluster", memory_limit="150MB")
    try:
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match=r"each worker needs at least \d+ MB for this "
                                               r"data .*; tcp://127\.0\.0\.1:\d+ has 150 MB"):
            RandSVMClassifier(**FIT, cache=False, client=cluster.client).fit(str(curved))
        assert time.monotonic() - t0 < 60
        assert cluster.restarts_and_pauses() == (0, 0)
    finally:
        cluster.close()


def test_re_read_and_cached_partitions_give_the_same_model(tmp_path, curved, dask_client):
    reread = RandSVMClassifier(**FIT, cache=False, client=dask_client).fit(str(curved))
    cached = RandSVMClassifier(**FIT, cache=True, client=dask_client).fit(str(curved))
    assert reread.certified_ and cached.certified_
    np.testing.assert_array_equal(reread.support_, cached.support_)
    np.testing.assert_array_equal(reread.dual_coef_, cached.dual_coef_)
    np.testing.assert_array_equal(reread.intercept_, cached.intercept_)
    plan = json.loads(reread.history_[0]["memory_plan"])
    assert plan["solve_in"] in ("workers", "client") and plan["limited"]
    assert all(r["memory_plan"] is None for r in reread.history_[1:])


@pytest.mark.heavy
def test_a_tight_but_sufficient_limit_fits_with_no_pause_or_restart(tmp_path, curved,
                                                                   dask_cli_cluster):
    cluster = dask_cli_cluster(tmp_path / "cluster", memory_limit="512MB")
    try:
        est = RandSVMClassifier(**FIT, cache=False, client=cluster.client).fit(str(curved))
        assert est.certified_
        assert cluster.restarts_and_pauses() == (0, 0)
        # cache='auto': these rows fit beside a scan; 2e7 x 16 (1.4 GB) do not
        assert cache_fits(cluster.client, Dataset.open(str(curved)))
        big = SimpleNamespace(n_rows=20_000_000, n_features=16, is_sparse=False,
                              partition_rows=[250_000] * 80)
        assert not cache_fits(cluster.client, big)
        # the default (cache='auto') measures the workers twice: the modules the first
        # measure imported are not counted again
        auto = RandSVMClassifier(**FIT, client=cluster.client).fit(str(curved))
        assert auto.certified_ and cluster.restarts_and_pauses() == (0, 0)
        plan = json.loads(est.history_[0]["memory_plan"])
        assert 0 < max(r["scan_worker_rss"] for r in est.history_) < 0.8 * plan["worker_limit"]
        if plan["solve_in"] == "client":  # the workers only read and scan: neither
            loaded = cluster.client.run(   # scikit-learn nor pandas was imported there
                lambda: sorted({"sklearn", "pandas"} & set(sys.modules)))
            assert all(not mods for mods in loaded.values()), loaded
    finally:
        cluster.close()


@pytest.mark.heavy
def test_workers_killed_again_and_again_end_the_fit_and_resume_continues(tmp_path, curved,
                                                                        dask_cli_cluster):
    """Worker processes killed (SIGKILL) every second while the fit runs: the fit ends with
    a ClusterError naming the deaths within the loss bound, never a restart loop; a
    --resume run then finishes from the checkpoint with the undisturbed run's model."""
    cluster = dask_cli_cluster(tmp_path / "cluster", memory_limit="2GB")
    stop = threading.Event()

    def killer() -> None:
        while not stop.is_set():
            if (tmp_path / "ckpt").exists() and any((tmp_path / "ckpt").iterdir()):
                for pid in cluster.client.run(os.getpid, on_error="ignore").values():
                    if isinstance(pid, int):
                        os.kill(pid, signal.SIGKILL)
            stop.wait(1.0)

    try:
        whole = RandSVMClassifier(**FIT, cache=False, client=cluster.client).fit(str(curved))
        os.environ["RANDSVM_DIST_MAX_WORKER_LOSSES"] = "3"
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        with pytest.raises(ClusterError, match="workers died|killed"):
            RandSVMClassifier(**FIT, cache=False, client=cluster.client).fit(
                str(curved), checkpoint=str(tmp_path / "ckpt"))
        stop.set()
        thread.join()
        cluster.client.wait_for_workers(2, timeout=60)
        resumed = RandSVMClassifier(**FIT, cache=False, client=cluster.client).fit(
            str(curved), checkpoint=str(tmp_path / "ckpt"), resume=True)
        assert resumed.certified_
        reasons = [r["route_reason"] for r in resumed.history_]
        assert reasons[0] != "resumed" and reasons[-1] == "resumed"   # went on from it
        X, _ = make_arrays("curved16", 5_000, seed=2)
        assert np.mean(resumed.predict(X) == whole.predict(X)) > 0.998
    finally:
        os.environ.pop("RANDSVM_DIST_MAX_WORKER_LOSSES", None)
        stop.set()
        cluster.close()


def test_row_group_slices_of_one_file_give_the_model_of_whole_files(tmp_path, dask_client,
                                                                    monkeypatch):
    """The same rows as 4 files, and as one file whose row groups are read as 4
    partitions (each task reading only its row groups): the same model."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from randsvm_dist.data import parquet_layout

    X, y = make_arrays("curved16", 40_000, seed=1)
    whole = tmp_path / "files"
    whole.mkdir()
    big = tmp_path / "one.parquet"
    columns = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    table = pa.table({**columns, "label": y})
    for i in range(4):
        pq.write_table(table.slice(10_000 * i, 10_000), whole / f"part-{i}.parquet")
    pq.write_table(table, big, row_group_size=10_000)
    monkeypatch.setattr(parquet_layout, "SPLIT_ROWS", 10_000)
    from randsvm_dist.data import Dataset

    assert Dataset.open(big).n_partitions == 4 and Dataset.open(whole).n_partitions == 4
    fit = {**FIT, "cache": False, "client": dask_client}
    a = RandSVMClassifier(**fit).fit(str(whole))
    b = RandSVMClassifier(**fit).fit(str(big))
    assert a.certified_ and b.certified_
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
