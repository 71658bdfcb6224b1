"""Array input placed on the workers once (scattered, never inside a task graph), rebuilt
after a worker dies; the layout (CSR or dense) chosen by density gives the same model."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays
from randsvm_dist.engine.inputs import load_partitions
from randsvm_dist.engine.partition_build import preferred_layout
from randsvm_dist.engine.partitions import fetch_rows


def _largest_task_spec(prefixes: tuple, dask_scheduler=None) -> int:
    """Pickled size of the largest task spec among keys with these prefixes (on the
    scheduler)."""
    import pickle

    sizes = [len(pickle.dumps(ts.run_spec)) for key, ts in dask_scheduler.tasks.items()
             if str(key).startswith(prefixes) and ts.run_spec is not None]
    return max(sizes, default=0)


def test_arrays_never_travel_in_task_graphs(dask_client, caplog):
    rng = np.random.default_rng(0)
    X = rng.random((40_000, 100), dtype=np.float32)  # 16 MB: Dask warns above 10 MB
    y = (X[:, 0] > 0.5).astype(int)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        parts, _ = load_partitions(dask_client, X, y, n_partitions=4)
        rows, Xr, yr, _ = fetch_rows(dask_client, parts, np.array([0, 12_345, 39_999]))
    messages = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "Large object" in m], messages
    graph = dask_client.run_on_scheduler(_largest_task_spec, ("loaded_chunk", "finish"))
    assert 0 < graph < 100_000  # the tasks name their chunk; the 16 MB stay out of the graph
    np.testing.assert_array_equal(Xr, X[rows])
    np.testing.assert_array_equal(yr, y[rows])


def test_preferred_layout():
    assert preferred_layout(10, 100, 100) == "csr"           # 0.1%
    assert preferred_layout(4_000, 100, 100) == "csr"        # 40% of few features
    assert preferred_layout(6_000, 100, 100) == "dense"
    assert preferred_layout(12_000, 100, 800) == "csr"       # 15% of many
    assert preferred_layout(24_000, 100, 800) == "dense"     # 30% of many


def test_sparse_and_dense_layouts_give_the_same_model(dask_client):
    X, y = make_arrays("twonorm", 400, seed=3)
    X = np.where(np.abs(X) > 1.2, X, 0).astype(np.float32)  # ~25% non-zeros
    fits = {}
    for layout in ("dense", "csr"):
        parts, classes = load_partitions(dask_client, X, np.where(y > 0, 1, 0),
                                         layout=layout)
        assert parts.is_sparse == (layout == "csr")
        est = RandSVMClassifier(C=1.0, gamma=0.05, client=dask_client, random_state=0,
                                sample_size=100, route="sample", gap_tol=1e-6, tol=1e-6)
        est._fit_partitions(dask_client, parts, classes)
        fits[layout] = est
    a, b = fits["dense"], fits["csr"]
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-4)
    auto, _ = load_partitions(dask_client, sp.csr_matrix(X), y, layout="auto")
    assert auto.is_sparse  # 25% of 20 features: CSR
    np.testing.assert_array_equal(a.support_, b.support_)


@pytest.mark.heavy
def test_a_chunk_lost_with_its_worker_is_scattered_again_and_the_model_is_unchanged(
        tmp_path, caplog):
    """SIGKILL the worker running a violator scan of an array fit: the chunks it held are
    scattered again from the driver, the partitions rebuilt, and the model is the undisturbed
    run's, bit for bit."""
    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    X, y = make_arrays("ringnorm", 40_000, seed=6)
    # LIBSVM: oneDAL's bytes depend on its thread count, and iterations planned while the
    # killed worker is away offer a solve fewer threads
    params = dict(C=1.0, gamma=0.05, sample_size=8000, route="sample", random_state=5,
                  n_partitions=4, solver="libsvm")
    procs = launch(n_workers=2)
    try:
        with Client(procs.address, set_as_default=False, timeout="60s") as client:
            wait_for_workers(client, 2)
            ref = RandSVMClassifier(client=client, **params).fit(X, y)

            def running() -> dict:
                return {w: k for w, keys in client.processing().items() for k in keys
                        if str(k).startswith("scan_partition")}

            out = {}
            run = threading.Thread(target=lambda: out.setdefault(
                "est", RandSVMClassifier(client=client, **params).fit(X, y)))
            run.start()
            deadline = time.monotonic() + 300
            while not (hit := running()):
                assert run.is_alive() and time.monotonic() < deadline, "no scan was seen"
                time.sleep(0.005)
            with caplog.at_level(logging.WARNING, logger="randsvm_dist"):
                os.kill(client.run(os.getpid)[next(iter(hit))], signal.SIGKILL)
                run.join(900)
            assert any("sending them again" in r.getMessage() for r in caplog.records)
            assert not run.is_alive() and "est" in out
            est = out["est"]
            np.testing.assert_array_equal(est.support_, ref.support_)
            np.testing.assert_array_equal(est.dual_coef_, ref.dual_coef_)
            np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    finally:
        procs.close()


def test_a_partition_task_fetches_its_chunk_from_another_worker(dask_client):
    from randsvm_dist.engine.chunk_store import ChunkStore, fetch_chunk

    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    store = ChunkStore(dask_client, [(X, np.zeros(4), None)])
    holder = store.holder(0)
    other = next(w for w in dask_client.scheduler_info()["workers"] if w != holder)
    got = dask_client.submit(fetch_chunk, store.keys[0], workers=[other],
                             pure=False).result()
    np.testing.assert_array_equal(got[0], X)
