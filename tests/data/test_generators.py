"""Synthetic generators: determinism across chunking, distributions, make()."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data import GENERATORS, Dataset, make, make_arrays
from randsvm_dist.data.generators import BLOCK_ROWS
from randsvm_dist.exceptions import DataFormatError, ParameterError


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_rows_do_not_depend_on_chunking(name):
    n = 2 * BLOCK_ROWS + 123
    X, y = make_arrays(name, n, seed=5)
    spec = GENERATORS[name]
    assert X.shape == (n, spec.n_features) and X.dtype == np.float32 and X.flags.c_contiguous
    if spec.task == "regression":
        assert y.dtype == np.float64 and len(np.unique(y)) == n
    else:
        assert set(np.unique(y).tolist()) == set(spec.classes)
    cuts = [(0, 1), (17, 1000), (BLOCK_ROWS - 3, 10), (BLOCK_ROWS + 999, n - BLOCK_ROWS - 999)]
    for start, k in cuts:
        Xs, ys = make_arrays(name, k, seed=5, start=start)
        np.testing.assert_array_equal(Xs, X[start:start + k])
        np.testing.assert_array_equal(ys, y[start:start + k])
    X2, _ = make_arrays(name, 100, seed=6)
    assert not np.array_equal(X2, X[:100])


def test_make_same_rows_whatever_partition_count(tmp_path):
    a = make("ringnorm", tmp_path / "a", rows=50_000, partitions=3, seed=11)
    b = make("ringnorm", tmp_path / "b", rows=50_000, partitions=7, seed=11)
    c = make("ringnorm", tmp_path / "c", rows=50_000, rows_per_partition=40_000, seed=11)
    assert (a.n_partitions, b.n_partitions, c.n_partitions) == (3, 7, 2)
    Xa, ya = a.to_arrays()
    for other in (b, c):
        Xo, yo = other.to_arrays()
        np.testing.assert_array_equal(Xa, Xo)
        np.testing.assert_array_equal(ya, yo)
    X, y = make_arrays("ringnorm", 50_000, seed=11)
    np.testing.assert_array_equal(Xa, X)
    assert a.meta["generator"] == "ringnorm" and a.meta["seed"] == 11
    assert a.class_counts.sum() == 50_000


def test_checkerboard_labels_follow_the_board():
    X, y = make_arrays("checkerboard", 20_000, seed=1)
    assert X.min() >= 0 and X.max() < 4
    parity = (np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2
    np.testing.assert_array_equal(y, np.where(parity == 0, 1, -1))
    Xn, yn = make_arrays("noisy_checkerboard", 20_000, seed=1)
    np.testing.assert_array_equal(Xn, X)  # same points, some labels flipped
    flipped = np.mean(yn != y)
    assert 0.13 < flipped < 0.17


def _bayes_accuracy(X, y, pos_mean, pos_var, neg_mean, neg_var):
    d = X.shape[1]

    def loglik(mean, var):
        return -0.5 * ((X - mean) ** 2).sum(1) / var - 0.5 * d * np.log(var)

    pred = np.where(loglik(pos_mean, pos_var) > loglik(neg_mean, neg_var), 1, -1)
    return np.mean(pred == y)


def test_distributions_match_their_definitions():
    a = 2 / np.sqrt(20)
    X, y = make_arrays("twonorm", 40_000, seed=2)
    np.testing.assert_allclose(X[y > 0].mean(0), a, atol=0.03)
    np.testing.assert_allclose(X[y < 0].mean(0), -a, atol=0.03)
    X, y = make_arrays("ringnorm", 40_000, seed=2)
    np.testing.assert_allclose(X[y > 0].var(0), 4.0, rtol=0.06)
    np.testing.assert_allclose(X[y < 0].mean(0), a, atol=0.03)
    np.testing.assert_allclose(X[y < 0].var(0), 1.0, rtol=0.06)
    X, y = make_arrays("gauss", 40_000, seed=2)
    acc = _bayes_accuracy(X.astype(np.float64), y, np.zeros(2), 1.0, np.array([2.0, 0]), 4.0)
    assert 0.80 < acc < 0.83  # Haykin's two overlapping Gaussians: Bayes ~81.5%
    for d in (2, 3, 5):
        X, y = make_arrays(f"clusters{d}", 40_000, seed=2)
        assert X.shape[1] == d
        # The Bayes rule for the two equal-variance clusters is sign(sum(x)).
        acc = np.mean(np.where(X.sum(1) > 0, 1, -1) == y)
        assert 0.84 < acc < 0.86


def test_waveform_and_its_binary_version():
    X, y = make_arrays("waveform", 30_000, seed=3)
    assert X.shape[1] == 21 and set(np.unique(y)) == {0, 1, 2}
    assert np.all(np.abs(np.bincount(y) / len(y) - 1 / 3) < 0.02)
    # Breiman's waves: h1 peaks (6) at position 11, h2 = h1 shifted right by 4, h3 left by 4;
    # class 0 mixes h1/h2, 1 mixes h1/h3, 2 mixes h2/h3, with E[u] = 1/2.
    t = np.arange(1, 22)
    h1, h2, h3 = (np.maximum(6 - np.abs(t - c), 0) for c in (11, 15, 7))
    for k, (a, b) in enumerate([(h1, h2), (h1, h3), (h2, h3)]):
        np.testing.assert_allclose(X[y == k].mean(0), (a + b) / 2, atol=0.06)
    Xb, yb = make_arrays("waveform_binary", 30_000, seed=3)
    np.testing.assert_array_equal(Xb, X)
    np.testing.assert_array_equal(yb, np.where(y == 0, -1, 1))


def test_bad_arguments(tmp_path):
    with pytest.raises(ParameterError, match="unknown generator 'nope'.*twonorm"):
        make_arrays("nope", 10, 0)
    with pytest.raises(ParameterError, match="seed"):
        make_arrays("twonorm", 10, -1)
    with pytest.raises(ParameterError, match="rows"):
        make("twonorm", tmp_path / "x", rows=0, partitions=1, seed=0)
    with pytest.raises(ParameterError, match="partitions"):
        make("twonorm", tmp_path / "x", rows=10, partitions=0, seed=0)
    assert not (tmp_path / "x").exists()
    make("twonorm", tmp_path / "x", rows=10, partitions=2, seed=0)
    with pytest.raises(DataFormatError, match="already exists"):
        make("twonorm", tmp_path / "x", rows=10, partitions=2, seed=0)
    assert Dataset.open(tmp_path / "x").n_rows == 10


def test_friedman1_is_sklearns_definition_with_the_given_noise():
    X, y = make_arrays("friedman1", 20_000, seed=3, noise=0.0)
    X64 = X.astype(np.float64)
    f = (10 * np.sin(np.pi * X64[:, 0] * X64[:, 1]) + 20 * (X64[:, 2] - 0.5) ** 2
         + 10 * X64[:, 3] + 5 * X64[:, 4])
    np.testing.assert_allclose(y, f, rtol=1e-12)   # from the stored float32 features
    assert X.min() >= 0 and X.max() < 1 and X.shape[1] == 10
    Xn, yn = make_arrays("friedman1", 20_000, seed=3, noise=2.0)
    np.testing.assert_array_equal(Xn, X)          # the noise changes only the targets
    assert np.std(yn - f) == pytest.approx(2.0, rel=0.03)
    assert np.std(make_arrays("friedman1", 20_000, seed=3)[1] - f) == pytest.approx(1.0,
                                                                                   rel=0.03)
    with pytest.raises(ParameterError, match="noise"):
        make_arrays("friedman1", 10, noise=-1)
    with pytest.raises(ParameterError, match="takes no parameter"):
        make_arrays("ringnorm", 10, noise=1.0)


def test_blobs_with_outliers_labels_the_outliers():
    X, y = make_arrays("blobs_with_outliers", 50_000, seed=1, outlier_fraction=0.1)
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert (y == -1).mean() == pytest.approx(0.1, abs=0.01)
    from randsvm_dist.data.generators import _BLOB_CENTRES

    d = np.min(np.linalg.norm(X[:, None, :] - _BLOB_CENTRES[None], axis=2), axis=1)
    assert np.quantile(d[y == 1], 0.99) < 2.5          # normals stay near a centre
    assert np.median(d[y == -1]) > 3.0                  # outliers are far, on the whole
    assert (make_arrays("blobs_with_outliers", 1000, seed=1, outlier_fraction=0.0)[1]
            == 1).all()


def test_make_friedman1_writes_a_float_label_column(tmp_path):
    import pyarrow.parquet as pq

    ds = make("friedman1", tmp_path / "fr", rows=40_000, partitions=3, seed=2, noise=0.5)
    assert ds.meta["noise"] == 0.5 and ds.meta.get("classes") is None
    assert str(pq.read_schema(ds.paths[0]).field("label").type) == "double"
    X, y = ds.to_arrays()
    Xa, ya = make_arrays("friedman1", 40_000, seed=2, noise=0.5)
    np.testing.assert_array_equal(X, Xa)
    np.testing.assert_array_equal(y, ya)


def test_data_make_cli_friedman1_and_blobs(tmp_path):
    from randsvm_dist.cli import main

    assert main(["data", "make", "friedman1", str(tmp_path / "f"), "--rows", "3000",
                 "--partitions", "2", "--noise", "0.3", "--seed", "4"]) == 0
    ds = Dataset.open(tmp_path / "f")
    np.testing.assert_array_equal(ds.to_arrays()[1],
                                  make_arrays("friedman1", 3000, seed=4, noise=0.3)[1])
    assert main(["data", "make", "blobs_with_outliers", str(tmp_path / "b"), "--rows",
                 "3000", "--outlier-fraction", "0.2"]) == 0
    assert set(Dataset.open(tmp_path / "b").classes.tolist()) == {-1, 1}
    assert main(["data", "info", str(tmp_path / "f")]) == 0
