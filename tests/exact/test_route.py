"""The route chooser (``exact.route.plan_route``, the cost model's) and the in-process route
(``exact.in_process``): what they choose, what the history records, and that the
in-process route gives the distributed route's model and certificate."""

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor
from randsvm_dist.exact.route import SV_SHARE_GUESS, Machine, plan_route
from randsvm_dist.exact.state import RunConfig
from randsvm_dist.solvers.onedal_backend import onedal_available

CFG = RunConfig(k=None, sample_size=5000)


def _blobs(n, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_small_data_goes_direct_and_large_data_samples():
    small, why = plan_route(CFG, [], 3_000, 3_000, 20, Machine(2, 2), "libsvm")
    large, why_large = plan_route(CFG, [], 1_000_000, 20_000, 20, Machine(2, 2), "libsvm")
    assert (small, large) == ("direct", "sample")
    assert why.startswith("before the first solve") and "cost model" in why
    assert f"{100 * SV_SHARE_GUESS:.0f}% support vectors" in why_large


def _problem(kind, n):
    from randsvm_dist.exact.state import ProblemState
    from randsvm_dist.numerics.kernels import Kernel
    from randsvm_dist.solvers.params import SolverParams

    return [ProblemState(kind, SolverParams(1.0, Kernel("rbf", 0.1)), n_rows=n, size=float(n))]


def test_the_measured_share_of_support_vectors_can_switch_to_one_solve():
    """After the first solve its share replaces the guess: few support vectors make one
    solve of all rows cheap (its cost grows with rows x support vectors, sampling's scans
    do not shrink)."""
    from randsvm_dist.exact.kinds import CSVC

    csvc = _problem(CSVC(1, None), 20_000)
    guess, _ = plan_route(CFG, csvc, 20_000, 5_000, 20, Machine(2, 2), "libsvm")
    sparse, why = plan_route(CFG, csvc, 20_000, 5_000, 20, Machine(2, 2), "libsvm", 0.02)
    assert (guess, sparse) == ("sample", "direct")
    assert why.startswith("after the first solve") and "2% support vectors" in why


def test_cold_re_solves_of_mostly_support_vectors_go_direct():
    """Without a warm start every re-solve is cold: a first sample of mostly support
    vectors then makes one solve of all rows cheaper than sampling (measured with
    epsilon-SVR before its warm start: 91% support vectors, sampling 626 s vs 114 s)."""
    from dataclasses import dataclass

    from randsvm_dist.exact.kinds import CSVC

    @dataclass(frozen=True)
    class ColdCSVC(CSVC):
        warm_startable = False

    cold, warm = _problem(ColdCSVC(1, None), 50_000), _problem(CSVC(1, None), 50_000)
    assert plan_route(CFG, cold, 50_000, 5_000, 20, Machine(2, 2), "libsvm", 0.9)[0] == \
        "direct"
    assert plan_route(CFG, warm, 50_000, 5_000, 20, Machine(2, 2), "libsvm", 0.9)[0] == \
        "sample"


def test_a_guess_of_one_solve_is_checked_by_a_pilot_where_the_sample_is_small():
    """Item 4 of the out-of-core issue: the guessed share never sends rows to one solve
    unmeasured when the first sample is at most a quarter of them; a sample that is most
    of the rows goes direct at once (a pilot would cost as much)."""
    from randsvm_dist.exact.route import PILOT_ROWS_PER_SAMPLE, first_route

    n = 12_000
    assert plan_route(CFG, [], n, 3_000, 20, Machine(2, 2), "libsvm")[0] == "direct"
    route, why = first_route(CFG, [], n, n // PILOT_ROWS_PER_SAMPLE, 20, Machine(2, 2),
                             "libsvm")
    assert route == "sample" and why.startswith("a pilot solve of 3,000 rows first")
    assert first_route(CFG, [], n, n // 2, 20, Machine(2, 2), "libsvm")[0] == "direct"
    asked = RunConfig(k=None, sample_size=3_000, route="direct")
    assert first_route(asked, [], n, 3_000, 20, Machine(2, 2), "libsvm")[0] == "direct"


def test_the_pilot_chooses_by_its_share_and_names_its_time_beside_the_prediction():
    """The pilot's share decides (as a measured share does); its seconds are reported
    beside the model's prediction but never change the choice (the model must not depend
    on the machine's load)."""
    from randsvm_dist.exact.kinds import CSVC
    from randsvm_dist.exact.route import RoutePilot

    csvc = _problem(CSVC(1, None), 20_000)
    by_share = plan_route(CFG, csvc, 20_000, 5_000, 20, Machine(2, 2), "libsvm", 0.02)
    fast, slow = (plan_route(CFG, csvc, 20_000, 5_000, 20, Machine(2, 2), "libsvm",
                             pilot=RoutePilot(0.02, seconds, 0.1)) for seconds in (0.01, 100.0))
    assert by_share[0] == fast[0] == slow[0] == "direct"
    assert fast[1].replace("0.01 s", "100.00 s") == slow[1]
    assert "pilot solve 100.00 s (predicted 0.10 s), 2% support vectors" in slow[1]
    assert by_share[1].split("after the first solve, ")[1] in slow[1]


def test_a_fit_that_would_have_gone_direct_on_the_guess_runs_its_pilot(dask_client,
                                                                         tmp_path):
    """On the cluster: the guess said one solve, the first record says so and names the
    pilot's measurements beside the second choice."""
    from randsvm_dist.data import write_arrays

    X, y = _blobs(12_000, d=20, seed=3)
    write_arrays(X, y, tmp_path / "blobs", partitions=2)
    assert plan_route(RunConfig(k=None, sample_size=3_000), [], 12_000, 3_000, 20,
                      Machine(2, 2), "libsvm")[0] == "direct"
    est = RandSVMClassifier(C=1.0, gamma=0.05, random_state=0, client=dask_client,
                            sample_size=3_000).fit(str(tmp_path / "blobs"))
    why = est.history_[0]["route_reason"]
    assert why.startswith("the guess said one solve; after the first solve (pilot solve "), why
    assert "s (predicted " in why and "cost model: one solve of 12000 rows" in why
    assert est.certified_


def test_arrays_in_memory_run_the_pilot_in_this_process_too(monkeypatch):
    """In-memory arrays whose guess is one solve in this process: a seeded sample is
    solved here first (``exact.in_process.route_pilot``); the same random_state gives the
    same model (the pilot's seconds never decide)."""
    import randsvm_dist.exact.fit as core

    calls = []
    real = core.route_pilot
    monkeypatch.setattr(core, "route_pilot",
                        lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    X, y = _blobs(12_000, d=20, seed=3)
    fits = [RandSVMClassifier(C=1.0, gamma=0.05, random_state=0,
                              sample_size=3_000).fit(X, y) for _ in range(2)]
    assert calls == [3_000, 3_000]
    why = fits[0].history_[0]["route_reason"]
    assert "(pilot solve " in why, why
    assert np.array_equal(fits[0].dual_coef_, fits[1].dual_coef_)
    assert np.array_equal(fits[0].support_, fits[1].support_)


def test_a_route_asked_for_is_obeyed():
    cfg = RunConfig(k=None, sample_size=10, route="sample")
    assert plan_route(cfg, [], 100, 10, 2, Machine(1, 1), "libsvm") == (
        "sample", "route='sample' was asked for")


def test_fit_records_route_reason_threads_and_phases(dask_client, tmp_path):
    from randsvm_dist.data import make

    make("checkerboard", tmp_path / "cb", rows=1200, partitions=2, seed=1)
    est = RandSVMClassifier(C=10, gamma=1.0, random_state=0, client=dask_client)
    est.fit(str(tmp_path / "cb"))
    first = est.history_[0]
    assert (first["route"], first["solved_in"]) == ("direct", "workers")
    assert "cost model: one solve of 1200 rows" in first["route_reason"]
    # one host: the direct solve is offered every worker thread of it
    assert first["solve_threads"] == sum(dask_client.nthreads().values())
    assert est.certified_
    assert {"placement", "setup", "iterations", "assembly", "attributes", "total"} <= set(
        est.phases_)
    assert sum(v for k, v in est.phases_.items() if k != "total") <= est.phases_["total"]
    sampled = RandSVMClassifier(C=10, gamma=1.0, random_state=0, client=dask_client,
                                route="sample", sample_size=300).fit(str(tmp_path / "cb"))
    assert sampled.history_[0]["route"] == "sample"
    assert sampled.history_[0]["route_reason"] == "route='sample' was asked for"


@pytest.mark.parametrize("make_est", [
    lambda **kw: RandSVMClassifier(C=3.0, gamma=0.5, **kw),
    lambda **kw: RandSVMRegressor(C=3.0, epsilon=0.2, gamma=0.5, **kw),
    lambda **kw: RandSVMOneClass(nu=0.2, gamma=0.5, **kw),
])
def test_in_process_and_distributed_routes_agree(dask_client, make_est):
    X, y = _blobs(900)
    if isinstance(make_est(), RandSVMRegressor):
        y = X[:, 0] + 0.5 * X[:, 1]
    local = make_est(random_state=0, solver="libsvm").fit(X, y)
    remote = make_est(random_state=0, solver="libsvm", route="direct",
                      client=dask_client).fit(X, y)
    assert local.history_[0]["solved_in"] == "client"
    assert remote.history_[0]["solved_in"] == "workers"
    assert local.certified_ and remote.certified_
    def values(est):
        return getattr(est, "decision_function", est.predict)(X)

    np.testing.assert_allclose(values(local), values(remote), atol=1e-3)
    np.testing.assert_array_equal(np.sort(local.support_), np.sort(remote.support_))
    for key in ("primal_objective", "dual_objective", "relative_gap"):
        np.testing.assert_allclose(local.history_[-1][key], remote.history_[-1][key],
                                   rtol=1e-4, atol=1e-7)


def test_in_process_route_starts_no_cluster(monkeypatch):
    """A small fit from arrays never asks for a client."""
    import randsvm_dist.exact.fit as core

    def no_cluster(*args, **kwargs):
        raise AssertionError("the in-process route must not start or reach a cluster")

    monkeypatch.setattr(core, "dask_client", no_cluster)
    X, y = _blobs(600)
    est = RandSVMClassifier(C=1.0, random_state=0).fit(X, y)
    assert est.certified_ and est.history_[-1]["solved_in"] == "client"
    assert est.history_[0]["solve_threads"] >= 1
    assert {"placement", "duplicates", "iterations", "assembly", "total"} <= set(est.phases_)


def test_in_process_collapses_duplicates_and_names_the_users_rows(monkeypatch):
    X, y = _blobs(500)
    X2, y2 = np.vstack([X, X]), np.concatenate([y, y])
    est = RandSVMClassifier(C=1.0, gamma=0.5, random_state=0, solver="libsvm").fit(X2, y2)
    once = RandSVMClassifier(C=2.0, gamma=0.5, random_state=0, solver="libsvm").fit(X, y)
    assert est.history_[0]["duplicates_collapsed"] == 500
    assert est.support_.max() < 500  # the first copy of each row, in the user's numbering
    # every row twice at C is every row once at 2 C
    np.testing.assert_allclose(est.decision_function(X), once.decision_function(X),
                               atol=1e-3)


@pytest.mark.skipif(not onedal_available(), reason="scikit-learn-intelex not installed")
def test_in_process_collapses_a_few_duplicates_where_onedal_solves():
    """10% copies: collapsed where oneDAL solves the rows weighted or not (solver 'auto',
    12 features), kept where LIBSVM would solve them (its weighted solver is slower); the
    same optimum either way."""
    X, y = _blobs(1800, d=12)
    X, y = np.vstack([X, X[:200]]), np.concatenate([y, y[:200]])
    common = dict(C=1.0, gamma=0.05, random_state=0)
    auto = RandSVMClassifier(**common).fit(X, y)
    libsvm = RandSVMClassifier(solver="libsvm", **common).fit(X, y)
    assert auto.history_[0]["duplicates_collapsed"] == 200
    assert libsvm.history_[0]["duplicates_collapsed"] == 0
    assert auto.certified_ and libsvm.certified_
    np.testing.assert_allclose(auto.decision_function(X), libsvm.decision_function(X),
                               atol=2e-2)


def test_in_process_route_is_never_taken_for_data_not_in_memory(dask_client, tmp_path):
    import dask.array as da

    from randsvm_dist.data import make

    make("checkerboard", tmp_path / "small", rows=400, partitions=2, seed=3)
    from_files = RandSVMClassifier(C=1.0, random_state=0, client=dask_client)
    assert from_files.fit(str(tmp_path / "small")).history_[0]["solved_in"] == "workers"
    X, y = _blobs(400)
    lazy = RandSVMClassifier(C=1.0, random_state=0, client=dask_client).fit(
        da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    assert lazy.history_[0]["solved_in"] == "workers"
    assert from_files.certified_ and lazy.certified_
