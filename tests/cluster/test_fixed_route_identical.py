"""For a fixed route the model is the same bytes whatever the workers, their hosts and the
threads each solve is offered; the warm SMO's result does not depend on its threads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers import threads as solve_threads
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo import kernels as warm_smo_kernels
from randsvm_dist.solvers.warm_smo import solve as warm_smo
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted

# the fixed route: sampled working sets solved by LIBSVM (then warm-started). Not oneDAL:
# its solves are the same bytes for one thread count but not across thread counts (its own
# parallel sums; dual coefficients apart by ~1e-3 at 1 vs 2 threads on 4,000 ringnorm rows)
FIT = dict(C=1.0, gamma=0.05, sample_size=400, route="sample", solver="libsvm",
           random_state=3, n_partitions=4, gap_tol=1e-4)
LAYOUTS = {"1 worker x 1 thread": (1, 1), "2 workers x 1 thread": (2, 1),
           "1 worker x 2 threads": (1, 2)}


def model_body(path: Path) -> tuple[bytes, list]:
    """The saved model without its history (whose timings and worker counts differ): the
    LIBSVM section's bytes and the support vectors' rows."""
    raw = path.read_bytes()
    libsvm, trailer = raw.split(b"#randsvm-dist-meta ", 1)
    return libsvm, json.loads(trailer.split(b"\n", 1)[0])["support"]


def ringnorm_and_three_classes():
    """A binary set and a 3-class one (three concurrent one-vs-one solves share the
    threads)."""
    X, y = make_arrays("ringnorm", 3000, seed=5)
    X3, y3 = make_arrays("ringnorm", 3000, seed=6)
    y3 = np.where(y3 > 0, np.where(X3[:, 0] > 0, 2, 1), 0)
    return {"binary": (X, y), "three classes": (X3, y3)}


def fit_and_save(client, X, y, path: Path) -> RandSVMClassifier:
    """Fit the fixed route on ``client`` and save the model to ``path``."""
    est = RandSVMClassifier(client=client, **FIT).fit(X, y)
    est.save(path)
    return est


def fit_on_layouts(tmp_path: Path, layouts: dict) -> dict:
    """{(layout, set): saved model path} for fits on fresh local clusters."""
    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    sets = ringnorm_and_three_classes()
    saved = {}
    for name, (n_workers, threads) in layouts.items():
        procs = launch(n_workers=n_workers, threads_per_worker=threads)
        try:
            with Client(procs.address, set_as_default=False, timeout="60s") as client:
                wait_for_workers(client, n_workers)
                for s, (X, y) in sets.items():
                    path = tmp_path / f"{name}-{s}.model".replace(" ", "_")
                    est = fit_and_save(client, X, y, path)
                    assert est.history_[-1]["route"] == "sample"
                    saved[name, s] = path
        finally:
            procs.close()
    return saved


def test_a_fixed_route_gives_the_same_model_bytes_on_every_layout(tmp_path):
    saved = fit_on_layouts(tmp_path, LAYOUTS)
    for s in ringnorm_and_three_classes():
        bodies = {name: model_body(saved[name, s]) for name in LAYOUTS}
        first = bodies["1 worker x 1 thread"]
        assert first[1], "no support vectors"
        for name, body in bodies.items():
            assert body == first, f"{s}: {name} differs from 1 worker x 1 thread"


@pytest.mark.parametrize("d", [3, 20, 60])  # kernel rows directly, and by BLAS dot products
def test_the_warm_smo_gives_the_same_bytes_with_any_threads(monkeypatch, d):
    """Every parallel loop of the warm SMO runs (no thread is declined for too little work;
    rows long enough for ``PARALLEL_MIN_WORK``): kernel rows split in blocks, the
    gradient's rows in ranges; each value is summed in one order whatever the split, so
    the alphas are the same bytes."""
    monkeypatch.setattr(warm_smo, "WARM_SYNC_TERMS", 0.0)
    monkeypatch.setattr(solve_threads, "host_cores", lambda: 8)
    n = max(2400, warm_smo_kernels.PARALLEL_MIN_WORK // (d + 8) + 600)  # long rows split in blocks
    X, y = make_arrays("ringnorm", n, seed=d)
    X = np.hstack([X] * (d // X.shape[1]) + [X[:, : d % X.shape[1]]]).astype(np.float32)
    y = np.where(y > 0, 1.0, -1.0)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", gamma=0.5 / d), tol=1e-4)
    first = solve_libsvm(X[: n // 2], y[: n // 2], params)
    start = np.zeros(len(y))
    start[first.support] = np.abs(first.dual_coef)
    runs = {}
    for offered in (1, 2, 3, 8):
        stats: dict = {}
        sol, it = solve_warm_counted(X, y, params, start, offered, stats=stats)
        assert stats["threads"] == offered
        runs[offered] = (sol, it, stats["kernel_evals"])
    one, it1, ev1 = runs[1]
    for offered, (sol, it, ev) in runs.items():
        assert (it, ev) == (it1, ev1), offered
        assert sol.support.tobytes() == one.support.tobytes()
        assert sol.dual_coef.tobytes() == one.dual_coef.tobytes(), offered
        assert sol.intercept == one.intercept
