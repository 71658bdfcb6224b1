"""The scan's dispatch (``exact.scan.dispatch``) and its kernel products
(``numerics.kernels``): sparse and dense rows give the same scan, the models travel once
per worker, and every worker thread gets its share of the rows."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.engine.inputs import load_partitions
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.scan import dispatch as scan_dispatch
from randsvm_dist.exact.scan.dispatch import ScanTask, merged_scan, plan_scan, run_scan
from randsvm_dist.exact.scan.partition import ProblemRequest, ScanInputs, ScanModel
from randsvm_dist.numerics import kernels
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams

KERNEL = Kernel("rbf", 0.2)
TERMS = ("n_rows", "n_violators", "n_errors", "loss", "loss_ws", "max_slack")


def _one_hot(n: int, seed: int = 0):
    """Rows of 3 numeric columns (mostly zero) and 3 one-hot blocks (~9% non-zeros)."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n, 3)) * (rng.random((n, 3)) < 0.3)
    cats = [rng.integers(0, k, n) for k in (5, 12, 20)]
    X = np.hstack([numeric] + [np.eye(k)[c] for k, c in zip((5, 12, 20), cats)])
    y = ((cats[0] % 2 == 0) ^ (numeric[:, 0] > 0.3) ^ (cats[1] < 3)).astype(np.int64)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def data():
    X, y = _one_hot(5000)
    sol = solve_libsvm(X[:1200], y[:1200].astype(np.int32), SolverParams(10.0, KERNEL))
    return X, y, sol


def _scan(client, X, y, sol, layout: str):
    parts, _ = load_partitions(client, X, y, n_partitions=5, layout=layout)
    sv = X[sol.support]
    model = ScanModel(KERNEL, sp.csr_matrix(sv) if layout == "csr" else sv,
                      np.asarray(sol.dual_coef, np.float32)[:, None],
                      np.array([sol.intercept]))
    req = [ProblemRequest(CSVC(1), np.sort(sol.support).astype(np.int64), 300, 5,
                          tol=1e-3, band=0.5, C=10.0)]
    from randsvm_dist.exact.scan import screening_store

    try:
        result = run_scan(client, parts, model, req, "t", 1)
    finally:  # a run's bounds are dropped when it ends, as the driver does
        client.run(screening_store.drop, "t")
        screening_store.drop("t")
    return result, merged_scan(result.per_part, 0, 300)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_sparse_and_dense_rows_find_the_same_violators_and_terms(data, n_workers,
                                                                 monkeypatch):
    """CSR and dense partitions of the same one-hot rows, each with the sparse product and
    with the dense GEMM forced, give the same violators, draw and certificate terms (loss
    sums within float32 rounding), on 1 and 2 workers."""
    from distributed import Client, LocalCluster

    X, y, sol = data
    merged = {}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        for limit in (2.0, 0.0):         # every block sparse, then every block dense
            monkeypatch.setattr(kernels, "SPARSE_PRODUCT_DENSITY", limit)
            monkeypatch.setattr(kernels, "SPARSE_PRODUCT_DENSITY_FEW", limit)
            for layout in ("dense", "csr"):
                result, s = _scan(c, X, y, sol, layout)
                assert result.n_evaluated == len(X)
                merged[limit, layout] = s
    ref = merged[0.0, "dense"]
    assert 0 < ref["n_violators"] < len(X) - len(sol.support)
    for key, s in merged.items():
        for name in ("n_rows", "n_violators", "n_errors"):
            assert s[name] == ref[name], (key, name)
        np.testing.assert_array_equal(s["draw"], ref["draw"])
        for name in ("loss", "loss_ws", "max_slack"):
            assert s[name] == pytest.approx(ref[name], rel=1e-5, abs=1e-5), (key, name)


def test_sparse_product_matches_the_gemm_within_float32_rounding(monkeypatch):
    """Decision values of mostly-zero rows by the sparse product equal the GEMM's (dense and
    CSR rows, every kernel) to float32 rounding; the product is chosen by density."""
    X, _ = _one_hot(700, seed=3)
    S, coef = X[:90], np.random.default_rng(4).normal(size=(90, 2))
    assert kernels.sparse_product_pays(X) and kernels.sparse_product_pays(sp.csr_matrix(X))
    assert not kernels.sparse_product_pays(np.ones((5, 40), np.float32))
    for kernel in (KERNEL, Kernel("poly", 0.1, 3, 1.0), Kernel("sigmoid", 0.05, 3, 0.2)):
        got = {}
        for limit in (2.0, 0.0):
            monkeypatch.setattr(kernels, "SPARSE_PRODUCT_DENSITY_FEW", limit)
            for rows in (X, sp.csr_matrix(X)):
                got[limit, sp.issparse(rows)] = decision_values(rows, S, coef, 0.0, kernel)
        ref = got[0.0, False]
        for value in got.values():
            np.testing.assert_allclose(value, ref, rtol=2e-6, atol=2e-6 * np.abs(ref).max())


def test_the_models_travel_once_per_worker_per_scan(data, monkeypatch):
    """One scan ships its models and requests in one future: no scan task carries them
    in its arguments, and each worker receives them at most once."""
    from distributed import Client, Future, LocalCluster

    X, y, sol = data
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        submitted = []
        submit = c.submit

        def spy(fn, *args, **kw):
            submitted.append((fn, args))
            return submit(fn, *args, **kw)

        monkeypatch.setattr(c, "submit", spy)
        _scan(c, X, y, sol, "dense")
        shipped = [a for _, args in submitted for a in args if isinstance(a, ScanInputs)]
        assert len(shipped) == 1 and shipped[0].model.support_vectors.shape[0] == len(
            sol.support)
        scans = [args for fn, args in submitted if fn is scan_dispatch.scan_partition_task]
        assert len(scans) >= 2
        keys = {args[1].key for args in scans}
        assert len(keys) == 1 and all(isinstance(args[1], Future) for args in scans)
        assert not any(isinstance(a, (ScanModel, list)) for args in scans for a in args)
        inputs_key = next(iter(keys))
        received = c.run(lambda dask_worker: sum(
            inputs_key in t["keys"] for t in dask_worker.transfer_incoming_log))
        assert all(n <= 1 for n in received.values()), received


def test_every_worker_scans_its_share_where_its_rows_live(data):
    """Partitions of uneven sizes on 2 workers: each worker's tasks scan half the rows
    (within SCAN_MIN_ROWS), most rows where they live."""
    from distributed import Client, LocalCluster

    X, y, sol = data
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        result, _ = _scan(c, X, y, sol, "dense")   # 5 partitions over 2 workers
    rows = list(result.task_rows.values())
    assert len(rows) == 2 and sum(rows) == len(X)
    assert abs(rows[0] - rows[1]) <= 2 * scan_dispatch.SCAN_MIN_ROWS
    assert result.wall_seconds > 0 and result.threads == 2 and result.efficiency > 0


def _loads(tasks):
    load: dict = {}
    for t in tasks:
        load[t.worker] = load.get(t.worker, 0) + t.hi - t.lo
    return load


def _covers(tasks, sizes):
    for i, size in enumerate(sizes):
        edges = sorted((t.lo, t.hi) for t in tasks if t.partition == i)
        assert edges[0][0] == 0 and edges[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(edges[:-1], edges[1:]))


@pytest.mark.parametrize("sizes,holders,threads", [
    ([50_000] * 4, ["a", "b", "a", "b"], {"a": 1, "b": 1}),
    ([80_000, 10_000, 30_000, 40_000], ["a", "b", "a", "b"], {"a": 1, "b": 1}),
    ([100_000], ["a"], {"a": 1, "b": 1}),
    ([100_000], ["a"], {"a": 2, "b": 1}),
    ([12_000, 9_000, 3_000, 15_000, 20_000, 1_000], ["a", "a", "b", "c", "c", "a"],
     {"a": 1, "b": 1, "c": 1}),
    ([300_000 // 32] * 32, [f"w{i % 16:02d}" for i in range(32)],
     {f"w{i:02d}": 1 for i in range(16)}),
    ([40_000] * 3, ["a", "a", "a"], {f"w{i}": 1 for i in range(8)} | {"a": 1}),
], ids=["even", "uneven", "one_partition", "threads", "collapsed", "16_workers", "one_holder"])
def test_plans_give_every_thread_its_share(sizes, holders, threads):
    """Every row in one task; each worker's rows in proportion to its threads (within
    SCAN_MIN_ROWS); rows stay where they live unless a worker would go short; a worker
    gets tasks for each thread."""
    tasks = plan_scan(sizes, [[h] for h in holders], threads, True)
    _covers(tasks, sizes)
    load, n, T = _loads(tasks), sum(sizes), sum(threads.values())
    for w, t in threads.items():
        assert abs(load.get(w, 0) - n * t / T) <= scan_dispatch.SCAN_MIN_ROWS, (w, load)
        assert sum(task.worker == w for task in tasks) >= t
    moved = sum(t.hi - t.lo for t in tasks if not t.local)
    surplus = sum(max(0, sum(s for s, h in zip(sizes, holders) if h == w) - n * t / T)
                  for w, t in threads.items())
    assert moved <= surplus + scan_dispatch.SCAN_MIN_ROWS * len(threads)
    assert all(t.local == (t.worker == holders[t.partition]) for t in tasks)


def test_plans_keep_rows_where_they_were_scanned_and_whole_partitions_whole():
    """A partition held by two workers goes to the preferred one (where its bounds are);
    one not built yet is one task the scheduler places; partitions that cannot be split
    go whole, largest first to the least loaded."""
    tasks = plan_scan([10_000, 10_000], [["a", "b"], ["a", "b"]], {"a": 1, "b": 1}, True,
                      {0: "b", 1: "a"})
    assert {(t.partition, t.worker) for t in tasks} == {(0, "b"), (1, "a")}
    unbuilt = plan_scan([10_000, 10_000], [["a"], []], {"a": 1, "b": 1}, True)
    assert [t for t in unbuilt if t.partition == 1] == [ScanTask(1, 0, 10_000)]
    assert _loads(unbuilt) == {"a": 5_000, "b": 5_000, None: 10_000}
    whole = plan_scan([5, 40, 30, 20], [[]] * 4, {"a": 1, "b": 1}, False)
    assert sorted((t.lo, t.hi) for t in whole) == [(0, 5), (0, 20), (0, 30), (0, 40)]
    assert sorted(_loads(whole).values()) == [45, 50]
