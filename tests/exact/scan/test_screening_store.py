"""Screening bounds kept on the workers (``randsvm.screening_store``): what a scan finds or
misses there changes the time of a fit, never its model."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.scan import screening_store


@pytest.fixture()
def store(monkeypatch, tmp_path):
    monkeypatch.setattr(screening_store, "_store", {})
    monkeypatch.setattr(screening_store, "_on_disk", {})
    monkeypatch.setattr(screening_store.tempfile, "gettempdir", lambda: str(tmp_path))
    return screening_store


def test_bounds_are_found_only_for_their_run_partition_and_iteration(store):
    a = np.arange(4, dtype=np.float32)
    assert store.put("run1", 0, 3, a)
    assert store.get("run1", 0, 3) is a
    assert store.get("run1", 0, 2) is None      # an older scan's bounds are gone
    assert store.get("run1", 1, 3) is None
    assert store.get("run2", 0, 3) is None
    assert store.put("run1", 0, 4, a + 1)
    assert store.get("run1", 0, 3) is None
    np.testing.assert_array_equal(store.get("run1", 0, 4), a + 1)
    assert store.drop("run1") == 1 and store.get("run1", 0, 4) is None


def test_memory_evicts_other_runs_first_then_bounds_go_to_disk(store, monkeypatch, tmp_path):
    monkeypatch.setattr(store, "MAX_BYTES", 1000)
    monkeypatch.setattr(store, "DISK_RESERVE", 0)
    old = np.zeros(100, np.float32)            # 400 bytes each
    assert store.put("old", 0, 1, old) and store.put("old", 1, 1, old)
    assert store.put("new", 0, 1, old)         # evicts one of the old run's
    assert store.get("new", 0, 1) is not None
    assert sum(store.get("old", i, 1) is not None for i in (0, 1)) == 1
    big = np.arange(2000, dtype=np.float32).reshape(2, 1000, 1)   # 8000 bytes: on disk
    assert store.put("new", 1, 1, big)
    assert ("new", 1) not in store._store and ("new", 1) in store._on_disk
    files = list((tmp_path).rglob("*.npy"))
    assert len(files) == 1 and files[0].stat().st_size >= big.nbytes
    np.testing.assert_array_equal(store.get("new", 1, 1), big)
    assert store.get("new", 1, 0) is None      # another scan's bounds: not these
    assert store.put("new", 1, 2, big + 1)     # replaced in place, the file rewritten
    np.testing.assert_array_equal(store.get("new", 1, 2), big + 1)
    assert store.drop("new") == 2
    assert store.get("new", 1, 2) is None and not list(tmp_path.rglob("*.npy"))


def test_a_disk_without_room_keeps_nothing(store, monkeypatch):
    monkeypatch.setattr(store, "MAX_BYTES", 1000)
    monkeypatch.setattr(store, "DISK_RESERVE", 1 << 62)   # no disk has this much free
    assert not store.put("new", 1, 1, np.zeros(1000, np.float32))
    assert store.get("new", 1, 1) is None


def test_a_lost_file_is_a_miss(store, monkeypatch, tmp_path):
    monkeypatch.setattr(store, "MAX_BYTES", 0)
    monkeypatch.setattr(store, "DISK_RESERVE", 0)
    assert store.put("run", 3, 1, np.ones(10, np.float32))
    for f in tmp_path.rglob("*.npy"):
        f.unlink()
    assert store.get("run", 3, 1) is None


def _fit(client, data, **kw):
    return RandSVMClassifier(C=100.0, gamma=1.0, sample_size=800, route="sample",
                             random_state=3, client=client, **kw).fit(data)


def test_a_fit_that_loses_its_bounds_ends_with_the_same_model(tmp_path, monkeypatch):
    """Scans that find no bounds (every worker lost its store, as after restarts) evaluate
    every row and the fit ends exactly where the screened fit does; the screened fit did
    skip rows, on the workers that kept them (in-process cluster: the store is shared with
    this test, which makes every lookup miss in the second fit)."""
    from distributed import Client, LocalCluster

    X, y = make_arrays("checkerboard", 12000, seed=8)
    data = str(tmp_path / "cb")
    write_arrays(X, y, data, partitions=6)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        screened = _fit(c, data)
        assert screening_store._store == {}      # dropped when the run ended
        monkeypatch.setattr(screening_store, "get", lambda *a: None)
        missed = _fit(c, data)
    n = len(y)
    assert any(h["rows_evaluated"] < n for h in screened.history_[1:])
    assert all(h["rows_evaluated"] == n for h in missed.history_)
    np.testing.assert_array_equal(screened.support_, missed.support_)
    np.testing.assert_array_equal(screened.dual_coef_, missed.dual_coef_)
    np.testing.assert_array_equal(screened.intercept_, missed.intercept_)
    keep = ("n_support", "n_violators", "n_errors", "max_slack", "sample_size")
    assert ([{k: h[k] for k in keep} for h in screened.history_]
            == [{k: h[k] for k in keep} for h in missed.history_])
    # sums over rows whose split into tasks follows where the partitions are: the same
    # within float64 rounding
    for k in ("primal_objective", "relative_gap"):
        assert ([h[k] for h in screened.history_]
                == pytest.approx([h[k] for h in missed.history_], rel=1e-12, abs=1e-15))


def test_bounds_on_the_workers_disks_screen_as_those_in_memory(tmp_path, monkeypatch):
    """A worker whose memory holds no bounds (capacity 0) writes them to its local
    directory: the fit skips exactly the rows it skips with them in memory, ends with the
    same model, and leaves no file behind."""
    from distributed import Client, LocalCluster

    X, y = make_arrays("checkerboard", 12000, seed=8)
    data = str(tmp_path / "cb")
    write_arrays(X, y, data, partitions=6)
    monkeypatch.setattr(screening_store, "DISK_RESERVE", 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None, local_directory=str(tmp_path / "w")) as lc, \
            Client(lc, set_as_default=False) as c:
        in_memory = _fit(c, data)
        monkeypatch.setattr(screening_store, "MAX_BYTES", 0)
        written = []
        real = screening_store._put_on_disk
        monkeypatch.setattr(screening_store, "_put_on_disk",
                            lambda *a: written.append(a[0]) or real(*a))
        on_disk = _fit(c, data)
    assert written and screening_store._on_disk == {}
    assert not list((tmp_path / "w").rglob("*.npy"))
    rows = [h["rows_evaluated"] for h in in_memory.history_]
    assert rows == [h["rows_evaluated"] for h in on_disk.history_]
    assert any(r < len(y) for r in rows[1:])
    np.testing.assert_array_equal(in_memory.support_, on_disk.support_)
    np.testing.assert_array_equal(in_memory.dual_coef_, on_disk.dual_coef_)
