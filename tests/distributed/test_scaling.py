"""Scaling: statistics over partitions, svm-scale's range files, the scaling inside a model."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.data.range_file import read_range_file
from randsvm_dist.distributed.scaling import (
    FeatureScaler,
    combine_stats,
    feature_stats,
)
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import DataFormatError, ParameterError


def _wild(n: int, seed: int):
    """Features on very different scales, some negative, one constant."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * np.array([1e3, 1e-2, 5.0, 1.0, 0.0]) \
        + np.array([5e3, 0.0, -20.0, 1.0, 7.0])
    return X.astype(np.float32)


def test_statistics_over_partitions_equal_numpys_over_the_whole_array():
    X = _wild(1000, 0)
    blocks = [X[:7], X[7:400], X[400:401], X[401:]]
    got = combine_stats([feature_stats(b) for b in blocks])
    X64 = X.astype(np.float64)
    np.testing.assert_array_equal(got.min, X64.min(axis=0))
    np.testing.assert_array_equal(got.max, X64.max(axis=0))
    np.testing.assert_allclose(got.mean, X64.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.var, X64.var(axis=0), rtol=1e-9, atol=1e-12)
    assert got.n == 1000


def test_sparse_statistics_count_implicit_zeros():
    X = sp.random(300, 6, density=0.2, format="csr", random_state=1, dtype=np.float32)
    X.data = X.data * 4 - 1  # some negative values
    blocks = [X[:100], X[100:250], X[250:]]
    got = combine_stats([feature_stats(b) for b in blocks])
    D = X.toarray().astype(np.float64)
    np.testing.assert_array_equal(got.min, D.min(axis=0))
    np.testing.assert_array_equal(got.max, D.max(axis=0))
    np.testing.assert_allclose(got.var, D.var(axis=0), rtol=1e-9)


def test_fit_on_parquet_partitions_on_the_workers_equals_numpy(dask_client, tmp_path):
    X = _wild(900, 2)
    y = (X[:, 0] > 5e3).astype(int)
    write_arrays(X, y, tmp_path / "wild", partitions=4)
    sc = FeatureScaler("standard", client=dask_client).fit(str(tmp_path / "wild"))
    np.testing.assert_allclose(sc.mean_, X.astype(np.float64).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sc.var_, X.astype(np.float64).var(axis=0), rtol=1e-9)
    Z = sc.transform(X)
    np.testing.assert_allclose(Z[:, :4].mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(Z[:, :4].std(axis=0), 1, atol=1e-4)
    assert np.all(Z[:, 4] == 0)  # constant feature
    mm = FeatureScaler(client=dask_client).fit(str(tmp_path / "wild"))
    np.testing.assert_array_equal(mm.data_min_, X.min(axis=0))
    Z = mm.transform(X)
    np.testing.assert_allclose(Z[:, :4].min(axis=0), -1, atol=1e-6)
    np.testing.assert_allclose(Z[:, :4].max(axis=0), 1, atol=1e-6)
    # the scaled copy written on the workers holds the same rows
    out = mm.transform_dataset(str(tmp_path / "wild"), tmp_path / "wild-scaled",
                               client=dask_client)
    Xs, ys = out.to_arrays()
    np.testing.assert_array_equal(Xs, Z)
    np.testing.assert_array_equal(ys, y)


# A range file exactly as `svm-scale -l -1 -u 1 -s range train` writes it: feature 2 was
# constant, so svm-scale left it out.
SVM_SCALE_RANGE = """x
-1 1
1 0 10
3 -2 2
4 5 5.5
"""


def test_range_file_round_trip_in_svm_scale_format(tmp_path):
    path = tmp_path / "range"
    path.write_text(SVM_SCALE_RANGE)
    sc = FeatureScaler.load_range(path, n_features=5)
    X = np.array([[0, 3, -2, 5, 9], [10, 3, 2, 5.5, 9], [2.5, 3, 0, 5.25, 9]], np.float32)
    expected = np.array([[-1, 0, -1, -1, 0], [1, 0, 1, 1, 0], [-0.5, 0, 0, 0, 0]])
    np.testing.assert_allclose(sc.transform(X), expected, atol=1e-6)
    out = tmp_path / "again"
    sc.save_range(out)
    assert out.read_text() == SVM_SCALE_RANGE
    # svm-scale writes a y section first when it also scaled targets: read past it
    ypath = tmp_path / "yrange"
    ypath.write_text("y\n0 1\n-3 3\n" + SVM_SCALE_RANGE)
    lower, upper, fmin, fmax = read_range_file(ypath)
    assert (lower, upper) == (-1.0, 1.0)
    np.testing.assert_array_equal(fmin, [0, 0, -2, 5])
    np.testing.assert_array_equal(fmax, [10, 0, 2, 5.5])


def test_fitted_scaler_round_trips_through_its_range_file(tmp_path):
    X = _wild(200, 3)
    for method in ("minmax", "standard"):
        sc = FeatureScaler(method).fit(X)
        sc.save_range(tmp_path / method)
        back = FeatureScaler.load_range(tmp_path / method, n_features=5)
        np.testing.assert_allclose(back.transform(X), sc.transform(X), rtol=1e-6, atol=1e-6)


def test_bad_range_file_names_the_line(tmp_path):
    path = tmp_path / "bad"
    path.write_text("x\n-1 1\n1 0 10\n2 zero 3\n")
    with pytest.raises(DataFormatError, match=r"line 4: expected 'index min max'"):
        read_range_file(path)
    path.write_text("1 0 10\n")
    with pytest.raises(DataFormatError, match="line 1: expected a line holding 'x'"):
        read_range_file(path)


def test_sparse_keeps_zeros_at_zero():
    X = sp.random(200, 8, density=0.1, format="csr", random_state=4, dtype=np.float32)
    X.data = X.data * 6 - 2
    sc = FeatureScaler().fit(X)
    assert sc.sparse_ and sc.lower_ == 0.0
    Z = sc.transform(X)
    assert sp.issparse(Z) and Z.nnz == X.nnz
    assert ((Z != 0) != (X != 0)).nnz == 0
    assert np.abs(Z.toarray()).max(axis=0).max() == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="keeps zeros at zero"):
        FeatureScaler(lower=-1).fit(X)


def test_pipeline_with_sklearn():
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    X, y = make_arrays("twonorm", 400, seed=5)
    X = X * 1000 + 50
    pipe = make_pipeline(FeatureScaler(), SVC(gamma=0.05)).fit(X, y)
    assert pipe.score(X, y) > 0.9


def test_predict_applies_the_stored_scaling(dask_client, tmp_path):
    from libsvm.svmutil import svm_load_model

    X, y = make_arrays("twonorm", 600, seed=6)
    X = X * np.linspace(1, 1e4, X.shape[1]).astype(np.float32) + 100
    Xt, yt = make_arrays("twonorm", 300, seed=7)
    Xt = Xt * np.linspace(1, 1e4, X.shape[1]).astype(np.float32) + 100
    params = dict(C=1.0, gamma=0.05, k=None, sample_size=600, random_state=0,
                  client=dask_client)
    est = RandSVMClassifier(scale="minmax", **params).fit(X, y)
    by_hand = FeatureScaler().fit(X)
    ref = RandSVMClassifier(**params).fit(by_hand.transform(X), y)
    np.testing.assert_array_equal(est.predict(Xt), ref.predict(by_hand.transform(Xt)))
    np.testing.assert_allclose(est.decision_function(Xt),
                               ref.decision_function(by_hand.transform(Xt)), atol=1e-4)
    assert est.score(Xt, yt) > 0.9
    assert RandSVMClassifier(**params).fit(X, y).score(Xt, yt) < est.score(Xt, yt)
    est.save(tmp_path / "m.model")
    assert svm_load_model(str(tmp_path / "m.model")) is not None  # stock LIBSVM reads it
    back = RandSVMClassifier.load(tmp_path / "m.model")
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    rng = FeatureScaler.load_range(tmp_path / "m.model.range", n_features=X.shape[1])
    np.testing.assert_allclose(rng.transform(Xt), by_hand.transform(Xt), atol=1e-6)
    write_arrays(Xt, yt, tmp_path / "test", partitions=2)
    assert back.evaluate(str(tmp_path / "test"), client=dask_client)["accuracy"] == \
        pytest.approx(est.score(Xt, yt))


@pytest.mark.parametrize("method", ["minmax", "standard"])
def test_scaling_re_read_partitions_gives_the_cached_fits_model(dask_client, tmp_path,
                                                                method, caplog):
    """scale= on data re-read every pass (cache=False: larger than the workers' memory):
    the statistics are taken by the tasks that read the partitions and each read is scaled
    where it is read, so no partition is kept; the model is the cached fit's."""
    X, y = make_arrays("twonorm", 3000, seed=6)
    X = X * np.linspace(1, 1e4, X.shape[1]).astype(np.float32) + 100
    write_arrays(X, y, tmp_path / "data", partitions=4)
    params = dict(C=1.0, gamma=0.05, sample_size=500, route="sample", random_state=0,
                  scale=method, client=dask_client)
    cached = RandSVMClassifier(cache=True, **params).fit(str(tmp_path / "data"))
    with caplog.at_level(logging.INFO, logger="randsvm_dist"):
        reread = RandSVMClassifier(cache=False, **params).fit(str(tmp_path / "data"))
    assert "re-read each pass" in caplog.text
    np.testing.assert_array_equal(reread.support_, cached.support_)
    np.testing.assert_allclose(reread.dual_coef_, cached.dual_coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(reread.scaler_.scale_, cached.scaler_.scale_)
    assert reread.certified_ and reread.n_iter_ == cached.n_iter_
