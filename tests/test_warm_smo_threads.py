"""The warm SMO's steps over threads: the scans split into one range per thread (the
gradient update fused with the next select i, then select j), the kernel rows and the
starting gradient in parallel; any thread count takes the same path to the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data.generators import make_arrays
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers import libsvm_adapter, warm_smo
from randsvm_dist.solvers.libsvm_adapter import SolverParams
from randsvm_dist.solvers.warm_smo import solve_warm_counted
from randsvm_dist.solvers.warm_smo_loop import PARALLEL_MIN_ROWS

ROWS = 6000


@pytest.fixture(scope="module")
def warm_problem():
    """Ringnorm rows (20 features) and a start: the optimum of two thirds of them, the
    rest fresh at 0, with the known rows' kernel sums."""
    X, y = make_arrays("ringnorm", ROWS, seed=3)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.05), tol=1e-3)
    base = 2 * ROWS // 3
    first, _ = solve_warm_counted(X[:base], y[:base], params)
    alpha0 = np.zeros(ROWS)
    alpha0[first.support] = np.abs(first.dual_coef)
    sums = np.full((ROWS, 2), np.nan)
    sums[first.support] = first.kernel_sums
    return X, y, params, alpha0, sums


def _solve(problem, offered: int):
    X, y, params, alpha0, sums = problem
    stats: dict = {}
    sol, steps = solve_warm_counted(X, y, params, alpha0, offered, stats=stats,
                                    start_sums=sums)
    return sol, steps, stats


def _same(a, b):
    (sa, ita, st_a), (sb, itb, st_b) = a, b
    assert ita == itb
    for key in ("kernel_evals", "start_evals", "rebuild_evals", "mean_active"):
        assert st_a[key] == st_b[key], key
    assert sa.support.tobytes() == sb.support.tobytes()
    assert sa.dual_coef.tobytes() == sb.dual_coef.tobytes()
    assert sa.kernel_sums.tobytes() == sb.kernel_sums.tobytes()
    assert sa.intercept == sb.intercept


def test_one_two_and_four_threads_give_the_same_bytes(monkeypatch, warm_problem):
    """Every thread count offered is taken (no wait cost, a host of 4 cores: 4 ranges on
    this machine's threads too) and the active set is long enough for the split scans;
    the steps, the kernel work and every byte of the result are those of one thread."""
    assert ROWS > PARALLEL_MIN_ROWS
    monkeypatch.setattr(warm_smo, "WARM_SYNC_TERMS", 0.0)
    monkeypatch.setattr(libsvm_adapter, "host_cores", lambda: 4)
    runs = {t: _solve(warm_problem, t) for t in (1, 2, 4)}
    assert [runs[t][2]["threads"] for t in (1, 2, 4)] == [1, 2, 4]
    assert runs[1][1] > 50  # a real path, not a start already optimal
    _same(runs[1], runs[2])
    _same(runs[1], runs[4])


def test_sixteen_threads_offered_do_no_more_work_than_one(monkeypatch, warm_problem):
    """Offered 16 threads on a 16-core host the solve takes what its steps' work pays for
    (``WARM_SYNC_TERMS``: 2 for 6,000 rows of 20 features) and takes the same path to the
    same bytes as with one thread."""
    monkeypatch.setattr(libsvm_adapter, "host_cores", lambda: 16)
    one, many = _solve(warm_problem, 1), _solve(warm_problem, 16)
    assert one[2]["threads"] == 1 and many[2]["threads"] == 2
    _same(one, many)
