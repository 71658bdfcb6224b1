"""RandSVMRegressor (exact epsilon-SVR by random sampling) against scikit-learn's SVR.

Every fit here runs on the session's 2-worker LocalCluster (``dask_client``). The
certificate is recomputed in the test from the model's attributes and every row, with the
formulas of ``exact/kinds.py`` (EpsilonSVR), and compared with ``history_``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import load_diabetes, make_friedman1
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVR

from randsvm_dist.estimators import RandSVMRegressor
from randsvm_dist.exceptions import SchemaError

C, EPS, GAMMA = 10.0, 0.5, 0.5


@pytest.fixture(scope="module")
def friedman():
    """600 noisy Friedman #1 rows (sigma 0.5): with epsilon 0.5 a sparse-ish SVR."""
    X, y = make_friedman1(600, noise=0.5, random_state=0)
    return X.astype(np.float32), y


def fit(client, X, y=None, sample_weight=None, **kw):
    params = dict(C=C, epsilon=EPS, gamma=GAMMA, route="sample", sample_size=150,
                  gap_tol=0.0, tol=1e-5, random_state=0, client=client)
    params.update(kw)
    return RandSVMRegressor(**params).fit(X, y, sample_weight)


def sklearn_svr(X, y, **kw):
    params = dict(C=C, epsilon=EPS, gamma=GAMMA, tol=1e-6)
    params.update(kw)
    return SVR(**params).fit(X.astype(np.float64), y)


def certificate(est, X, y, sample_weight=None):
    """(primal over all rows, dual of the support vectors) from the model's attributes."""
    X = np.asarray(X, np.float64)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    coef = est.dual_coef_[0]
    sv = np.asarray(est.support_vectors_.toarray() if hasattr(est.support_vectors_, "toarray")
                    else est.support_vectors_, np.float64)
    K = rbf_kernel(sv, sv, gamma=est.gamma_)
    half_wkw = 0.5 * coef @ K @ coef
    f = rbf_kernel(X, sv, gamma=est.gamma_) @ coef + est.intercept_[0]
    primal = half_wkw + np.sum(C * w * np.maximum(0.0, np.abs(y - f) - est.epsilon))
    dual = -half_wkw - est.epsilon * np.abs(coef).sum() + y[est.support_] @ coef
    return primal, dual


def test_sampled_to_zero_violators_is_sklearns_svr(dask_client, friedman):
    X, y = friedman
    est = fit(dask_client, X, y)
    ref = sklearn_svr(X, y)
    assert est.optimal_ and est.stop_reasons_ == ["optimal"]
    assert est.history_[0]["route"] == "sample" and est.n_iter_ >= 2
    np.testing.assert_allclose(est.predict(X), ref.predict(X), atol=2e-3)
    assert abs(est.intercept_[0] - ref.intercept_[0]) < 2e-3
    assert set(est.support_[np.abs(est.dual_coef_[0]) > 1e-3 * C]) <= set(ref.support_)
    assert est.score(X, y) == pytest.approx(ref.score(X, y), abs=1e-4)


def test_the_certificate_recomputed_over_all_rows(dask_client, friedman):
    X, y = friedman
    est = fit(dask_client, X, y, gap_tol=1e-3, tol=1e-3)
    primal, dual = certificate(est, X, y)
    last = est.history_[-1]
    assert last["primal_objective"] == pytest.approx(primal, rel=1e-4)
    assert last["dual_objective"] == pytest.approx(dual, rel=1e-4)
    assert est.relative_gap_ == pytest.approx((primal - dual) / abs(primal), abs=1e-4)
    assert est.certified_ and est.relative_gap_ <= 1e-3
    # weak duality: sklearn's optimum lies between the dual and the primal
    ref = sklearn_svr(X, y)
    p_opt, _ = certificate(_as_fitted(ref, X), X, y)
    assert dual - 1e-6 * abs(p_opt) <= p_opt <= primal + 1e-6 * abs(p_opt)
    assert (primal - p_opt) / p_opt <= 1e-3


def _as_fitted(ref: SVR, X):
    """sklearn's SVR in the attribute names ``certificate`` reads."""
    class _M:
        dual_coef_ = ref.dual_coef_
        support_vectors_ = ref.support_vectors_
        intercept_ = ref.intercept_
        support_ = ref.support_
        gamma_ = GAMMA
        epsilon = EPS
    return _M()


def test_an_uncertified_stop_warns(dask_client, friedman):
    X, y = friedman
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = fit(dask_client, X, y, max_iter=1, sample_size=60, gap_tol=1e-6)
    assert not est.certified_ and est.stop_reasons_ == ["max_iter"]


def test_seeded_and_cascade_fits_reach_the_same_optimum(dask_client, friedman, monkeypatch):
    from randsvm_dist.exact import solve_plan, solving

    X, y = friedman
    first = fit(dask_client, X, y)
    seeded = fit(dask_client, X, y, seed=first, random_state=3)
    assert seeded.seed_info_ is not None and seeded.optimal_
    np.testing.assert_allclose(seeded.predict(X), first.predict(X), atol=2e-3)
    plans = []

    def two_parts(n_rows, n_fresh, n_parts):
        plans.append(n_rows)
        return 2

    monkeypatch.setattr(solving, "plan_cascade", two_parts)
    # the cost model would solve these small working sets whole: every cold one cascades
    monkeypatch.setattr(solve_plan, "CUT_PLAN_MAX_SHARE", float("inf"))
    monkeypatch.setattr(solve_plan, "DIVIDE_MIN_PART_ROWS", float("inf"))
    cascade = fit(dask_client, X, y, random_state=5)
    assert plans and all(h["cascade_parts"] == 2 for h in cascade.history_
                         if not h["warm_start"])  # re-solves from the last alphas stay warm
    np.testing.assert_allclose(cascade.predict(X), first.predict(X), atol=2e-3)


def test_target_sorted_rows_give_the_model_of_shuffled_rows(dask_client, friedman):
    X, y = friedman
    order = np.argsort(y)
    shuffled = np.random.default_rng(1).permutation(len(y))
    a = fit(dask_client, X[order], y[order], n_partitions=4)
    b = fit(dask_client, X[shuffled], y[shuffled], n_partitions=4)
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=2e-3)
    assert a.intercept_[0] == pytest.approx(b.intercept_[0], abs=2e-3)


def test_sample_weight_is_a_per_row_box(dask_client, friedman):
    """sklearn's test_svm_equivalence_sample_weight_C and zero weights: weight 2 everywhere
    is C x 2; rows of weight 0 take no part."""
    X, y = friedman
    X, y = X[:300], y[:300]
    doubled = fit(dask_client, X, y, C=2 * C)
    weighted = fit(dask_client, X, y, sample_weight=np.full(300, 2.0))
    np.testing.assert_allclose(weighted.predict(X), doubled.predict(X), atol=2e-3)
    w = np.ones(300)
    w[::3] = 0.0
    zero = fit(dask_client, X, y, sample_weight=w, route="auto")
    ref = sklearn_svr(X[w > 0], y[w > 0])
    np.testing.assert_allclose(zero.predict(X), ref.predict(X), atol=2e-3)


# -- scikit-learn's SVR tests, ported ------------------------------------------------------
def test_svr_diabetes_linear_and_rbf(dask_client):
    """sklearn test_svr: SVR(kernel='linear', C=10) on diabetes scores > 0.02; ours is the
    same model."""
    d = load_diabetes()
    for kernel in ("linear", "rbf"):
        est = RandSVMRegressor(kernel=kernel, C=10.0, epsilon=0.1, tol=1e-4, gap_tol=0.0,
                               random_state=0, client=dask_client).fit(d.data, d.target)
        ref = SVR(kernel=kernel, C=10.0, epsilon=0.1, tol=1e-4).fit(d.data, d.target)
        assert est.score(d.data, d.target) > 0.02
        assert est.score(d.data, d.target) == pytest.approx(ref.score(d.data, d.target),
                                                            abs=2e-3)


def test_svr_predict_is_the_kernel_expansion(dask_client):
    """sklearn test_svr_predict: predict = K(X, SV) dual_coef' + intercept (linear, rbf)."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    lin = RandSVMRegressor(kernel="linear", C=0.1, random_state=0,
                           client=dask_client).fit(X, y)
    sv = np.asarray(lin.support_vectors_, np.float64)
    dec = X @ (lin.dual_coef_ @ sv).T + lin.intercept_
    np.testing.assert_allclose(dec.ravel(), lin.predict(X), atol=1e-4)
    rbf = RandSVMRegressor(kernel="rbf", gamma=1.0, random_state=0,
                           client=dask_client).fit(X, y)
    sv = np.asarray(rbf.support_vectors_, np.float64)
    dec = rbf_kernel(X, sv, gamma=1.0) @ rbf.dual_coef_.T + rbf.intercept_
    np.testing.assert_allclose(dec.ravel(), rbf.predict(X), atol=1e-4)


def test_dask_array_input_and_lazy_predict(dask_client, friedman):
    import dask.array as da

    X, y = friedman
    est = fit(dask_client, da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    ref = fit(dask_client, X, y)
    lazy = est.predict(da.from_array(X, chunks=250))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(scheduler="sync"), ref.predict(X), atol=2e-3)


# -- bad targets ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad,what", [(np.nan, "missing or not finite"),
                                      ("abc", "not a number"), (None, "missing")])
def test_bad_array_targets_are_refused_with_the_row(dask_client, bad, what):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20, dtype=float).astype(object)
    y[7] = bad
    with pytest.raises(SchemaError, match=rf"row 7\b.*{what}"):
        RandSVMRegressor(client=dask_client).fit(X, y)


def _parquet(path, labels: pa.Array) -> str:
    path.mkdir()
    n = len(labels)
    cols = {f"f{j}": pa.array(np.arange(n, dtype=np.float32) + j) for j in range(3)}
    cols["label"] = labels
    pq.write_table(pa.table(cols), path / "part-00000.parquet")
    return str(path)


@pytest.mark.parametrize("labels,what", [
    (pa.array([1.5, 2.5, None, 0.5, 1.0, 2.0]), "row 2 has no value"),
    (pa.array([1.5, 2.5, 3.0, float("nan"), 1.0, 2.0]), "row 3 has a NaN"),
    (pa.array(["1.5", "2.5", "3.0", "x", "1.0", "2.0"]), "row 3: target 'x' is not a number"),
])
def test_bad_parquet_targets_are_refused_with_file_and_row(dask_client, tmp_path, labels,
                                                           what):
    data = _parquet(tmp_path / "bad", labels)
    with pytest.raises(SchemaError, match=what) as e:
        RandSVMRegressor(client=dask_client).fit(data)
    assert "part-00000.parquet" in str(e.value)


def test_float_label_column_trains_without_class_stats(dask_client, tmp_path, friedman):
    """A float label column is a regression target: written without per-value class
    statistics (one per row otherwise) and trained from Parquet as from arrays."""
    from randsvm_dist.data import Dataset, write_arrays

    X, y = friedman
    write_arrays(X, y, tmp_path / "fr", partitions=3)
    ds = Dataset.open(tmp_path / "fr")
    assert ds.meta.get("classes") is None
    est = fit(dask_client, str(tmp_path / "fr"))
    np.testing.assert_allclose(est.predict(X), fit(dask_client, X, y).predict(X), atol=2e-3)


# -- through the product ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def friedman_sets(tmp_path_factory):
    """Friedman #1 train (1500 rows, 3 partitions) and test (500 rows) Parquet sets."""
    from randsvm_dist.data import make

    root = tmp_path_factory.mktemp("friedman")
    train = make("friedman1", root / "train", rows=1500, partitions=3, seed=1, noise=0.5)
    test = make("friedman1", root / "test", rows=500, partitions=2, seed=2, noise=0.5)
    return train, test


PRODUCT = dict(C=C, epsilon=EPS, gamma=GAMMA, route="sample", sample_size=300,
               random_state=5, max_iter=12)


def test_evaluate_and_predict_on_the_workers(dask_client, friedman_sets, tmp_path):
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

    from randsvm_dist.distributed.predict import read_predictions

    train, test = friedman_sets
    est = RandSVMRegressor(**PRODUCT, client=dask_client).fit(train)
    X, y = test.to_arrays()
    pred = est.predict(X)
    got = est.evaluate(test)
    assert got["task"] == "regression" and got["rows"] == 500
    assert got["rmse"] == pytest.approx(np.sqrt(mean_squared_error(y, pred)), rel=1e-9)
    assert got["mae"] == pytest.approx(mean_absolute_error(y, pred), rel=1e-9)
    assert got["r2"] == pytest.approx(r2_score(y, pred), rel=1e-9)
    assert got["r2"] > 0.85
    out = est.predict_dataset(test, tmp_path / "pred")
    table = read_predictions(tmp_path / "pred")
    assert out["rows"] == 500 and "decision" not in table.column_names
    np.testing.assert_allclose(table.column("prediction").to_numpy(), pred)
    np.testing.assert_allclose(table.column("label").to_numpy(), y)


@pytest.mark.heavy  # about 30 s; the one-class twin runs in the default suite
def test_checkpoint_resume_equals_uninterrupted(dask_client, friedman_sets, tmp_path,
                                                monkeypatch):
    from randsvm_dist.exact.checkpoint import Checkpoint

    train, _ = friedman_sets
    ref = RandSVMRegressor(**PRODUCT, gap_tol=1e-6, client=dask_client).fit(train)
    assert ref.n_iter_ >= 3
    save = Checkpoint.save

    def save_then_crash(self, state):
        save(self, state)
        if state.iteration == 1:
            raise KeyboardInterrupt("killed after iteration 1")

    monkeypatch.setattr(Checkpoint, "save", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        RandSVMRegressor(**PRODUCT, gap_tol=1e-6, client=dask_client).fit(
            train, checkpoint=str(tmp_path))
    monkeypatch.undo()
    resumed = RandSVMRegressor(**PRODUCT, gap_tol=1e-6, client=dask_client).fit(
        train, checkpoint=str(tmp_path), resume=True)
    np.testing.assert_array_equal(resumed.support_, ref.support_)
    np.testing.assert_array_equal(resumed.dual_coef_, ref.dual_coef_)
    assert resumed.n_iter_ == ref.n_iter_


def test_feature_scaler_is_learnt_and_applied(dask_client, friedman):
    from sklearn.preprocessing import StandardScaler

    X, y = friedman
    X = X * np.arange(1, 11, dtype=np.float32) * 10 + 5   # badly scaled features
    est = fit(dask_client, X, y, scale="standard")
    Xs = StandardScaler().fit_transform(X.astype(np.float64))
    ref = sklearn_svr(Xs, y)
    assert est.scaler_ is not None
    np.testing.assert_allclose(est.predict(X), ref.predict(Xs), atol=5e-3)


def test_train_evaluate_predict_submit_commands(dask_client, friedman_sets, tmp_path,
                                                capsys):
    """`train --svm-type epsilon_svr --epsilon`, `evaluate`, `predict` and `submit train`."""
    import json

    from randsvm_dist.cli import main

    train, test = friedman_sets
    sched = ["--scheduler", dask_client.scheduler.address]
    model = str(tmp_path / "svr.model")
    assert main(["train", train.url, "--svm-type", "epsilon_svr", "--C", str(C),
                 "--epsilon", str(EPS), "--gamma", str(GAMMA), "--model", model,
                 "--test", test.url, "--json", *sched]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["certified"] and result["test"]["task"] == "regression"
    ref = RandSVMRegressor(C=C, epsilon=EPS, gamma=GAMMA, random_state=0,
                           client=dask_client).fit(train)
    assert result["test"]["rmse"] == pytest.approx(ref.evaluate(test)["rmse"], rel=5e-3)
    assert main(["evaluate", model, test.url, "--json", *sched]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["rmse"] == pytest.approx(result["test"]["rmse"], rel=1e-6)
    assert main(["predict", model, test.url, str(tmp_path / "p"), *sched]) == 0
    capsys.readouterr()
    jobs = str(tmp_path / "jobs")
    assert main(["submit", "train", train.url, "--svm-type", "epsilon_svr", "--C", str(C),
                 "--epsilon", str(EPS), "--gamma", str(GAMMA), "--model",
                 str(tmp_path / "job.model"), "--job-dir", jobs, "--json", *sched]) == 0
    job_id = json.loads(capsys.readouterr().out)["job_id"]
    from randsvm_dist import jobs as jobs_api

    assert jobs_api.wait(jobs, job_id, timeout=300)["state"] == "done"
    res = jobs_api.result(jobs, job_id)
    assert res["certified"] and RandSVMRegressor.load(tmp_path / "job.model").predict(
        test.to_arrays()[0]).shape == (500,)


def test_train_command_options_of_each_svm_type():
    from randsvm_dist.cli import build_parser
    from randsvm_dist.cli.train import estimator_params
    from randsvm_dist.exceptions import ParameterError

    parse = build_parser().parse_args
    p = estimator_params(parse(["train", "d", "--model", "m", "--svm-type", "epsilon_svr",
                                "--epsilon", "0.7", "--C", "3", "--bound-epsilon", "0.3",
                                "--bound-delta", "0.5"]))
    assert (p["epsilon"], p["C"], p["bound_epsilon"], p["bound_delta"]) == (0.7, 3.0, 0.3, 0.5)
    assert set(p) <= set(RandSVMRegressor().get_params())
    defaults = RandSVMRegressor().get_params()
    p = estimator_params(parse(["train", "d", "--model", "m", "--svm-type", "epsilon_svr"]))
    assert all(v == defaults[k] for k, v in p.items() if k != "random_state")
    with pytest.raises(ParameterError, match="--nu applies to --svm-type one_class"):
        estimator_params(parse(["train", "d", "--model", "m", "--svm-type", "epsilon_svr",
                                "--nu", "0.2"]))
    with pytest.raises(ParameterError, match="--epsilon applies"):
        estimator_params(parse(["train", "d", "--model", "m", "--epsilon", "0.2"]))


def test_auto_route_is_the_cost_models_and_recorded(dask_client):
    """'auto' asks the cost model before the first solve: 3000 rows go to one solve of all
    rows (even at 100% support vectors), and the history says so and why
    (``tests/exact/test_route.py`` covers the second question, after the first solve)."""
    from randsvm_dist.data import make_arrays

    X, y = make_arrays("friedman1", 3000, seed=2, noise=1.0)
    fit = RandSVMRegressor(C=10.0, epsilon=0.05, gamma=0.5, sample_size=100,
                           random_state=0, client=dask_client).fit(X, y)
    assert fit.history_[-1]["route"] == "direct" and fit.certified_
    why = fit.history_[-1]["route_reason"]
    assert why.startswith("before the first solve") and "one solve of 3000 rows" in why


def test_warm_re_solves_reach_the_cold_optimum(dask_client, friedman, monkeypatch):
    """Re-solves of an SVR working set start from the previous alphas (the warm SMO's
    epsilon-SVR dual) and end where cold LIBSVM re-solves end."""
    from randsvm_dist.exact import solving

    X, y = friedman
    kw = dict(sample_size=300, gap_tol=1e-4, tol=1e-4)
    warm = fit(dask_client, X, y, **kw)
    assert any(h["warm_start"] for h in warm.history_)
    monkeypatch.setattr(solving, "WARM_MAX_FRESH_SHARE", -1.0)  # every re-solve cold
    cold = fit(dask_client, X, y, **kw)
    assert not any(h["warm_start"] for h in cold.history_)
    assert warm.certified_ and cold.certified_
    np.testing.assert_allclose(warm.predict(X), cold.predict(X), atol=5e-3)
