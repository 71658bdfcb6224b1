"""Divide and conquer of a working set (``exact.divide``) and the solve plans
(``exact.solve_plan``): the same optimum as a whole solve, the same model whatever the
worker layout, the plan recorded in ``history_``, and a worker lost mid-plan."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays
from randsvm_dist.exact import solve_plan
from randsvm_dist.exact.cost_model import Coefficients, plan_seconds
from randsvm_dist.exact.divide import divide_rows, union_alphas
from randsvm_dist.exact.kinds import CSVC, EpsilonSVR, OneClass
from randsvm_dist.exact.solve_plan import SolvePlan, choose_solve_plan, solve_working_set_task
from randsvm_dist.exact.state import ProblemState, WorkingSet
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.params import SolverParams

PARAMS = SolverParams(C=100.0, kernel=Kernel("rbf", 1.0))
FIT = dict(C=100, gamma=1.0, sample_size=1500, max_iter=8, route="sample", random_state=11)


@pytest.fixture(scope="module")
def board():
    X, y = make_arrays("checkerboard", 6000, seed=4)
    return X, np.where(y > 0, 1.0, -1.0)


def solve(client, X, t, plan: SolvePlan, box=None, params=PARAMS):
    rows = np.arange(len(t))
    return client.submit(solve_working_set_task, CSVC(1), X, t, box, rows, params, 2, plan,
                         1234, pure=False).result()


def decisions(X, s) -> np.ndarray:
    sol = s.solution
    return decision_values(X, X[s.support], sol.dual_coef, sol.intercept, PARAMS.kernel)


@pytest.mark.parametrize("weighted", [False, True])
def test_divide_reaches_the_whole_solves_optimum(dask_client, board, weighted):
    X, t = board
    box = (PARAMS.C * np.random.default_rng(0).uniform(0.5, 2.0, len(t))) if weighted else None
    whole = solve(dask_client, X, t, SolvePlan("whole", 1, ""), box)
    divided = solve(dask_client, X, t, SolvePlan("divide", 2, ""), box)
    assert len(divided.parts) == 2 and sum(divided.parts) == len(t)
    d_whole, d_div = whole.solution.dual_objective, divided.solution.dual_objective
    assert abs(d_div - d_whole) <= 1e-5 * abs(d_whole)
    # both stop at LIBSVM's tolerance on the gradient (boxes up to 200 here): decisions
    # agree to a few tol, relative to their size
    np.testing.assert_allclose(decisions(X, divided), decisions(X, whole), rtol=2 * PARAMS.tol,
                               atol=10 * PARAMS.tol)
    assert len(np.setxor1d(divided.support, whole.support)) <= 0.02 * len(whole.support)


def test_parts_are_kernel_clusters_seeded_by_the_stream():
    rng = np.random.default_rng(2)
    blobs = np.vstack([rng.normal(0, 0.1, (300, 2)), rng.normal(5, 0.1, (300, 2))])
    X = blobs[rng.permutation(600)].astype(np.float32)
    parts = divide_rows(X, 2, Kernel("rbf", 1.0), 99)
    assert sorted(np.concatenate(parts).tolist()) == list(range(600))
    for p in parts:  # each part is one blob
        assert len(p) == 300 and np.ptp(X[p, 0]) < 2
    again = divide_rows(X, 2, Kernel("rbf", 1.0), 99)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    # unequal clusters: no part holds more than its share and the slack
    lopsided = np.vstack([X[:100], rng.normal(5, 0.1, (500, 2)).astype(np.float32)])
    assert max(map(len, divide_rows(lopsided, 3, Kernel("rbf", 1.0), 5))) <= 1.1 * 200 + 1


def test_union_alphas_places_each_parts_alphas():
    from randsvm_dist.solvers.solution import BinarySolution

    members = [np.array([0, 2, 4]), np.array([1, 3])]
    sols = [BinarySolution(np.array([1, 2]), np.array([-0.5, 1.0]), 0.0, 0.0),
            BinarySolution(np.array([0]), np.array([0.25]), 0.0, 0.0)]
    np.testing.assert_array_equal(union_alphas(members, sols, 5), [0, 0.25, 0.5, 0, 1.0])


def state(kind, m: int, n_fresh: int, warm: bool = False) -> ProblemState:
    X = np.zeros((m, 10), np.float32)
    ws = WorkingSet(np.arange(m), X, np.ones(m), np.ones(m),
                    np.zeros(m) if warm else np.empty(0), n_fresh)
    p = ProblemState(kind, SolverParams(C=1.0), n_rows=10 * m, size=10.0 * m, ws=ws)
    if warm:
        p = replace(p, model=replace(p.model, rows=np.arange(m - n_fresh)))
    return p


def test_the_plan_is_the_cost_models_cheapest_eligible_one():
    big = state(CSVC(1), 60_000, 60_000)
    plan = choose_solve_plan(big, 2, 2)
    s = int(solve_plan.FIRST_SV_SHARE * 60_000)
    costs = plan_seconds(60_000, s, 10, 2, 2, Coefficients())
    cut = min(("cascade", "divide"), key=costs.get)
    assert plan.name == (cut if costs[cut] <= solve_plan.CUT_PLAN_MAX_SHARE * costs["whole"]
                         else "whole")
    assert plan.n_parts == (1 if plan.name == "whole" else 2)
    # many support vectors: the whole solve costs m x s, a divide's parts a quarter of it
    heavy = replace(big, model=replace(big.model, rows=np.arange(1)))
    assert choose_solve_plan(heavy, 2, 2).name == "divide"
    assert "cost model" in plan.reason and "divide" in plan.reason and "cascade" in plan.reason
    assert choose_solve_plan(big, 1, 1).name == "whole"            # one worker: nothing to cut
    assert choose_solve_plan(state(CSVC(1), 3_000, 3_000), 2, 2).name == "whole"  # too small
    warm = choose_solve_plan(state(CSVC(1), 20_000, 2_000, warm=True), 2, 2)
    assert warm.name == "warm" and "2000 of 20000 rows fresh" in warm.reason
    # a divide unites the parts' alphas as C-SVC's: the other kinds never divide
    assert choose_solve_plan(state(EpsilonSVR(), 60_000, 60_000), 2, 2).name != "divide"
    assert choose_solve_plan(state(OneClass(), 60_000, 60_000), 2, 2).name == "whole"


def test_plan_costs_follow_the_work():
    coef = Coefficients()
    two, eight = (plan_seconds(50_000, 20_000, 20, w, w, coef) for w in (2, 8))
    assert eight["divide"] < two["divide"] and eight["cascade"] < two["cascade"]
    fewer = plan_seconds(50_000, 20_000, 20, 2, 2, replace(coef, divide_changed_share=0.01))
    assert fewer["divide"] < two["divide"] and fewer["whole"] == two["whole"]


def test_a_recorded_divide_is_replayed_as_a_divide():
    from randsvm_dist.exact.cost_model import RecordedFit, predict_iterations

    rec = {"sample_size": 20_000, "n_support": 8_000, "n_fresh": 20_000, "warm_start": False,
           "rows_evaluated": 100_000}
    coef = Coefficients()
    for plan in ("whole", "divide"):
        fit = RecordedFit(2, 200_000, 20, ({**rec, "solve_plan": plan},))
        got = predict_iterations(fit, 4, coef)[0]["solve"]
        if plan == "divide":
            assert got == pytest.approx(plan_seconds(20_000, 8_000, 20, 4, 4, coef)["divide"])
        else:
            assert got > plan_seconds(20_000, 8_000, 20, 4, 4, coef)["divide"]


def force(monkeypatch, name: str) -> list:
    """Every cold solve of the fits that follow by the named plan (warm ones stay warm)."""
    seen, real = [], solve_plan.choose_solve_plan

    def forced(p, n_parts, threads, coef=None):
        plan = real(p, n_parts, threads, coef)
        if plan.name != "warm":
            plan = SolvePlan(name, 1 if name == "whole" else max(2, n_parts), "forced")
        seen.append(plan)
        return plan

    monkeypatch.setattr(solve_plan, "choose_solve_plan", forced)
    return seen


def test_a_divided_fit_is_certified_at_the_whole_plans_model(dask_client, monkeypatch):
    X, y = make_arrays("checkerboard", 8000, seed=9)
    force(monkeypatch, "whole")
    whole = RandSVMClassifier(**FIT, client=dask_client).fit(X, y)
    seen = force(monkeypatch, "divide")
    divided = RandSVMClassifier(**FIT, client=dask_client).fit(X, y)
    plans = [h["solve_plan"] for h in divided.history_]
    assert "divide" in plans and [p.name for p in seen] == plans
    assert all(h["solve_plan_reason"] for h in divided.history_)
    assert all(h["cascade_parts"] == 2 for h in divided.history_ if h["solve_plan"] == "divide")
    assert divided.history_[-1]["relative_gap"] <= 1e-3
    np.testing.assert_allclose(divided.decision_function(X), whole.decision_function(X),
                               atol=2e-2)


def test_the_chosen_plan_is_recorded(dask_client):
    X, y = make_arrays("checkerboard", 4000, seed=9)
    est = RandSVMClassifier(**FIT, client=dask_client).fit(X, y)
    for h in est.history_:
        assert h["solve_plan"] in ("warm", "whole", "cascade", "divide")
        assert (h["solve_plan"] == "warm") == h["warm_start"]
        assert h["solve_plan_reason"]


def test_a_divided_fit_is_the_same_whatever_the_worker_layout(monkeypatch):
    from distributed import Client, LocalCluster

    X, y = make_arrays("checkerboard", 6000, seed=9)
    force(monkeypatch, "divide")
    fits = []
    for workers, threads in ((1, 2), (2, 1)):
        with LocalCluster(n_workers=workers, threads_per_worker=threads,
                          dashboard_address=":0") as c, Client(c) as client:
            fits.append(RandSVMClassifier(**FIT, client=client).fit(X, y))
    a, b = fits
    assert "divide" in [h["solve_plan"] for h in a.history_]
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


@pytest.mark.heavy
def test_a_worker_lost_during_the_part_solves_gives_the_same_model(monkeypatch):
    """SIGKILL the worker running a divide's part solve: the fit ends with the model of
    an undisturbed run (the part is solved again on the other worker)."""
    import os
    import signal
    import threading
    import time

    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    X, y = make_arrays("ringnorm", 30000, seed=6)
    kw = dict(C=1, gamma=0.05, sample_size=8000, route="sample", random_state=5)
    force(monkeypatch, "divide")
    procs = launch(n_workers=2)
    try:
        with Client(procs.address, set_as_default=False, timeout="60s") as client:
            wait_for_workers(client, 2)
            ref = RandSVMClassifier(**kw, client=client).fit(X, y)
            out = {}
            run = threading.Thread(target=lambda: out.setdefault(
                "est", RandSVMClassifier(**kw, client=client).fit(X, y)))
            run.start()

            def parts() -> list:
                return [w for w, keys in client.processing().items()
                        if any(str(k).startswith("solve_rows") for k in keys)]

            deadline = time.monotonic() + 300
            while not (hit := parts()):
                assert run.is_alive() and time.monotonic() < deadline, "no part solve seen"
                time.sleep(0.005)
            os.kill(client.run(os.getpid, workers=[hit[0]])[hit[0]], signal.SIGKILL)
            run.join(900)
            assert not run.is_alive()
            hit_est = out["est"]
    finally:
        procs.close()
    np.testing.assert_array_equal(hit_est.support_, ref.support_)
    np.testing.assert_array_equal(hit_est.dual_coef_, ref.dual_coef_)
    np.testing.assert_array_equal(hit_est.intercept_, ref.intercept_)
