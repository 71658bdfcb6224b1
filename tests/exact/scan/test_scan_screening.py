"""Screening of the violator scan by the change of the coefficients (``exact.scan.partition``,
``exact.scan.screening.model_delta``): rows are skipped once a model settles, and nothing the scan
reports changes (every kind, sample weights, a lost store, a whole fit)."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.kinds import CSVC, EpsilonSVR, OneClass
from randsvm_dist.exact.scan import screening_store
from randsvm_dist.exact.scan.dispatch import scan_model
from randsvm_dist.exact.scan.partition import ProblemRequest, ScanModel, scan_partition
from randsvm_dist.exact.scan.screening import model_delta
from randsvm_dist.exact.state import SupportModel
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams

KERNEL = Kernel("rbf", 1.0)
FIELDS = ("n_rows", "n_violators", "n_errors", "loss", "loss_ws", "max_slack")


def _models(X, y):
    """A LIBSVM model of 1,500 rows and a settled successor: every coefficient moved a
    little, a few a lot, two SVs gone, three new ones, b moved."""
    sol = solve_libsvm(X[:1500], y[:1500], SolverParams(10.0, KERNEL))
    rows = sol.support
    old = SupportModel(rows, X[rows], coef=sol.dual_coef, intercept=sol.intercept)
    rng = np.random.default_rng(0)
    coef = sol.dual_coef * (1 + 1e-3 * rng.normal(size=len(rows)))
    coef[:5] += 0.3 * np.sign(coef[:5])
    new_rows = np.array([1600, 1700, 1800])
    keep = np.arange(2, len(rows))
    rows2 = np.concatenate([rows[keep], new_rows])
    coef2 = np.concatenate([coef[keep], [0.2, -0.2, 0.1]])
    order = np.argsort(rows2)
    new = SupportModel(rows2[order], X[rows2[order]], coef=coef2[order],
                       intercept=sol.intercept + 1e-3)
    return old, new


def _as_kind(kind, model: SupportModel) -> SupportModel:
    if isinstance(kind, OneClass):   # positive coefficients, most rows inside
        return SupportModel(model.rows, model.X, coef=np.abs(model.coef), intercept=-1.0)
    return model


def _partition(kind, X, y, old: SupportModel, weighted: bool) -> Partition:
    if isinstance(kind, EpsilonSVR):
        # targets near the old model: most rows deep inside the tube
        f = decision_values(X, old.X, old.coef, old.intercept, KERNEL)
        rng = np.random.default_rng(1)
        y = f + rng.normal(scale=0.3, size=len(f))
    else:
        y = (y > 0).astype(np.int32)
    w = None
    if weighted:
        w = np.random.default_rng(2).uniform(0.0, 3.0, size=len(y))
        w[::17] = 0.0
    return Partition(X, y, 500, w)


@pytest.mark.parametrize("kind", [CSVC(1), EpsilonSVR(1.2), OneClass(0.5)],
                         ids=["c_svc", "epsilon_svr", "one_class"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_screened_scan_skips_rows_and_answers_the_same(kind, weighted):
    X, y = make_arrays("checkerboard", 6000, seed=11)
    old, new = _models(X, y)
    old, new = _as_kind(kind, old), _as_kind(kind, new)
    part = _partition(kind, X, y, old, weighted)
    exclude = np.sort(new.rows + 500)
    req = [ProblemRequest(kind, exclude, 300, 5, tol=1e-3, band=0.5, C=10.0)]
    first = scan_partition(part, scan_model_of([old]), req)
    assert first.n_screened == 0 and first.n_evaluated == 6000
    model = scan_model_of([new])
    model.delta = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf)
    screened = scan_partition(part, model, req, first.bounds)
    model.delta = None
    full = scan_partition(part, model, req)
    assert screened.n_screened > 1000, screened.n_screened
    assert screened.n_screened + screened.n_evaluated == full.n_evaluated == 6000
    assert screened.kernel_evals < full.kernel_evals
    a, b = screened.problems[0], full.problems[0]
    for name in FIELDS:
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.rows, b.rows)
    np.testing.assert_array_equal(a.keys, b.keys)
    # the state left for the next scan brackets the exact decision values
    f = decision_values(X, new.X, new.coef, new.intercept, KERNEL)
    gap = np.abs(f - screened.bounds[0][:, 0])
    assert np.all(gap <= screened.bounds[1][:, 0] + 1e-3)


def scan_model_of(models: list[SupportModel]) -> ScanModel:
    """The ScanModel the driver builds from these models (one problem each)."""
    return scan_model([_Holder(m) for m in models], KERNEL, False, 2)


class _Holder:
    """What ``scan_model`` reads of a problem state: its model."""

    def __init__(self, model: SupportModel):
        self.model = model


def test_residual_norms_bound_the_change_of_every_row():
    """f_new(x) - f_old(x) - db - (the first t changed coefficients' part) is at most the
    residual norm ||r_t||_K (RBF: ||phi(x)|| = 1), for every candidate t."""
    X, y = make_arrays("checkerboard", 4000, seed=3)
    old, new = _models(X, y)
    delta = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf)
    assert delta.sizes[0] == 0 and len(delta.sizes) > 2
    assert delta.residual[-1, 0] < 0.2 * delta.residual[0, 0]
    f0 = decision_values(X, old.X, old.coef, old.intercept, KERNEL)
    f1 = decision_values(X, new.X, new.coef, new.intercept, KERNEL)
    for i, t in enumerate(delta.sizes):
        part = (decision_values(X, delta.vectors[:t], delta.coef[:t, 0], 0.0, KERNEL)
                if t else 0.0)
        rest = f1 - f0 - delta.shift_b[0] - part
        assert np.max(np.abs(rest)) <= delta.residual[i, 0] + 1e-5, t


def test_residual_norms_on_the_workers_are_the_drivers(monkeypatch):
    """With a client, the residual norms' kernel evaluations run in row blocks on the
    workers (one block per thread) and sum to the driver's own result."""
    from distributed import Client, LocalCluster

    from randsvm_dist.exact.scan import dispatch as scan_dispatch
    from randsvm_dist.exact.scan import screening

    X, y = make_arrays("checkerboard", 4000, seed=3)
    old, new = _models(X, y)
    here = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf)
    blocks = []
    run_blocks = scan_dispatch.row_blocks_on_workers

    def counted(client, fn, shared, n_rows, what):
        out = run_blocks(client, fn, shared, n_rows, what)
        blocks.append(len(out))
        return out

    monkeypatch.setattr(screening, "DELTA_LOCAL_EVALS", 0)
    monkeypatch.setattr(scan_dispatch, "BLOCK_MIN_ROWS", 64)
    monkeypatch.setattr(screening, "row_blocks_on_workers", counted)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        there = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf, c)
    assert blocks == [2]
    np.testing.assert_allclose(there.residual, here.residual, rtol=1e-9, atol=1e-12)
    assert there.kernel_evals == here.kernel_evals > 0


def test_screening_needs_nothing_but_the_previous_bounds():
    """Without bounds (a lost store) or without a delta the scan evaluates every row and
    answers the same."""
    X, y = make_arrays("checkerboard", 3000, seed=5)
    old, new = _models(X, y)
    part = Partition(X, (y > 0).astype(np.int32), 0)
    req = [ProblemRequest(CSVC(1), np.empty(0, np.int64), 100, 9, band=0.5)]
    model = scan_model_of([new])
    model.delta = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf)
    lost = scan_partition(part, model, req, None)
    assert lost.n_evaluated == 3000 and lost.n_screened == 0
    model.delta = None
    full = scan_partition(part, model, req)
    for name in FIELDS:
        assert getattr(lost.problems[0], name) == getattr(full.problems[0], name)


def _fit(client, data, **kw):
    return RandSVMClassifier(C=100.0, gamma=1.0, sample_size=800, route="sample",
                             random_state=3, client=client, **kw).fit(data)


def test_a_screened_fit_is_the_unscreened_fit(tmp_path, monkeypatch):
    """The whole fit with screening ends with the model of the fit whose scans never find
    their bounds (store lost on every worker, or screening disabled), with the same
    history; the screened fit did skip rows once the model settled."""
    from distributed import Client, LocalCluster

    X, y = make_arrays("checkerboard", 12000, seed=8)
    data = str(tmp_path / "cb")
    write_arrays(X, y, data, partitions=6)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc, set_as_default=False) as c:
        screened = _fit(c, data)
        monkeypatch.setattr(screening_store, "get", lambda *a: None)
        missed = _fit(c, data)
    n = len(y)
    assert any(h["rows_screened"] > 0 for h in screened.history_[1:])
    assert all(h["rows_screened"] == 0 and h["rows_evaluated"] == n
               for h in missed.history_)
    np.testing.assert_array_equal(screened.support_, missed.support_)
    np.testing.assert_array_equal(screened.dual_coef_, missed.dual_coef_)
    np.testing.assert_array_equal(screened.intercept_, missed.intercept_)
    keep = ("n_support", "n_violators", "n_errors", "max_slack", "primal_objective",
            "relative_gap", "sample_size", "dual_objective")
    assert ([{k: h[k] for k in keep} for h in screened.history_]
            == [{k: h[k] for k in keep} for h in missed.history_])


def test_one_vs_one_pairs_screen_each_row_for_its_own_problems():
    """Several problems over one shared SV matrix (one-vs-one pairs: each row belongs to
    some of them): the screened scan answers every pair as the full scan does."""
    X, y = make_arrays("checkerboard", 5000, seed=4)
    old, new = _models(X, y)
    rng = np.random.default_rng(3)
    cls = np.where(y > 0, rng.integers(1, 3, size=len(y)), 0).astype(np.int32)
    kinds = [CSVC(1, 0), CSVC(2, 0), CSVC(1, 2)]
    flipped = [old, old, SupportModel(old.rows, old.X, coef=-old.coef, intercept=0.0)]
    flipped_new = [new, new, SupportModel(new.rows, new.X, coef=-new.coef, intercept=0.0)]
    part = Partition(X, cls, 0, np.random.default_rng(5).uniform(0.5, 2.0, len(y)))
    req = [ProblemRequest(k, np.empty(0, np.int64), 200, 11 + j, band=0.5, C=10.0)
           for j, k in enumerate(kinds)]
    req[1] = None   # a finished problem
    first = scan_partition(part, scan_model_of(flipped), req)
    model = scan_model_of(flipped_new)
    model.delta = model_delta(flipped, flipped_new, KERNEL, False, X.shape[1], np.inf)
    screened = scan_partition(part, model, req, first.bounds)
    model.delta = None
    full = scan_partition(part, model, req)
    assert screened.n_screened > 0
    assert screened.problems[1] is None and full.problems[1] is None
    for a, b in zip(screened.problems[::2], full.problems[::2]):
        for name in FIELDS:
            assert getattr(a, name) == getattr(b, name), name
        np.testing.assert_array_equal(a.rows, b.rows)
        np.testing.assert_array_equal(a.keys, b.keys)


def test_residuals_run_over_the_coefficients_that_moved():
    """A model whose coefficients mostly stay put (an SVR's or C-SVC's bounded SVs): the
    residual norms cost only the moved coefficients' kernel evaluations, the largest
    candidate size takes all of them (exact partial values: residual 0 up to the padding),
    the norms are those of a float64 reference over the whole union, and a screened scan
    answers as the full one for the rows both evaluate."""
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = make_arrays("checkerboard", 6000, seed=13)
    sol = solve_libsvm(X[:1500], y[:1500], SolverParams(10.0, KERNEL))
    rows = sol.support
    old = SupportModel(rows, X[rows], coef=sol.dual_coef, intercept=sol.intercept)
    coef = sol.dual_coef.copy()
    moved = np.arange(0, len(rows), 9)[:40]
    coef[moved] *= 0.5
    new = SupportModel(rows, X[rows], coef=coef, intercept=sol.intercept + 1e-3)
    delta = model_delta([old], [new], KERNEL, False, X.shape[1], np.inf)
    n = len(moved)
    assert delta.sizes[-1] == n and len(delta.vectors) == n
    assert delta.kernel_evals == n * n + n * n
    assert delta.residual[-1, 0] <= 1e-3
    dc = (coef - sol.dual_coef).astype(np.float64)
    K = rbf_kernel(X[rows].astype(np.float64), gamma=KERNEL.gamma)
    order = np.argsort(-np.abs(dc), kind="stable")
    for i, t in enumerate(delta.sizes):
        r = dc.copy()
        r[order[:t]] = 0.0
        exact = np.sqrt(max(r @ K @ r, 0.0))
        assert exact <= delta.residual[i, 0] <= exact * (1 + 2e-3) + 2e-3, t
    part = Partition(X, (y > 0).astype(np.int32), 0)
    req = [ProblemRequest(CSVC(1), np.sort(rows), 300, 5, band=0.5, C=10.0)]
    first = scan_partition(part, scan_model_of([old]), req)
    model = scan_model_of([new])
    model.delta = delta
    screened = scan_partition(part, model, req, first.bounds)
    model.delta = None
    full = scan_partition(part, model, req)
    assert screened.n_screened > 1000
    for name in FIELDS:
        assert getattr(screened.problems[0], name) == getattr(full.problems[0], name), name
    np.testing.assert_array_equal(screened.problems[0].rows, full.problems[0].rows)
    both = screened.bounds[1][:, 0] == 0
    np.testing.assert_array_equal(screened.bounds[0][both, 0], full.bounds[0][both, 0])
