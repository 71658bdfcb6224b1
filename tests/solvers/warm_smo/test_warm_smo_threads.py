"""The warm SMO's steps over threads: the scans split into one range per thread (the
gradient update fused with the next select i, then select j), the kernel rows and the
starting gradient in parallel; any thread count takes the same path to the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data.generators import make_arrays
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers import threads as solve_threads
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo import solve as warm_smo
from randsvm_dist.solvers.warm_smo.loop import PARALLEL_MIN_ROWS
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted

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
    monkeypatch.setattr(solve_threads, "host_cores", lambda: 4)
    runs = {t: _solve(warm_problem, t) for t in (1, 2, 4)}
    assert [runs[t][2]["threads"] for t in (1, 2, 4)] == [1, 2, 4]
    assert runs[1][1] > 50  # a real path, not a start already optimal
    _same(runs[1], runs[2])
    _same(runs[1], runs[4])


def test_sixteen_threads_offered_do_no_more_work_than_one(monkeypatch, warm_problem):
    """Offered 16 threads on a 16-core host the solve takes what its steps' work pays for
    (``WARM_SYNC_TERMS``: 2 for 6,000 rows of 20 features) and takes the same path to the
    same bytes as with one thread."""
    monkeypatch.setattr(solve_threads, "host_cores", lambda: 16)
    one, many = _solve(warm_problem, 1), _solve(warm_problem, 16)
    assert one[2]["threads"] == 1 and many[2]["threads"] == 2
    _same(one, many)


def _swap_row_by_row(pairs, pool, cm, cst):
    """LIBSVM's ``swap_index`` on the cached rows, a swap at a time over every row: the
    reference ``cache_swap_values`` must equal."""
    from randsvm_dist.solvers.warm_smo.cache import NEXT, ROW_IN, SLOT_LEN, STRIDE

    n = cm.shape[1] - 1
    dropped = set()
    for i, j in pairs:
        s = cm[NEXT, n]
        while s != n:
            ln = cm[SLOT_LEN, s]
            if s not in dropped and ln > i:
                b = s * cst[STRIDE]
                if ln > j:
                    pool[b + i], pool[b + j] = pool[b + j], pool[b + i]
                else:
                    dropped.add(s)
            s = cm[NEXT, s]
    return {int(cm[ROW_IN, s]) for s in dropped}


@pytest.mark.parametrize("nth", [1, 2, 4])
def test_a_shrinking_pass_swaps_every_cached_row_as_libsvm_does(nth):
    """The cached rows' values after a shrinking pass's swaps (``cache_swap_values``, all
    swaps at once, the rows split over nth threads): those of LIBSVM's walk over every row
    for each swap; rows holding an i but not its j are dropped and their slots freed."""
    from randsvm_dist.solvers.warm_smo import cache as C
    from randsvm_dist.solvers.warm_smo.kernels import kernel_params

    n, d = 900, 5
    rng = np.random.default_rng(7)
    XT = rng.normal(size=(d, n))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    sq = np.einsum("ij,ij->j", XT, XT)
    kp = kernel_params(Kernel("rbf", 0.3))
    tw = (np.arange(n), np.empty((0, 0)), np.ones(0), np.zeros(0))
    pool = np.empty(60 * n, dtype=np.float32)
    cm, cst = np.empty((6, n + 1), dtype=np.int64), np.zeros(C.CST_SIZE, dtype=np.int64)
    C.cache_reset(cm, cst, len(pool), n)
    for r in rng.permutation(n)[:60]:  # rows of many lengths, some past every j
        C.cache_get(int(r), int(rng.integers(300, n + 1)), XT, y, sq, kp, pool, cm, cst,
                    False, tw)
    pairs = [(i, 899 - 2 * i) for i in range(0, 280, 3)]  # i ascending, j descending
    flat = np.array([v for p in pairs for v in p] + [0], dtype=np.int64)
    want_pool, want_cm, want_cst = pool.copy(), cm.copy(), cst.copy()
    gone = _swap_row_by_row(pairs, want_pool, want_cm, want_cst)
    assert gone and len(pairs) * 60 >= C.PARALLEL_MIN_SWAPS  # drops happen; the split runs
    rows_before = {int(r): int(s) for s, r in enumerate(cm[C.ROW_IN, :60]) if r >= 0}
    free_before = int(cst[C.NFREE])
    C.cache_swap_values(flat, len(pairs), pool, cm, cst, nth)
    assert int(cst[C.NFREE]) == free_before + len(gone)
    for r, s in rows_before.items():
        if r in gone:
            assert cm[C.SLOT_OF, r] == -1 and cm[C.ROW_IN, s] == -1
        else:
            b, ln = s * cst[C.STRIDE], cm[C.SLOT_LEN, s]
            assert pool[b:b + ln].tobytes() == want_pool[b:b + ln].tobytes()
