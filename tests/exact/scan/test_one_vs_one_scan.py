"""One-vs-one problems on the scan and the in-process route: every row is evaluated only
for the pairs it belongs to, against their support vectors (``exact.scan.values``), the pieces
run on several threads with the same answers, and the pairs solved several at a time
(``exact.in_process``) give the bytes of their solves one at a time."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from randsvm_dist import RandSVMClassifier
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact import in_process
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.route import Machine
from randsvm_dist.exact.scan.dispatch import scan_model
from randsvm_dist.exact.scan.partition import ProblemRequest, scan_partition
from randsvm_dist.exact.state import SupportModel
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.onedal_backend import onedal_available
from randsvm_dist.solvers.params import SolverParams

KERNEL = Kernel("rbf", 0.05)
FIELDS = ("n_rows", "n_violators", "n_errors", "loss", "loss_ws", "max_slack")


def _classes(n=1600, k=4, seed=0):
    X, y = make_classification(n_samples=n, n_features=12, n_informative=8,
                               n_classes=k, n_clusters_per_class=1, class_sep=1.0,
                               random_state=seed)
    return X.astype(np.float32), y.astype(np.int32)


class _Holder:
    """What ``scan_model`` reads of a problem state: its model."""

    def __init__(self, model: SupportModel):
        self.model = model


def _pair_models(X, y, k):
    """(kinds, LIBSVM models in global rows) of every pair (i, j), i < j."""
    kinds, models = [], []
    for i in range(k):
        for j in range(i + 1, k):
            rows = np.flatnonzero((y == i) | (y == j))
            sol = solve_libsvm(X[rows], np.where(y[rows] == i, 1.0, -1.0),
                               SolverParams(3.0, KERNEL))
            sv = rows[sol.support]
            kinds.append(CSVC(i, j))
            models.append(SupportModel(sv, X[sv], coef=sol.dual_coef,
                                       intercept=sol.intercept))
    return kinds, models


def _requests(kinds, finished=()):
    return [None if j in finished else
            ProblemRequest(kind, np.empty(0, np.int64), 50, 3 + j, band=0.5, C=3.0)
            for j, kind in enumerate(kinds)]


@pytest.mark.parametrize("finished", [(), (0, 4)], ids=["all_active", "two_finished"])
def test_each_pairs_rows_meet_only_their_pairs_support_vectors(finished):
    k = 4
    X, y = _classes(k=k)
    kinds, models = _pair_models(X, y, k)
    part = Partition(X, y, 0)
    model = scan_model([_Holder(m) for m in models], KERNEL, False, X.shape[1])
    out = scan_partition(part, model, _requests(kinds, finished))
    active = [j for j in range(len(kinds)) if j not in finished]
    # a row of class c meets the union of the SVs of the active pairs of c
    expected = 0
    for c in range(k):
        mine = [models[j].rows for j in active if c in (kinds[j].positive, kinds[j].negative)]
        if mine:
            expected += int((y == c).sum()) * len(np.unique(np.concatenate(mine)))
    assert out.full_evals == out.kernel_evals == expected
    assert expected < len(y) * model.coef.shape[0]   # every row against every SV: before
    for j, kind in enumerate(kinds):
        got = out.problems[j]
        if j in finished:
            assert got is None
            continue
        # the pair's answer from its own model over its own rows
        rows = np.flatnonzero((y == kind.positive) | (y == kind.negative))
        m = models[j]
        t = np.where(y[rows] == kind.positive, 1.0, -1.0)
        s = 1.0 - t * decision_values(X[rows], m.X, m.coef, m.intercept, KERNEL)
        assert got.n_rows == len(rows)
        assert got.n_violators == int((s > 1e-3).sum())
        assert got.n_errors == int((s > 1.0).sum())
        np.testing.assert_allclose(got.loss, 3.0 * np.maximum(s, 0).sum(), rtol=1e-5)
        np.testing.assert_allclose(got.max_slack, max(s.max(), -0.51), rtol=1e-5)


def test_threads_give_the_scan_of_one_thread():
    X, y = _classes(n=3000, k=3)
    kinds, models = _pair_models(X, y, 3)
    part = Partition(X, y, 7)
    model = scan_model([_Holder(m) for m in models], KERNEL, False, X.shape[1])
    one = scan_partition(part, model, _requests(kinds))
    three = scan_partition(part, model, _requests(kinds), threads=3)
    np.testing.assert_array_equal(one.bounds, three.bounds)
    assert one.full_evals == three.full_evals
    for a, b in zip(one.problems, three.problems):
        for name in FIELDS:
            assert getattr(a, name) == getattr(b, name), name
        np.testing.assert_array_equal(a.rows, b.rows)


def test_a_threaded_scan_holds_one_blas_thread_between_its_pieces(monkeypatch):
    """Every piece of a threaded scan starts with BLAS at one thread, also the first and
    any that starts while no other piece runs: a count that went back up between pieces
    left OpenBLAS's idle worker spinning on a core the pieces needed."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from randsvm_dist.exact.scan import values as scan_values

    X, y = _classes(n=3000, k=3)
    kinds, models = _pair_models(X, y, 3)
    model = scan_model([_Holder(m) for m in models], KERNEL, False, X.shape[1])
    seen = []
    real = scan_values.decision_values

    def watched(*args, **kwargs):
        seen.append(max(i["num_threads"] for i in threadpool_info()
                        if i["user_api"] == "blas"))
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_values, "decision_values", watched)
    with threadpool_limits(2, user_api="blas"):
        scan_partition(Partition(X, y, 7), model, _requests(kinds), threads=2)
        after = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    assert len(seen) > 2 and set(seen) == {1}
    assert after == 2


def _fit(X, y, solver, threads, monkeypatch):
    """An in-process fit on a machine of ``threads`` cores."""
    import randsvm_dist.exact.fit as core

    def no_cluster(*args, **kwargs):
        raise AssertionError("a small fit from arrays takes the in-process route")

    monkeypatch.setattr(core, "dask_client", no_cluster)
    monkeypatch.setattr(in_process, "machine", lambda: Machine(threads, threads))
    return RandSVMClassifier(C=3.0, gamma=0.05, random_state=0, solver=solver).fit(X, y)


def test_pairs_solved_side_by_side_give_the_bytes_of_one_at_a_time(monkeypatch):
    """LIBSVM: two pairs at a time on one core each against one at a time on one core:
    the same models to the byte, the same certificates."""
    X, y = _classes(n=1200, k=4, seed=1)
    one = _fit(X, y, "libsvm", 1, monkeypatch)
    two = _fit(X, y, "libsvm", 2, monkeypatch)
    assert in_process.concurrent_solves(6, 2) == 2 and in_process.concurrent_solves(6, 1) == 1
    assert one.history_[0]["solved_in"] == two.history_[0]["solved_in"] == "client"
    assert {h["solve_threads"] for h in two.history_} == {1}
    assert _bytes_and_certificates(one) == _bytes_and_certificates(two)


@pytest.mark.skipif(not onedal_available(), reason="oneDAL not installed")
def test_cold_onedal_pairs_are_solved_one_at_a_time_on_every_core(monkeypatch):
    """oneDAL's cold solves of the pairs do not run side by side (they ran at half speed
    so): each first solve gets both cores; the certificate is that of LIBSVM's pairs."""
    X, y = _classes(n=1200, k=4, seed=1)
    fit = _fit(X, y, "onedal", 2, monkeypatch)
    ref = _fit(X, y, "libsvm", 2, monkeypatch)
    first = [h for h in fit.history_ if h["iteration"] == 1]
    assert len(first) == 6 and {h["solve_threads"] for h in first} == {2}
    assert fit.certified_ and ref.certified_
    np.testing.assert_allclose(fit.decision_function(X), ref.decision_function(X), atol=2e-2)


def _bytes_and_certificates(est) -> tuple:
    """A fitted model's arrays as bytes and its history's certificates."""
    keep = ("iteration", "label", "n_support", "n_violators", "primal_objective",
            "dual_objective", "relative_gap", "kernel_evals")
    return (est.support_.tobytes(), est.dual_coef_.tobytes(), est.intercept_.tobytes(),
            [tuple(h[k] for k in keep) for h in est.history_])


def test_in_process_one_vs_one_counts_the_pairs_kernel_evaluations(monkeypatch):
    """The history's kernel evaluations of an in-process one-vs-one fit are those of each
    class's rows against its pairs' support vectors, fewer than every row against all."""
    X, y = _classes(n=1200, k=4, seed=2)
    est = _fit(X, y, "libsvm", 2, monkeypatch)
    assert est.certified_
    first = [h for h in est.history_ if h["iteration"] == 1]
    assert len(first) == 6 and len({h["kernel_evals"] for h in first}) == 1
    n_union = len(np.unique(est.support_))
    assert first[0]["kernel_evals"] < len(y) * n_union


def test_in_process_and_distributed_one_vs_one_agree(dask_client):
    """Four classes: the in-process route (pairs side by side, each row scanned for its
    own pairs) and the distributed direct route give the same model and certificates."""
    X, y = _classes(n=900, k=4, seed=3)
    local = RandSVMClassifier(C=3.0, gamma=0.05, random_state=0, solver="libsvm").fit(X, y)
    remote = RandSVMClassifier(C=3.0, gamma=0.05, random_state=0, solver="libsvm",
                               route="direct", client=dask_client).fit(X, y)
    assert local.history_[0]["solved_in"] == "client"
    assert remote.history_[0]["solved_in"] == "workers"
    assert local.certified_ and remote.certified_
    np.testing.assert_array_equal(local.support_, remote.support_)
    np.testing.assert_allclose(local.dual_coef_, remote.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(local.decision_function(X), remote.decision_function(X),
                               atol=1e-4)
    assert len(local.history_) == len(remote.history_)
    for a, b in zip(local.history_, remote.history_):
        assert a["kernel_evals"] == b["kernel_evals"]
        for key in ("primal_objective", "dual_objective", "relative_gap"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-4, atol=1e-7)


def test_screening_budget_follows_the_scan_each_row_gets():
    """The model delta's budget (a quarter of a full scan) counts each pair's rows against
    its own SVs, and every row against the union when every row is in every problem."""
    from randsvm_dist.exact.driver import full_scan_evals
    from randsvm_dist.exact.state import ProblemState

    X, y = _classes(n=900, k=3, seed=4)
    kinds, models = _pair_models(X, y, 3)
    solver = SolverParams(3.0, KERNEL)
    pairs = [ProblemState(kind, solver, n_rows=int(np.isin(y, [kind.positive,
                                                               kind.negative]).sum()),
                          model=m) for kind, m in zip(kinds, models)]
    own = sum(p.n_rows * p.model.n_support for p in pairs)
    union = len(np.unique(np.concatenate([m.rows for m in models])))
    assert full_scan_evals(pairs, len(y)) == min(own, len(y) * union) == own
    rest = [ProblemState(CSVC(c), solver, n_rows=len(y), model=m)
            for c, m in enumerate(models)]
    assert full_scan_evals(rest, len(y)) == len(y) * union
    rest[0] = ProblemState(CSVC(0), solver, n_rows=len(y), model=models[0],
                           stop_reason="gap_tol")
    assert full_scan_evals(rest, len(y)) == len(y) * len(
        np.unique(np.concatenate([m.rows for m in models[1:]])))
