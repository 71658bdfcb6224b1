"""A solve's threads: chosen from its work per step, never more than the host's cores, and
never changing the result (same path, same kernel work, same solution)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers import threads as solve_threads
from randsvm_dist.solvers.libsvm_adapter import LIBSVM_SYNC_TERMS, solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.threads import best_threads, host_cores, step_threads
from randsvm_dist.solvers.warm_smo.solve import WARM_SYNC_TERMS, solve_warm_counted


def problem(n: int, d: int, seed: int = 0):
    X, y = make_classification(n, d, n_informative=min(d, 5), n_redundant=0, flip_y=0.05,
                               random_state=seed)
    return X.astype(np.float32), np.where(y == 1, 1.0, -1.0)


def test_thread_choice_never_exceeds_the_hosts_cores(monkeypatch):
    cores = host_cores()
    assert 1 <= cores
    for offered in (1, 2, 16, 1024):
        for work in (0, 1e3, 1e6, 1e12):
            for sync in (0.0, LIBSVM_SYNC_TERMS, WARM_SYNC_TERMS):
                assert 1 <= step_threads(work, offered, sync) <= min(offered, cores)
    monkeypatch.setattr(solve_threads, "host_cores", lambda: 4)
    assert step_threads(1e12, 64, 0.0) == 4          # all the host has, not what was offered
    assert step_threads(1e12, 3, 0.0) == 3           # never more than offered


def test_threads_grow_with_work_per_step_and_few_for_small_problems():
    assert best_threads(5_000, 16, WARM_SYNC_TERMS) == 1            # 500 rows x 2 features
    ringnorm = best_threads(16_624 * 28, 16, WARM_SYNC_TERMS)     # the reference's warm solve
    assert 2 <= ringnorm <= 4
    counts = [best_threads(w, 16, WARM_SYNC_TERMS) for w in np.geomspace(1e3, 1e9, 25)]
    assert counts == sorted(counts) and counts[-1] >= 8
    # LIBSVM's kernel columns wait less per thread: more threads for the same work
    assert best_threads(22_566 * 28, 16, LIBSVM_SYNC_TERMS) > ringnorm


@pytest.mark.parametrize("n,d", [(400, 2), (3000, 20)])
def test_warm_solve_offered_16_threads_does_the_same_work_as_with_one(monkeypatch, n, d):
    monkeypatch.setattr(solve_threads, "host_cores", lambda: 16)
    X, y = problem(n, d)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", gamma=0.5 / d), tol=1e-4)
    first = solve_libsvm(X[: n // 2], y[: n // 2], params)
    start = np.zeros(n)
    start[first.support] = np.abs(first.dual_coef)
    runs = {}
    for offered in (1, 16):
        stats: dict = {}
        sol, it = solve_warm_counted(X, y, params, start, offered, stats=stats)
        runs[offered] = (sol, it, stats)
    (one, it1, s1), (many, it16, s16) = runs[1], runs[16]
    assert it1 == it16 and s1["kernel_evals"] == s16["kernel_evals"]
    assert s1["mean_active"] == s16["mean_active"]
    np.testing.assert_array_equal(one.support, many.support)
    np.testing.assert_allclose(one.dual_coef, many.dual_coef, rtol=0, atol=1e-12)
    assert one.intercept == pytest.approx(many.intercept, abs=1e-12)
    assert s1["threads"] == 1
    expected = best_threads(n * (d + solve_threads.KERNEL_ROW_TERMS), 16, WARM_SYNC_TERMS)
    assert s16["threads"] == expected
    if n * d < 1000:
        assert s16["threads"] == 1                   # a small problem keeps to one thread


def test_libsvm_offered_many_threads_gives_the_same_model():
    X, y = problem(800, 10)
    params = SolverParams(C=2.0, kernel=Kernel("rbf", gamma=0.1))
    a, b = solve_libsvm(X, y, params, 1), solve_libsvm(X, y, params, 64)
    np.testing.assert_array_equal(a.support, b.support)
    np.testing.assert_allclose(a.dual_coef, b.dual_coef, rtol=0, atol=1e-12)

