"""Classification as LIBSVM and scikit-learn users expect it: one-vs-one, model files stock
LIBSVM reads, probabilities, sample and class weights, SVC's attributes (issue 20)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.svm import SVC

from randsvm_dist.data import make_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.numerics.kernels import Kernel, decision_values_float64


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X.astype(np.float32), y


def _exact(client, **kw):
    """A fit run to zero violators (gap_tol=0) with a tight LIBSVM tolerance."""
    return RandSVMClassifier(client=client, random_state=0, gap_tol=0.0, tol=1e-6, **kw)


def test_one_vs_one_matches_svc(dask_client, iris):
    X, y = iris
    est = _exact(dask_client, C=10, gamma=0.5).fit(X, y)
    ref = SVC(C=10, gamma=0.5, tol=1e-6).fit(X.astype(np.float64), y)
    assert est.problems_ == [(0, 1), (0, 2), (1, 2)]
    assert est.dual_coef_.shape == ref.dual_coef_.shape
    np.testing.assert_array_equal(est.n_support_, ref.n_support_)
    np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=1e-4)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=1e-3)
    ovo = est.set_params(decision_function_shape="ovo").decision_function(X)
    ref.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(ovo, ref.decision_function(X), atol=1e-3)
    assert len(est.relative_gaps_) == 3 and est.relative_gap_ == est.relative_gaps_.max()
    assert {h["label"] for h in est.history_} == {"0 vs 1", "0 vs 2", "1 vs 2"}


def test_break_ties_follows_the_ovr_scores(dask_client, iris):
    X, y = iris
    est = _exact(dask_client, C=0.05, gamma=0.05, break_ties=True).fit(X, y)
    np.testing.assert_array_equal(est.predict(X),
                                  est.classes_[np.argmax(est.decision_function(X), axis=1)])


def test_stock_libsvm_reads_every_classification_model(dask_client, iris, tmp_path):
    from libsvm.svmutil import svm_load_model, svm_predict

    X, y = iris
    Xs = sp.csr_matrix(X.astype(np.float64))
    for name, kw, yy in (("ovo", {}, y), ("binary", {}, (y > 0).astype(int)),
                         ("proba", {"probability": True}, y)):
        est = RandSVMClassifier(C=10, gamma=0.5, client=dask_client, random_state=0,
                                **kw).fit(X, yy)
        path = tmp_path / f"{name}.model"
        est.save(path)
        stock = svm_load_model(str(path))
        labels, _, _ = svm_predict(yy.astype(float), Xs, stock, "-q")
        np.testing.assert_array_equal(np.asarray(labels), est.predict(X))  # 100% of rows
        back = RandSVMClassifier.load(path)
        np.testing.assert_array_equal(back.predict(X), est.predict(X))
        if kw:
            _, _, probs = svm_predict(yy.astype(float), Xs, stock, "-b 1 -q")
            np.testing.assert_allclose(np.asarray(probs), est.predict_proba(X), atol=1e-6)
            np.testing.assert_allclose(back.predict_proba(X), est.predict_proba(X),
                                       atol=1e-12)


def test_stock_libsvm_refuses_the_one_vs_rest_form(dask_client, iris, tmp_path):
    from libsvm.svmutil import svm_load_model

    X, y = iris
    est = RandSVMClassifier(C=10, gamma=0.5, multi_class="ovr", client=dask_client,
                            random_state=0).fit(X, y)
    path = tmp_path / "ovr.model"
    est.save(path)
    try:
        stock = svm_load_model(str(path))
    except Exception:
        stock = None
    assert stock is None
    back = RandSVMClassifier.load(path)
    assert back.dual_coef_.shape == (3, len(back.support_))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_probabilities_are_calibrated(dask_client):
    X, y = make_arrays("waveform", 3000, seed=2)
    Xt, yt = make_arrays("waveform", 2000, seed=9)
    est = RandSVMClassifier(C=1, probability=True, client=dask_client,
                            random_state=0).fit(X, y)
    P = est.predict_proba(Xt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(est.predict_log_proba(Xt), np.log(P))
    ref = SVC(C=1, gamma="scale", probability=True, random_state=0).fit(X, y)
    ours = -np.mean(np.log(P[np.arange(len(yt)), yt]))
    theirs = -np.mean(np.log(ref.predict_proba(Xt)[np.arange(len(yt)), yt]))
    assert ours < theirs + 0.05  # log loss within 0.05 nats of SVC's 5-fold calibration
    assert not hasattr(RandSVMClassifier(C=1, client=dask_client).fit(X, y), "predict_proba")


def test_sample_weight_is_a_per_row_box(dask_client):
    X, y = make_arrays("twonorm", 600, seed=4)
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 3.0, len(y))
    est = _exact(dask_client, C=2.0, gamma=0.1).fit(X, y, sample_weight=w)
    ref = SVC(C=2.0, gamma=0.1, tol=1e-6).fit(X.astype(np.float64), y, sample_weight=w)
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                               atol=2e-3)
    # uniform weights scale C
    a = _exact(dask_client, C=2.0, gamma=0.1).fit(X, y, sample_weight=np.full(len(y), 3.0))
    b = _exact(dask_client, C=6.0, gamma=0.1).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)
    # integer weights repeat rows; zero and negative weights remove them (as SVC)
    reps = rng.integers(0, 3, len(y))
    c = _exact(dask_client, C=2.0, gamma=0.1).fit(X, y, sample_weight=reps)
    d = _exact(dask_client, C=2.0, gamma=0.1).fit(np.repeat(X, reps, axis=0),
                                                  np.repeat(y, reps))
    np.testing.assert_allclose(c.decision_function(X), d.decision_function(X), atol=2e-3)
    neg = np.where(reps == 0, -1.0, reps)
    e = _exact(dask_client, C=2.0, gamma=0.1).fit(X, y, sample_weight=neg)
    np.testing.assert_allclose(e.decision_function(X), c.decision_function(X), atol=2e-3)


def test_the_weighted_certificate_holds_over_all_rows(dask_client):
    """The primal over all rows recomputed here (weighted hinge) and the dual of the
    support vectors bound the model's gap as the fit reports it."""
    X, y = make_arrays("checkerboard", 4000, seed=5)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    est = RandSVMClassifier(C=10, gamma=1.0, sample_size=500, route="sample",
                            client=dask_client, random_state=0).fit(X, y, sample_weight=w)
    assert est.certified_
    kernel = Kernel("rbf", 1.0)
    coef, b = est.dual_coef_[0], est.intercept_[0]
    f = decision_values_float64(X, est.support_vectors_, coef, b, kernel)
    t = np.where(y == est.classes_[1], 1.0, -1.0)
    K = decision_values_float64(est.support_vectors_, est.support_vectors_,
                                np.eye(len(coef)), 0.0, kernel)
    wKw = coef @ K @ coef
    primal = 0.5 * wKw + np.sum(10 * w * np.maximum(0.0, 1 - t * f))
    dual = np.abs(coef).sum() - 0.5 * wKw
    assert np.all(np.abs(coef) <= 10 * w[est.support_] * (1 + 1e-6))
    last = est.history_[-1]
    assert primal == pytest.approx(last["primal_objective"], rel=1e-3)
    assert dual == pytest.approx(last["dual_objective"], rel=1e-3)
    assert (primal - dual) / primal <= 1e-3 * (1 + 1e-2)


def test_balanced_class_weight_equals_its_sample_weights(dask_client):
    X, y = make_arrays("twonorm", 800, seed=6)
    y = np.where(np.arange(len(y)) % 10 == 0, 1, -1)  # 10% positives
    a = _exact(dask_client, C=1.0, gamma=0.1, class_weight="balanced").fit(X, y)
    ref = SVC(C=1.0, gamma=0.1, tol=1e-6, class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), ref.decision_function(X), atol=2e-3)
    counts = np.bincount((y > 0).astype(int))
    sw = (len(y) / (2 * counts))[(y > 0).astype(int)]
    b = _exact(dask_client, C=1.0, gamma=0.1).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)


def test_linear_coef_is_svcs_and_read_only(dask_client, iris):
    X, y = iris
    est = _exact(dask_client, C=1.0, kernel="linear").fit(X, y)
    ref = SVC(C=1.0, kernel="linear", tol=1e-6).fit(X.astype(np.float64), y)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=2e-3)
    with pytest.raises(ValueError):
        est.coef_[0, 0] = 1.0
    with pytest.raises(AttributeError):
        _ = _exact(dask_client, C=1.0).fit(X, y).coef_


def test_a_parquet_weight_column_weighs_rows(dask_client, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, y = make_arrays("twonorm", 500, seed=8)
    w = np.random.default_rng(2).uniform(0.2, 3.0, len(y))
    cols = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    (tmp_path / "d").mkdir()
    for part, rows in enumerate((slice(0, 250), slice(250, 500))):
        table = pa.table({**{k: v[rows] for k, v in cols.items()}, "label": y[rows],
                          "w": w[rows]})
        pq.write_table(table, tmp_path / "d" / f"part-{part}.parquet")
    a = _exact(dask_client, C=2.0, gamma=0.1).fit(str(tmp_path / "d"),
                                                 dataset_kwargs={"weight_column": "w"})
    b = _exact(dask_client, C=2.0, gamma=0.1).fit(X, y, sample_weight=w)
    assert a.n_features_in_ == X.shape[1]  # the weight column is not a feature
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)
