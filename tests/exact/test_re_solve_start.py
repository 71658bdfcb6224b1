"""A tightened re-solve of every row (the direct route) starts from the certifying scan's
decision values (``exact.solving.direct_start``, ``warm_smo``'s ``start_sums`` with the
first column only): the same optimum as the start that rebuilds the gradient, for fewer
kernel evaluations; and the tol the certificate asks for closes the gap in one re-solve
(``exact.certificate.tightened``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from randsvm_dist.data import make_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact import certificate, solving
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.state import ProblemState
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo import solve as warm_smo
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted

GAMMA = 0.05
REAL_START, REAL_DIRECT_START = warm_smo._start, solving.direct_start


def _rows(weighted: bool):
    """ringnorm rows; weighted: per-row boxes from Zipf counts (collapsed duplicates)."""
    X, y = make_arrays("ringnorm", 3_000, seed=2)
    t = np.where(y > 0, 1.0, -1.0)
    box = None
    if weighted:
        counts = np.random.default_rng(5).zipf(1.6, len(t)).clip(max=300)
        box = 2.0 * counts.astype(np.float64)
    return X.astype(np.float32), t, box


def _kkt(X, t, sol, box) -> float:
    """The largest violation of C-SVC's optimality conditions, from scratch in float64."""
    a = np.zeros(len(t))
    a[sol.support] = np.abs(sol.dual_coef)
    K = rbf_kernel(np.asarray(X, np.float64), np.asarray(X[sol.support], np.float64),
                   gamma=GAMMA)
    m = t * (K @ sol.dual_coef + sol.intercept)
    low, up = a <= 0, a >= box * (1 - 1e-12)
    free = ~low & ~up
    return max(np.max(1 - m[low], initial=0), np.max(m[up] - 1, initial=0),
               np.max(np.abs(m[free] - 1), initial=0))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_a_start_from_scan_values_is_the_rebuilt_start_for_fewer_kernel_values(weighted):
    X, t, box = _rows(weighted)
    params = SolverParams(C=2.0, kernel=Kernel("rbf", GAMMA), tol=1e-4)
    if box is None:
        first = solve_libsvm(X, t, replace(params, tol=0.1), 1)
        box = np.full(len(t), params.C)
    else:
        first, _ = solve_warm_counted(X, t, replace(params, tol=0.1), row_C=box)
    # the coefficients rounded to float32 (as oneDAL returns them): y'a is off by rounding
    coef = first.dual_coef.astype(np.float32).astype(np.float64)
    alpha0 = np.zeros(len(t))
    alpha0[first.support] = np.abs(coef)
    assert abs(np.sum(t * alpha0)) > 0
    # the scan's values: float32 rows and coefficients, as ``exact.scan.partition`` computes them
    f = decision_values(X, X[first.support], coef, 0.0, params.kernel).astype(np.float32)
    sums = np.full((len(t), 2), np.nan)
    sums[:, 0] = f
    row_C = box if weighted else None
    rebuilt, scanned = {}, {}
    ref, _ = solve_warm_counted(X, t, params, alpha0, row_C=row_C, stats=rebuilt)
    sol, _ = solve_warm_counted(X, t, params, alpha0, row_C=row_C, stats=scanned,
                                start_sums=sums)
    for s in (ref, sol):
        assert _kkt(X, t, s, box) <= params.tol
    assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-6)
    f_ref = decision_values(X, X[ref.support], ref.dual_coef, ref.intercept, params.kernel)
    f_new = decision_values(X, X[sol.support], sol.dual_coef, sol.intercept, params.kernel)
    np.testing.assert_allclose(f_new, f_ref, atol=2 * params.tol)
    # the rebuild: every row against every nonzero alpha; from the scan: against the
    # alphas at their bound and the few the rounding's imbalance moved
    n_bounded = int(np.sum(alpha0 >= box))
    assert rebuilt["start_evals"] == len(t) * first.support.size
    assert scanned["start_evals"] <= len(t) * (n_bounded + 3) < rebuilt["start_evals"]
    total = ("start_evals", "kernel_evals", "rebuild_evals")
    assert sum(scanned[k] for k in total) < sum(rebuilt[k] for k in total)


def _copies():
    """twonorm rows repeated with Zipf counts (one row up to ~300 times)."""
    X, y = make_arrays("twonorm", 500, seed=4)
    pz = 1.0 / np.arange(1, 501)
    idx = np.random.default_rng(3).choice(500, 4_000, p=pz / pz.sum())
    return X[idx].astype(np.float32), np.where(y[idx] > 0, 1, 0)


def _fit(X, y, monkeypatch, keep_values: bool):
    """An in-process fit whose first solve (tol 0.05) misses gap_tol; the kernel values of
    its re-solves' starts. keep_values False: the start rebuilds the gradient."""
    starts = []

    def counted(*a, **k):
        out = REAL_START(*a, **k)
        starts.append(out[3])
        return out

    def without_values(p, n_rows):
        s = REAL_DIRECT_START(p, n_rows)
        return None if s is None else replace(s, row_values=None)

    monkeypatch.setattr(warm_smo, "_start", counted)
    if not keep_values:
        monkeypatch.setattr("randsvm_dist.exact.in_process.direct_start", without_values)
    est = RandSVMClassifier(C=1.0, gamma=0.05, tol=0.05, solver="libsvm",
                            random_state=0).fit(X, y)
    return est, starts


def test_the_in_process_re_solve_starts_from_the_scan_and_closes_the_gap_once(monkeypatch):
    X, y = _copies()
    est, starts = _fit(X, y, monkeypatch, keep_values=True)
    h = est.history_
    assert h[0]["solved_in"] == "client" and h[0]["relative_gap"] > 1e-3
    # one tightened re-solve, warm, certified
    assert len(h) == 2 and h[1]["warm_start"] and est.certified_
    assert h[1]["relative_gap"] <= 1e-3
    # tol divided by what the gap needs (TIGHTEN_TARGET of gap_tol), not 4x more
    need = h[0]["ws_relative_gap"] / (certificate.TIGHTEN_TARGET * 1e-3)
    assert h[1]["tol"] == pytest.approx(h[0]["tol"] / max(need, certificate.MIN_TIGHTEN))
    ref, rebuilt = _fit(X, y, monkeypatch, keep_values=False)
    assert len(starts) == len(rebuilt) == 1 and starts[0] < rebuilt[0]
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                               atol=2 * h[1]["tol"])


def test_the_opening_tol_is_a_share_of_gap_tol_never_looser_than_asked():
    p = ProblemState(CSVC(1), SolverParams(C=1.0, tol=1e-3), n_rows=10, size=10)
    share = certificate.OPENING_TOL_SHARE
    assert certificate.opening_tol(p, 1e-3).solver.tol == pytest.approx(share * 1e-3)
    assert certificate.opening_tol(p, 1.0).solver.tol == pytest.approx(1e-3)  # tol's tighter
    assert certificate.opening_tol(p, 0.0) is p  # no certificate asked for
    assert certificate.opening_tol(p, 1e-9).solver.tol == certificate.MIN_TOL


def test_tightening_asks_for_what_the_gap_needs():
    p = ProblemState(CSVC(1), SolverParams(C=1.0, tol=1e-3), n_rows=10, size=10)
    assert certificate.tightened(p, 3.5e-2, 1e-3).solver.tol == pytest.approx(1e-5)
    assert certificate.tightened(p, 5e-4, 1e-3).solver.tol == pytest.approx(5e-4)  # >= 2x
    assert certificate.tightened(p, 10.0, 1e-3).solver.tol == pytest.approx(1e-6)  # <= 1000x
    assert certificate.tightened(p).solver.tol == pytest.approx(1e-4)  # gap unknown: 10x


def test_small_arrays_that_may_collapse_are_judged_by_their_distinct_rows():
    from randsvm_dist.exact.route import SURVEY_MAX_BYTES, judged_by_shape

    assert not judged_by_shape(2 << 20, may_collapse=True)      # skin_nonskin: 2 MB
    assert judged_by_shape(SURVEY_MAX_BYTES + 1, may_collapse=True)
    assert judged_by_shape(2 << 20, may_collapse=False)
