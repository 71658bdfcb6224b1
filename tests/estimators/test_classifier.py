"""RandSVMClassifier: API, Parquet input, model files read by stock LIBSVM, bad input,
surviving a dead worker."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import ClusterError, ParameterError, SchemaError


@pytest.fixture(scope="module")
def twonorm():
    return make_arrays("twonorm", 2000, seed=1), make_arrays("twonorm", 1000, seed=2)


@pytest.fixture(scope="module")
def fitted(dask_client, twonorm):
    (X, y), _ = twonorm
    return RandSVMClassifier(C=1.0, gamma="scale", k=1500, sample_size=500, random_state=0,
                             client=dask_client).fit(X, y)


def test_sklearn_api(fitted, twonorm):
    _, (Xt, yt) = twonorm
    assert fitted.score(Xt, yt) > 0.95
    assert fitted.get_params()["C"] == 1.0
    assert fitted.support_vectors_.shape == (len(fitted.support_), 20)
    assert fitted.n_support_.sum() == len(fitted.support_)
    assert fitted.dual_coef_.shape == (1, len(fitted.support_))
    assert np.all(np.abs(fitted.dual_coef_) <= 1.0 + 1e-9)  # 0 <= alpha <= C
    assert {"iteration", "sample_size", "n_support", "n_violators", "dual_objective",
            "seconds"} <= set(fitted.history_[0])


def test_pickle_drops_the_client(fitted):
    import pickle

    clone = pickle.loads(pickle.dumps(fitted))
    assert clone.client is None
    np.testing.assert_array_equal(clone.support_, fitted.support_)


def test_saved_model_loads_in_stock_libsvm_and_predicts_identically(fitted, twonorm, tmp_path):
    import scipy.sparse as sp
    from libsvm.svmutil import svm_load_model, svm_predict

    _, (Xt, yt) = twonorm
    path = tmp_path / "twonorm.model"
    fitted.save(path)
    stock = svm_load_model(str(path))
    labels, _, dec = svm_predict(yt.astype(float), sp.csr_matrix(Xt.astype(np.float64)),
                                 stock, "-q")
    np.testing.assert_array_equal(np.asarray(labels), fitted.predict(Xt))
    sign = 1.0 if stock.get_labels()[0] == fitted.classes_[1] else -1.0
    np.testing.assert_allclose(sign * np.asarray(dec)[:, 0], fitted.decision_function(Xt),
                               atol=1e-4)
    loaded = RandSVMClassifier.load(path)
    np.testing.assert_array_equal(loaded.predict(Xt), fitted.predict(Xt))
    np.testing.assert_allclose(loaded.decision_function(Xt), fitted.decision_function(Xt),
                               atol=1e-4)


def test_multiclass_save_load_roundtrip(dask_client, tmp_path):
    X, y = make_arrays("waveform", 900, seed=4)
    est = RandSVMClassifier(C=1.0, k=2000, sample_size=400, max_iter=3, random_state=0,
                            client=dask_client).fit(X, y)
    est.save(tmp_path / "wave.model")
    loaded = RandSVMClassifier.load(tmp_path / "wave.model")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def test_fit_on_parquet_then_distributed_evaluate_and_predict(dask_client, twonorm, tmp_path):
    import pyarrow.parquet as pq

    (X, y), (Xt, yt) = twonorm
    train = write_arrays(X, y, tmp_path / "train", partitions=5)
    test = write_arrays(Xt, yt, tmp_path / "test", partitions=3)
    est = RandSVMClassifier(C=1.0, k=1500, sample_size=500, random_state=0,
                            client=dask_client).fit(str(train.url if hasattr(train, "url")
                                                        else tmp_path / "train"))
    same = RandSVMClassifier(C=1.0, k=1500, sample_size=500, random_state=0,
                             client=dask_client).fit(X, y)
    np.testing.assert_array_equal(est.support_, same.support_)
    report = est.evaluate(test)
    assert report["rows"] == 1000
    assert report["accuracy"] == pytest.approx(est.score(Xt, yt))
    assert np.sum(report["confusion_matrix"]) == 1000
    out = est.predict_dataset(test, tmp_path / "pred")
    assert out["rows"] == 1000
    table = pq.read_table(tmp_path / "pred")
    assert table.num_rows == 1000
    assert sorted(table.column_names) == ["decision", "label", "prediction"]


@pytest.mark.parametrize("params, match", [
    ({"kernel": "cubic"}, "kernel"),
    ({"C": -1.0}, "'C' parameter"),
    ({"gamma": "wide"}, "gamma"),
    ({"k": 0}, "'k' parameter"),
    ({"max_iter": 0}, "max_iter"),
])
def test_bad_parameters(params, match, twonorm):
    (X, y), _ = twonorm
    with pytest.raises(ParameterError, match=match):
        RandSVMClassifier(**params).fit(X, y)


def test_one_class_data_is_refused(dask_client):
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(SchemaError, match="one class"):
        RandSVMClassifier(client=dask_client).fit(X, np.ones(50))


def test_wrong_feature_count_is_refused(fitted, tmp_path):
    with pytest.raises(SchemaError, match="20"):
        fitted.predict(np.zeros((3, 7)))
    other = write_arrays(*make_arrays("checkerboard", 100, seed=0), tmp_path / "cb")
    with pytest.raises(SchemaError, match="features"):
        fitted.evaluate(other)


def test_unreachable_scheduler_is_a_clear_error(twonorm):
    (X, y), _ = twonorm
    with pytest.raises(ClusterError, match="127.0.0.1:9"):
        RandSVMClassifier(client="tcp://127.0.0.1:9").fit(X, y)


def test_a_dead_worker_does_not_change_the_result(twonorm):
    from distributed import Client, LocalCluster

    (X, y), _ = twonorm
    kw = dict(C=1.0, k=1500, sample_size=500, max_iter=6, random_state=3, n_partitions=6)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        reference = RandSVMClassifier(**kw, client=client).fit(X, y)
        result = {}

        def fit():
            result["est"] = RandSVMClassifier(**kw, client=client).fit(X, y)

        thread = threading.Thread(target=fit)
        thread.start()
        time.sleep(reference.fit_time_ / 3)
        victim = next(iter(cluster.workers.values()))
        victim.process.process.kill()  # the nanny restarts it; its tasks are recomputed
        thread.join(timeout=300)
    assert "est" in result
    np.testing.assert_array_equal(result["est"].support_, reference.support_)
    np.testing.assert_allclose(result["est"].dual_coef_, reference.dual_coef_)
