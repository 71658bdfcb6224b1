"""Dataset handle and write_arrays: layouts, metadata-only facts, labels, limits."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from randsvm_dist.data import Dataset, write_arrays
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError


@pytest.fixture
def dense_xy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 7)).astype(np.float32)
    y = rng.choice([3, 7], size=1000)
    return X, y


def test_dense_round_trip(tmp_path, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d", partitions=3)
    assert (ds.n_rows, ds.n_features, ds.n_partitions, ds.is_sparse) == (1000, 7, 3, False)
    assert ds.partition_rows == [334, 333, 333]
    X0, y0 = ds.read_partition(0)
    assert X0.dtype == np.float32 and X0.flags.c_contiguous and X0.shape == (334, 7)
    np.testing.assert_array_equal(X0, X[:334])
    np.testing.assert_array_equal(y0, y[:334])
    Xa, ya = ds.to_arrays()
    np.testing.assert_array_equal(Xa, X)
    np.testing.assert_array_equal(ya, y)
    assert ya.dtype.kind == "i"  # labels kept as they are
    np.testing.assert_array_equal(ds.classes, [3, 7])
    np.testing.assert_array_equal(ds.class_counts, [np.sum(y == 3), np.sum(y == 7)])


def test_sparse_round_trip(tmp_path):
    X = sp.random(500, 40, density=0.1, format="csr", random_state=1, dtype=np.float64)
    y = np.random.default_rng(1).choice([-1.5, 2.5], size=500)
    ds = write_arrays(X, y, tmp_path / "s", rows_per_partition=200)
    assert ds.is_sparse and ds.n_features == 40 and ds.partition_rows == [200, 200, 100]
    X1, y1 = ds.read_partition(1)
    assert sp.isspmatrix_csr(X1) and X1.dtype == np.float32 and X1.shape == (200, 40)
    assert (X1 != X[200:400].astype(np.float32)).nnz == 0
    Xa, ya = ds.to_arrays()
    assert (Xa != X.astype(np.float32)).nnz == 0
    np.testing.assert_array_equal(ya, y)
    assert ya.dtype == np.float64


def test_sparse_width_recorded_when_last_columns_empty(tmp_path):
    X = sp.csr_matrix(np.array([[1.0, 0, 0, 0], [0, 2.0, 0, 0]]))
    ds = write_arrays(X, np.array([1, -1]), tmp_path / "s")
    assert ds.n_features == 4
    assert ds.read_partition(0)[0].shape == (2, 4)


def test_facts_come_from_metadata_only(tmp_path, dense_xy, monkeypatch):
    X, y = dense_xy
    write_arrays(X, y, tmp_path / "d", partitions=4)

    def no_data(*a, **k):
        raise AssertionError("data was read")

    monkeypatch.setattr(pq, "read_table", no_data)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", no_data)
    ds = Dataset.open(tmp_path / "d")
    assert ds.n_rows == 1000 and ds.n_features == 7 and ds.n_partitions == 4
    assert ds.class_counts.sum() == 1000 and list(ds.classes) == [3, 7]
    with pytest.raises(AssertionError):
        ds.read_partition(0)


def test_pickles_small_and_reads_after(tmp_path, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d", partitions=2)
    blob = pickle.dumps(ds)
    assert len(blob) < 5000
    ds2 = pickle.loads(blob)
    np.testing.assert_array_equal(ds2.read_partition(1)[0], X[500:])


def test_encode_labels(tmp_path, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d")
    enc = ds.encode_labels(np.array([7, 3, 7]))
    np.testing.assert_array_equal(enc, [1.0, -1.0, 1.0])
    assert enc.dtype == np.float64
    np.testing.assert_array_equal(ds.encode_labels(np.array([7, 3]), binary=False), [1, 0])
    assert ds.label_mapping() == {3: -1.0, 7: 1.0}
    assert ds.label_mapping(binary=False) == {3: 0, 7: 1}
    with pytest.raises(SchemaError, match="label 5"):
        ds.encode_labels(np.array([3, 5]))


def test_encode_labels_multiclass_and_errors(tmp_path):
    X = np.zeros((6, 2), np.float32)
    ds = write_arrays(X, np.array([0, 1, 2, 2, 1, 0]), tmp_path / "m")
    np.testing.assert_array_equal(ds.encode_labels(np.array([2, 0]), binary=False), [2, 0])
    with pytest.raises(SchemaError, match="exactly two.*3"):
        ds.encode_labels(np.array([0, 1]), binary=True)
    one = write_arrays(X, np.ones(6, dtype=int), tmp_path / "one")
    assert list(one.classes) == [1]
    for binary in (True, False):
        with pytest.raises(SchemaError, match="one class"):
            one.encode_labels(np.ones(2, dtype=int), binary=binary)


def test_to_arrays_refuses_above_limit(tmp_path, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d")
    with pytest.raises(ParameterError, match="max_bytes"):
        ds.to_arrays(max_bytes=1000)
    assert ds.to_arrays(max_bytes=10**6)[0].shape == (1000, 7)
    Xs = sp.random(1000, 50, density=0.2, format="csr", random_state=0)
    dss = write_arrays(Xs, y, tmp_path / "s")
    with pytest.raises(ParameterError, match="max_bytes"):
        dss.to_arrays(max_bytes=20_000)


def test_user_table_with_own_columns(tmp_path):
    d = tmp_path / "own"
    d.mkdir()
    rng = np.random.default_rng(2)
    for k in range(2):
        t = pa.table({"age": rng.integers(0, 90, 50), "klass": rng.choice(["a", "b"], 50),
                      "w": rng.standard_normal(50), "h": rng.standard_normal(50)})
        pq.write_table(t, d / f"p{k}.parquet")
    ds = Dataset.open(d, label_column="klass", feature_columns=["w", "age"])
    assert ds.n_rows == 100 and ds.n_features == 2 and not ds.is_sparse
    X, y = ds.read_partition(1)
    t1 = pq.read_table(d / "p1.parquet")
    np.testing.assert_array_equal(X[:, 1], t1.column("age").to_numpy().astype(np.float32))
    assert list(ds.classes) == ["a", "b"] and ds.class_counts.sum() == 100
    np.testing.assert_array_equal(ds.encode_labels(np.array(["b", "a"])), [1.0, -1.0])
    # Default features: every column but the label, in schema order.
    assert Dataset.open(d, label_column="klass").feature_columns == ["age", "w", "h"]
    with pytest.raises(SchemaError, match="klass.*expected numbers"):
        Dataset.open(d, label_column="w")
    with pytest.raises(SchemaError, match="no label column"):
        Dataset.open(d)
    with pytest.raises(SchemaError, match="no feature column"):
        Dataset.open(d, label_column="klass", feature_columns=["zz"])


def test_user_table_nan_and_null_named(tmp_path):
    d = tmp_path / "nan"
    d.mkdir()
    pq.write_table(pa.table({"x": [1.0, np.nan, 2.0], "label": [1, 2, 1]}), d / "a.parquet")
    with pytest.raises(SchemaError, match=r"row 1.*'x'.*NaN"):
        Dataset.open(d).read_partition(0)
    e = tmp_path / "null"
    e.mkdir()
    pq.write_table(pa.table({"x": [1.0, 2.0], "label": [1, None]}), e / "a.parquet")
    with pytest.raises(SchemaError, match="row 1 has no value in label"):
        Dataset.open(e).read_partition(0)
    f = tmp_path / "nanlabel"
    f.mkdir()
    pq.write_table(pa.table({"x": [1.0, 2.0], "label": [1.0, np.nan]}), f / "a.parquet")
    with pytest.raises(SchemaError, match="row 1 has a NaN or infinite label"):
        Dataset.open(f).read_partition(0)


def test_single_file_and_file_url(tmp_path, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d", partitions=2)
    one = Dataset.open(ds.paths[1])
    assert one.n_rows == 500 and list(one.classes) == [3, 7]
    url = Dataset.open((tmp_path / "d").as_uri())
    assert url.n_partitions == 2
    np.testing.assert_array_equal(url.to_arrays()[0], X)


def test_partitions_with_different_schemas_refused(tmp_path):
    d = tmp_path / "mix"
    d.mkdir()
    pq.write_table(pa.table({"x": [1.0], "label": [1]}), d / "a.parquet")
    pq.write_table(pa.table({"x": [1.0], "z": [2.0], "label": [1]}), d / "b.parquet")
    with pytest.raises(SchemaError, match="b.parquet.*differ"):
        Dataset.open(d)


def test_missing_and_empty(tmp_path):
    with pytest.raises(DataFormatError, match="not found"):
        Dataset.open(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFormatError, match="no \\*.parquet"):
        Dataset.open(tmp_path / "empty")


def test_write_arrays_refuses_bad_input_and_existing_output(tmp_path):
    X = np.ones((3, 2))
    write_arrays(X, [1, 2, 1], tmp_path / "a")
    with pytest.raises(DataFormatError, match="already exists"):
        write_arrays(X, [1, 2, 1], tmp_path / "a")
    write_arrays(X * 2, [1, 2, 2], tmp_path / "a", overwrite=True)
    assert Dataset.open(tmp_path / "a").read_partition(0)[0][0, 0] == 2
    X[1, 1] = np.inf
    with pytest.raises(SchemaError, match="row 1, feature 1"):
        write_arrays(X, [1, 2, 1], tmp_path / "b")
    with pytest.raises(SchemaError, match="labels for 3 rows"):
        write_arrays(np.ones((3, 2)), [1, 2], tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_fsspec_memory_url():
    fsspec = pytest.importorskip("fsspec")
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    url = "memory://randsvm-test/ds"
    try:
        ds = write_arrays(X, np.arange(10) % 2, url, partitions=2)
        assert ds.n_rows == 10 and ds.n_partitions == 2
        np.testing.assert_array_equal(Dataset.open(url).to_arrays()[0], X)
    finally:
        fs = fsspec.filesystem("memory")
        if fs.exists("/randsvm-test"):
            fs.rm("/randsvm-test", recursive=True)


def test_workers_read_partitions_of_a_shipped_dataset(tmp_path, dask_client, dense_xy):
    X, y = dense_xy
    ds = write_arrays(X, y, tmp_path / "d", partitions=4)
    parts = dask_client.gather(dask_client.map(ds.read_partition, range(ds.n_partitions)))
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)
