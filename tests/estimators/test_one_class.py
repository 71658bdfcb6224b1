"""RandSVMOneClass (exact one-class nu-SVM by random sampling) against OneClassSVM.

The certificate is recomputed here from the model's attributes and every row with the
formulas of ``exact/kinds.py`` (OneClass, LIBSVM's scaling: box 1, sum alpha = nu n):
P = 1/2 |w|^2 + nu n b + sum_i max(0, -f(x_i)), D = -1/2 |w|^2.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import OneClassSVM
from sklearn.utils import check_random_state

from randsvm_dist.estimators import RandSVMOneClass
from randsvm_dist.exceptions import ParameterError

NU, GAMMA = 0.1, 0.5


@pytest.fixture(scope="module")
def blobs():
    """700 rows: two Gaussian blobs and 5% uniform outliers (labels 1 / -1)."""
    rng = np.random.default_rng(0)
    inl = np.vstack([rng.normal(-1.5, 0.7, (333, 2)), rng.normal(1.5, 0.7, (332, 2))])
    out = rng.uniform(-5, 5, (35, 2))
    X = np.vstack([inl, out]).astype(np.float32)
    y = np.r_[np.ones(665), -np.ones(35)]
    order = rng.permutation(len(y))
    return X[order], y[order]


def fit(client, X, sample_weight=None, **kw):
    params = dict(nu=NU, gamma=GAMMA, route="sample", sample_size=120, gap_tol=0.0,
                  tol=1e-5, random_state=0, client=client)
    params.update(kw)
    return RandSVMOneClass(**params).fit(X, sample_weight=sample_weight)


def sklearn_ocsvm(X, **kw):
    params = dict(nu=NU, gamma=GAMMA, tol=1e-6)
    params.update(kw)
    return OneClassSVM(**params).fit(np.asarray(X, np.float64))


def certificate(coef, sv, intercept, X, nu):
    """(primal over all rows, dual) of a one-class model in LIBSVM's scaling."""
    X, sv = np.asarray(X, np.float64), np.asarray(sv, np.float64)
    half_wkw = 0.5 * coef @ rbf_kernel(sv, sv, gamma=GAMMA) @ coef
    f = rbf_kernel(X, sv, gamma=GAMMA) @ coef + intercept
    primal = half_wkw + nu * len(X) * intercept + np.maximum(0.0, -f).sum()
    return primal, -half_wkw


def test_sampled_to_zero_violators_is_sklearns_one_class_svm(dask_client, blobs):
    X, _ = blobs
    est = fit(dask_client, X)
    ref = sklearn_ocsvm(X)
    assert est.optimal_ and est.history_[0]["route"] == "sample" and est.n_iter_ >= 2
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=2e-4)
    assert est.offset_ == pytest.approx(ref.offset_[0], abs=2e-4)
    np.testing.assert_allclose(est.score_samples(X), ref.score_samples(X), atol=2e-4)
    clear = np.abs(ref.decision_function(X)) > 1e-3   # rows on the boundary may flip
    np.testing.assert_array_equal(est.predict(X)[clear], ref.predict(X)[clear])
    assert est.dual_coef_.sum() == pytest.approx(NU * len(X), rel=1e-6)  # sum alpha = nu n


def test_the_certificate_recomputed_over_all_rows(dask_client, blobs):
    X, _ = blobs
    est = fit(dask_client, X, gap_tol=1e-3, tol=1e-3)
    primal, dual = certificate(est.dual_coef_[0], est.support_vectors_, est.intercept_[0], X,
                               NU)
    last = est.history_[-1]
    assert last["primal_objective"] == pytest.approx(primal, rel=1e-4)
    assert last["dual_objective"] == pytest.approx(dual, rel=1e-4)
    assert est.relative_gap_ == pytest.approx((primal - dual) / abs(primal), abs=1e-4)
    assert est.certified_
    ref = sklearn_ocsvm(X)
    p_opt, d_opt = certificate(ref.dual_coef_[0], ref.support_vectors_, ref.intercept_[0], X,
                               NU)
    assert dual - 1e-6 <= d_opt + 1e-6 and p_opt <= primal + 1e-6  # weak duality
    assert (primal - p_opt) / abs(p_opt) <= 1e-3


def test_working_set_nu_is_scaled_to_the_whole_problem(dask_client, blobs):
    """A working set of m rows is solved with nu n / m; it never has fewer than nu n rows."""
    X, _ = blobs
    est = fit(dask_client, X, sample_size=30)  # below nu n = 70: raised to a feasible size
    assert min(h["sample_size"] for h in est.history_) >= NU * len(X)
    np.testing.assert_allclose(est.decision_function(X),
                               sklearn_ocsvm(X).decision_function(X), atol=2e-4)


def test_a_pilot_draws_the_first_working_set(dask_client, blobs):
    """The uniform first sample is solved as its own problem (a pilot) and its scaled model
    scanned: the first working set holds nearly every outlier (at their bound in the
    optimum), its solve starts warm from the pilot's alphas and says so, and the fit ends
    at OneClassSVM's optimum."""
    from randsvm_dist.exact.kinds import CSVC, OneClass

    X, y = blobs
    est = fit(dask_client, X, sample_size=100, max_iter=1, gap_tol=1e-8)
    first = est.history_[0]
    assert first["warm_start"] and first["solve_plan"] == "warm"
    assert "drawn by a pilot: 100 rows solved as their own problem" in \
        first["solve_plan_reason"]
    assert first["sample_size"] >= NU * len(X)
    # after one solve most of the data's outliers are bounded support vectors already
    bounded = est.support_[est.dual_coef_[0] >= 1.0 - 1e-9]
    assert np.isin(np.flatnonzero(y < 0), bounded).mean() >= 0.8
    est = fit(dask_client, X, sample_size=100)
    np.testing.assert_allclose(est.decision_function(X), sklearn_ocsvm(X).decision_function(X),
                               atol=2e-4)
    # the route's share of support vectors: of all rows (every solve has >= nu n of them)
    assert OneClass(0.1).support_share(80, 200, 1000) == 0.08
    assert CSVC(1).support_share(80, 200, 1000) == 0.4


def test_an_uncertified_stop_warns(dask_client, blobs):
    X, _ = blobs
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = fit(dask_client, X, max_iter=1, gap_tol=1e-8)
    assert not est.certified_


def test_seeded_and_parallel_plan_fits_reach_the_same_optimum(dask_client, blobs, monkeypatch):
    from randsvm_dist.exact import solving

    X, _ = blobs
    first = fit(dask_client, X)
    seeded = fit(dask_client, X, seed=first, random_state=4)
    assert seeded.seed_info_ is not None and seeded.optimal_
    np.testing.assert_allclose(seeded.decision_function(X), first.decision_function(X),
                               atol=2e-4)

    def two_parts(n_rows, n_fresh, n_parts):
        return 2

    monkeypatch.setattr(solving, "plan_cascade", two_parts)
    cascade = fit(dask_client, X, random_state=6)
    # a part of a one-class working set would need its own nu: one-class never cascades
    assert all(h["cascade_parts"] <= 1 for h in cascade.history_)
    np.testing.assert_allclose(cascade.decision_function(X), first.decision_function(X),
                               atol=2e-4)


def test_sorted_rows_give_the_model_of_shuffled_rows(dask_client, blobs):
    """Rows sorted by their distance to the origin (outliers last) vs shuffled."""
    X, _ = blobs
    order = np.argsort(np.linalg.norm(X, axis=1))
    a = fit(dask_client, X[order], n_partitions=4)
    b = fit(dask_client, X, n_partitions=4)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-4)


def test_sample_weights_scale_the_problem(dask_client, blobs):
    """Weight 0 removes a row; sum alpha = nu x (sum of weights)."""
    X, _ = blobs
    w = np.ones(len(X))
    w[::4] = 0.0
    est = fit(dask_client, X, sample_weight=w, route="auto")
    ref = sklearn_ocsvm(X[w > 0])
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=2e-4)
    with pytest.raises(ParameterError, match="zero or negative weights"):
        fit(dask_client, X, sample_weight=np.zeros(len(X)))


def test_labels_are_ignored(dask_client, blobs):
    X, y = blobs
    a = RandSVMOneClass(nu=NU, gamma=GAMMA, random_state=0, client=dask_client).fit(X, y)
    b = RandSVMOneClass(nu=NU, gamma=GAMMA, random_state=0, client=dask_client).fit(X)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


# -- scikit-learn's OneClassSVM tests, ported --------------------------------------------
X6 = [[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]]
T3 = [[-1, -1], [2, 2], [3, 2]]


def test_oneclass(dask_client):
    """sklearn test_oneclass: nu=0.5 on six points."""
    clf = RandSVMOneClass(client=dask_client, random_state=0).fit(X6)
    pred = clf.predict(T3)
    np.testing.assert_array_equal(pred, [1, -1, -1])
    assert pred.dtype == np.dtype("intp")
    np.testing.assert_array_almost_equal(clf.intercept_, [-1.218], decimal=3)
    np.testing.assert_array_almost_equal(clf.dual_coef_, [[0.750, 0.750, 0.750, 0.750]],
                                         decimal=3)


def test_oneclass_decision_function(dask_client):
    """sklearn test_oneclass_decision_function."""
    rnd = check_random_state(2)
    X = 0.3 * rnd.randn(100, 2)
    X_train = np.r_[X + 2, X - 2]
    X = 0.3 * rnd.randn(20, 2)
    X_test = np.r_[X + 2, X - 2]
    X_outliers = rnd.uniform(low=-4, high=4, size=(20, 2))
    clf = RandSVMOneClass(nu=0.1, kernel="rbf", gamma=0.1, random_state=0,
                          client=dask_client).fit(X_train)
    y_pred_test = clf.predict(X_test)
    assert np.mean(y_pred_test == 1) > 0.9
    y_pred_outliers = clf.predict(X_outliers)
    assert np.mean(y_pred_outliers == -1) > 0.9
    np.testing.assert_array_equal((clf.decision_function(X_test) > 0).ravel(),
                                  y_pred_test == 1)
    np.testing.assert_array_equal((clf.decision_function(X_outliers) > 0).ravel(),
                                  y_pred_outliers == 1)


def test_oneclass_score_samples(dask_client):
    """sklearn test_oneclass_score_samples: score_samples = decision_function + offset_."""
    X_train = [[1, 1], [1, 2], [2, 1]]
    clf = RandSVMOneClass(gamma=1, random_state=0, client=dask_client).fit(X_train)
    ref = OneClassSVM(gamma=1).fit(X_train)
    np.testing.assert_array_almost_equal(clf.score_samples([[2.0, 2.0]]),
                                         clf.decision_function([[2.0, 2.0]]) + clf.offset_)
    np.testing.assert_array_almost_equal(clf.score_samples([[2.0, 2.0]]),
                                         ref.score_samples([[2.0, 2.0]]), decimal=5)


def test_dask_input_and_lazy_scores(dask_client, blobs):
    import dask.array as da

    X, _ = blobs
    est = fit(dask_client, da.from_array(X, chunks=300))
    ref = fit(dask_client, X)
    lazy = est.decision_function(da.from_array(X, chunks=250))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(scheduler="sync"), ref.decision_function(X),
                               atol=2e-4)
    np.testing.assert_array_equal(est.predict(da.from_array(X, chunks=250)).compute(
        scheduler="sync"), ref.predict(X))


# -- through the product ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def blob_sets(tmp_path_factory):
    """blobs_with_outliers train (1500 rows, 3 partitions) and test (600 rows) sets."""
    from randsvm_dist.data import make

    root = tmp_path_factory.mktemp("blobs")
    train = make("blobs_with_outliers", root / "train", rows=1500, partitions=3, seed=1)
    test = make("blobs_with_outliers", root / "test", rows=600, partitions=2, seed=2)
    return train, test


PRODUCT = dict(nu=NU, gamma=GAMMA, route="sample", sample_size=300, random_state=5,
               max_iter=12)


def test_evaluate_and_predict_on_the_workers(dask_client, blob_sets, tmp_path):
    from sklearn.metrics import roc_auc_score

    from randsvm_dist.distributed.predict import read_predictions

    train, test = blob_sets
    est = RandSVMOneClass(**PRODUCT, client=dask_client).fit(train)
    X, y = test.to_arrays()
    f = est.decision_function(X)
    got = est.evaluate(test)
    assert got["task"] == "one_class" and got["normal_label"] == 1 and got["rows"] == 600
    assert got["outlier_fraction"] == pytest.approx((f < 0).mean())
    assert got["true_outlier_fraction"] == pytest.approx((y == -1).mean())
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y == 1, f), abs=1e-6)
    assert got["roc_auc"] > 0.95
    # the other label named normal: the AUC flips
    flipped = est.evaluate(test, normal_label=-1)
    assert flipped["roc_auc"] == pytest.approx(1 - got["roc_auc"], abs=1e-6)
    out = est.predict_dataset(test, tmp_path / "pred")
    table = read_predictions(tmp_path / "pred")
    assert out["rows"] == 600
    np.testing.assert_array_equal(table.column("prediction").to_numpy(), est.predict(X))
    np.testing.assert_allclose(table.column("decision").to_numpy(), f)


def test_one_class_metrics_rule_for_the_normal_label():
    from randsvm_dist.distributed.predict import one_class_metrics

    s = np.array([0.5, -0.2, 0.1, -1.0])
    assert one_class_metrics(s, np.array([1, -1, 1, -1]))["roc_auc"] == 1.0
    none = one_class_metrics(s, np.array([3, 4, 3, 4]))   # no label 1: not guessed
    assert none["roc_auc"] is None and "--normal-label" in none["roc_auc_note"]
    assert one_class_metrics(s, np.array([3, 4, 3, 4]), normal_label="3")["roc_auc"] == 1.0
    only = one_class_metrics(s, np.ones(4))
    assert only["roc_auc"] is None and only["outlier_fraction"] == 0.5


def test_checkpoint_resume_equals_uninterrupted(dask_client, blob_sets, tmp_path,
                                                monkeypatch):
    from randsvm_dist.exact.checkpoint import Checkpoint

    train, _ = blob_sets
    params = {**PRODUCT, "gap_tol": 0.0, "tol": 1e-5}
    ref = RandSVMOneClass(**params, client=dask_client).fit(train)
    assert ref.n_iter_ >= 2   # iterations left after the crash below
    save = Checkpoint.save

    def save_then_crash(self, state):
        save(self, state)
        if state.iteration == 1:
            raise KeyboardInterrupt("killed after iteration 1")

    monkeypatch.setattr(Checkpoint, "save", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        RandSVMOneClass(**params, client=dask_client).fit(train, checkpoint=str(tmp_path))
    monkeypatch.undo()
    resumed = RandSVMOneClass(**params, client=dask_client).fit(
        train, checkpoint=str(tmp_path), resume=True)
    np.testing.assert_array_equal(resumed.support_, ref.support_)
    np.testing.assert_array_equal(resumed.dual_coef_, ref.dual_coef_)


def test_feature_scaler_is_learnt_and_applied(dask_client, blobs):
    from sklearn.preprocessing import MinMaxScaler

    X, _ = blobs
    X = X * np.array([100.0, 0.01], np.float32) + 3
    est = fit(dask_client, X, scale="minmax", gamma=5.0)
    Xs = MinMaxScaler(feature_range=(-1, 1)).fit_transform(X.astype(np.float64))
    ref = sklearn_ocsvm(Xs, gamma=5.0)
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(Xs), atol=1e-3)


def test_train_evaluate_submit_commands(dask_client, blob_sets, tmp_path, capsys):
    """`train --svm-type one_class --nu`, `evaluate --normal-label`, `submit train`."""
    import json

    from randsvm_dist import jobs as jobs_api
    from randsvm_dist.cli import main

    train, test = blob_sets
    sched = ["--scheduler", dask_client.scheduler.address]
    model = str(tmp_path / "oc.model")
    assert main(["train", train.url, "--svm-type", "one_class", "--nu", str(NU), "--gamma",
                 str(GAMMA), "--model", model, "--test", test.url, "--json", *sched]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["certified"] and result["test"]["roc_auc"] > 0.95
    assert main(["evaluate", model, test.url, "--normal-label", "-1", "--json", *sched]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["roc_auc"] == pytest.approx(1 - result["test"]["roc_auc"], abs=1e-6)
    assert main(["evaluate", model, test.url, *sched]) == 0
    assert "ROC AUC" in capsys.readouterr().out
    jobs = str(tmp_path / "jobs")
    assert main(["submit", "train", train.url, "--svm-type", "one_class", "--nu", str(NU),
                 "--model", str(tmp_path / "job.model"), "--job-dir", jobs, "--json",
                 *sched]) == 0
    job_id = json.loads(capsys.readouterr().out)["job_id"]
    assert jobs_api.wait(jobs, job_id, timeout=300)["state"] == "done"
    assert isinstance(RandSVMOneClass.load(tmp_path / "job.model"), RandSVMOneClass)


def test_warm_re_solves_reach_the_cold_optimum(dask_client, blobs, monkeypatch):
    """One-class re-solves start from the previous alphas, repaired to the working set's
    nu (the warm SMO's one-class dual), and end where cold LIBSVM re-solves end."""
    from randsvm_dist.exact import solving

    X = blobs[0]
    kw = dict(sample_size=300)  # to zero violators at tol 1e-5 (the module's fit)
    warm = fit(dask_client, X, **kw)
    assert any(h["warm_start"] for h in warm.history_)
    monkeypatch.setattr(solving, "WARM_MAX_FRESH_SHARE", -1.0)  # every re-solve cold
    cold = fit(dask_client, X, **kw)
    assert not any(h["warm_start"] for h in cold.history_)
    assert warm.optimal_ and cold.optimal_
    np.testing.assert_allclose(warm.decision_function(X), cold.decision_function(X),
                               atol=2e-3)
