"""Screening bounds kept on the workers (``randsvm.screening_store``): what a scan finds or
misses there changes the time of a fit, never its model."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.scan import screening_store


@pytest.fixture()
def store(monkeypatch):
    monkeypatch.setattr(screening_store, "_store", {})
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


def test_the_store_evicts_other_runs_first_and_refuses_what_cannot_fit(store, monkeypatch):
    monkeypatch.setattr(store, "MAX_BYTES", 1000)
    old = np.zeros(100, np.float32)            # 400 bytes each
    assert store.put("old", 0, 1, old) and store.put("old", 1, 1, old)
    assert store.put("new", 0, 1, old)         # evicts one of the old run's
    assert store.get("new", 0, 1) is not None
    assert sum(store.get("old", i, 1) is not None for i in (0, 1)) == 1
    assert not store.put("new", 1, 1, np.zeros(1000, np.float32))   # 4000 bytes: never fits
    assert store.get("new", 1, 1) is None


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
    keep = ("n_support", "n_violators", "n_errors", "max_slack", "primal_objective",
            "relative_gap", "sample_size")
    assert ([{k: h[k] for k in keep} for h in screened.history_]
            == [{k: h[k] for k in keep} for h in missed.history_])
