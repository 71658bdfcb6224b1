"""Converters: the real LIBSVM sets, round trips against sklearn, CSV, Parquet, partitioning."""

from __future__ import annotations

import bz2
import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from randsvm_dist.data import Dataset, convert, make_arrays, textio
from randsvm_dist.exceptions import DataFormatError, SchemaError


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


def _check_equals_sklearn(ds, path, n_features=None):
    Xs, ys = load_svmlight_file(str(path), zero_based=False, n_features=n_features)
    X, y = ds.to_arrays()
    assert X.shape == Xs.shape
    np.testing.assert_array_equal(_dense(X), Xs.toarray().astype(np.float32))
    np.testing.assert_array_equal(y, ys)


@pytest.mark.parametrize("rel, kwargs, shape, classes, counts", [
    ("a9a/a9a.train.svm.gz", {}, (32_561, 123), [-1, 1], [24_720, 7_841]),
    ("a9a/a9a.test.svm.gz", {"n_features": 123}, (16_281, 123), [-1, 1], [12_435, 3_846]),
    ("ijcnn1/ijcnn1.train.svm.gz", {"partitions": 4}, (49_990, 22), [-1, 1],
     [45_137, 4_853]),
    ("ijcnn1/ijcnn1.test.svm.gz", {"dense": True, "rows_per_partition": 40_000},
     (91_701, 22), [-1, 1], [82_989, 8_712]),
    ("skin_nonskin/skin_nonskin.svm.gz", {"dense": True, "partitions": 3}, (245_057, 3),
     [1, 2], [50_859, 194_198]),
])
def test_real_sets(tmp_path, shared_datasets, rel, kwargs, shape, classes, counts):
    src = shared_datasets / rel
    ds = convert(src, tmp_path / "out", **kwargs)
    assert (ds.n_rows, ds.n_features) == shape
    assert ds.is_sparse == (not kwargs.get("dense", False))
    assert ds.classes.tolist() == classes and ds.class_counts.tolist() == counts
    assert ds.classes.dtype.kind == "i"  # "1.0"/"-1.0" and "+1" become ints
    if "partitions" in kwargs:
        assert ds.n_partitions == kwargs["partitions"]
        assert max(ds.partition_rows) - min(ds.partition_rows) <= 1
    if shape[0] < 60_000:
        _check_equals_sklearn(ds, src, kwargs.get("n_features"))
    # Reopening reads the same facts from metadata alone.
    again = Dataset.open(tmp_path / "out")
    assert (again.n_rows, again.n_features, again.partition_rows) == \
        (ds.n_rows, ds.n_features, ds.partition_rows)


def test_a9a_test_width_without_n_features(tmp_path, shared_datasets):
    ds = convert(shared_datasets / "a9a/a9a.test.svm.gz", tmp_path / "o")
    assert ds.n_features == 122


def _write_svm(path, X, y, opener=open):
    tmp = path.with_suffix(".tmp")
    dump_svmlight_file(X, y, str(tmp), zero_based=False)
    with open(tmp, "rb") as f, opener(path, "wb") as g:
        g.write(f.read())
    tmp.unlink()


@pytest.mark.parametrize("suffix, opener", [(".svm", open), (".svm.gz", gzip.open),
                                            (".svm.bz2", bz2.open)])
def test_round_trip_small_chunks_many_partitions(tmp_path, monkeypatch, suffix, opener):
    # Tiny chunks: rows cross chunk and partition boundaries in every way.
    monkeypatch.setattr(textio, "CHUNK_BYTES", 997)
    rng = np.random.default_rng(0)
    X = sp.random(3000, 30, density=0.15, format="csr", random_state=1)
    X.data = np.round(X.data * 10 - 5, 3)
    y = rng.choice([-1, 1], 3000)
    src = tmp_path / f"data{suffix}"
    _write_svm(src, X, y, opener)
    sparse = convert(src, tmp_path / "s", rows_per_partition=700)
    assert sparse.partition_rows == [700] * 4 + [200]
    _check_equals_sklearn(sparse, src)
    dense = convert(src, tmp_path / "d", partitions=6, dense=True)
    assert dense.n_partitions == 6 and not dense.is_sparse
    _check_equals_sklearn(dense, src)


def test_dense_width_and_label_type_fixed_up(tmp_path, monkeypatch):
    # The widest row and the only non-integral label come last: earlier partitions are
    # rewritten so every file agrees.
    monkeypatch.setattr(textio, "CHUNK_BYTES", 64)
    lines = [f"{1 if i % 2 else -1} 1:{i}" for i in range(40)] + ["0.5 1:1 9:2"]
    src = tmp_path / "late.svm"
    src.write_text("\n".join(lines) + "\n")
    for dense in (True, False):
        ds = convert(src, tmp_path / f"o{dense}", rows_per_partition=10, dense=dense)
        assert ds.n_features == 9 and ds.n_partitions == 5
        for i in range(ds.n_partitions):
            X, y = ds.read_partition(i)
            assert X.shape[1] == 9 and y.dtype == np.float64
        assert ds.classes.tolist() == [-1.0, 0.5, 1.0]
        _check_equals_sklearn(ds, src)
        schemas = {str(pq.read_schema(p).remove_metadata()) for p in ds.paths}
        assert len(schemas) == 1


def test_comments_blank_lines_qid_and_whitespace(tmp_path):
    src = tmp_path / "odd.txt"
    src.write_bytes(b"# header comment\n+1 1:0.5 3:2 # trailing\n\n-1\tqid:7 2:1\r\n"
                    b"  +1   4:1e-3  \n-1 1:2")
    ds = convert(src, tmp_path / "o", dense=True)
    X, y = ds.to_arrays()
    np.testing.assert_array_equal(y, [1, -1, 1, -1])
    # Counting rows for partitions=N skips the comment and blank lines too.
    assert convert(src, tmp_path / "p", partitions=2).partition_rows == [2, 2]
    np.testing.assert_allclose(X, [[0.5, 0, 2, 0], [0, 1, 0, 0], [0, 0, 0, 1e-3],
                                   [2, 0, 0, 0]], rtol=1e-6)


def test_n_features_smaller_than_data_is_an_error(tmp_path):
    src = tmp_path / "w.svm"
    src.write_text("1 1:1\n-1 2:1 7:3\n")
    with pytest.raises(SchemaError, match=r"w.svm:2: feature index 7 .*n_features=5"):
        convert(src, tmp_path / "o", n_features=5)
    assert not (tmp_path / "o").exists()


def test_csv_with_header_and_label_by_name_or_index(tmp_path, monkeypatch):
    monkeypatch.setattr(textio, "CHUNK_BYTES", 200)
    X, y = make_arrays("clusters3", 500, seed=1)
    rows = [f"{a:.6g},{yy},{b:.6g},{c:.6g}" for (a, b, c), yy in zip(X, y, strict=True)]
    src = tmp_path / "t.csv"
    src.write_text("x1,cls,x2,x3\n" + "\n".join(rows) + "\n")
    ds = convert(src, tmp_path / "by_name", label_column="cls", rows_per_partition=120)
    assert (ds.n_rows, ds.n_features, ds.n_partitions, ds.is_sparse) == (500, 3, 5, False)
    Xo, yo = ds.to_arrays()
    np.testing.assert_allclose(Xo, X, rtol=1e-5)
    np.testing.assert_array_equal(yo, y)
    assert ds.meta["feature_names"] == ["x1", "x2", "x3"]
    by_index = convert(src, tmp_path / "by_index", label_column=1, dense=False)
    assert by_index.is_sparse
    np.testing.assert_allclose(by_index.to_arrays()[0].toarray(), X, rtol=1e-5)
    # No header, label last, tab separated (.tsv).
    tsv = tmp_path / "t.tsv"
    tsv.write_text("\n".join(f"{a}\t{b}\t{c}\t{yy}" for (a, b, c), yy
                             in zip(X[:50], y[:50], strict=True)) + "\n")
    ds2 = convert(tsv, tmp_path / "tsv", label_column=-1)
    np.testing.assert_array_equal(ds2.to_arrays()[1], y[:50])


def test_csv_text_labels_kept(tmp_path):
    src = tmp_path / "iris.csv"
    src.write_text("a,b,species\n1,2,setosa\n3,4,virginica\n5,6,setosa\n")
    # "species" is not a known label name, so the first column is the label by default
    # and "species" a (non-numeric) feature.
    with pytest.raises(DataFormatError, match=r"iris.csv:2: feature column 'species'"):
        convert(src, tmp_path / "o")
    ds = convert(src, tmp_path / "o2", label_column="species")
    assert ds.classes.tolist() == ["setosa", "virginica"]
    np.testing.assert_array_equal(ds.encode_labels(ds.to_arrays()[1]), [-1.0, 1.0, -1.0])


def test_parquet_user_table_repartitioned(tmp_path):
    d = tmp_path / "own"
    d.mkdir()
    rng = np.random.default_rng(0)
    for k in range(3):
        pq.write_table(pa.table({"a": rng.standard_normal(100), "b": rng.integers(0, 5, 100),
                                 "target": rng.choice([0, 1], 100)}), d / f"{k}.parquet")
    ds = convert(d, tmp_path / "o", label_column="target", partitions=2)
    assert ds.n_partitions == 2 and ds.n_rows == 300 and ds.n_features == 2
    src = Dataset.open(d, label_column="target")
    np.testing.assert_array_equal(ds.to_arrays()[0], src.to_arrays()[0])
    sparse = convert(d, tmp_path / "s", label_column="target", dense=False)
    assert sparse.is_sparse and sparse.n_features == 2


def test_arrays_tuple(tmp_path):
    X = np.eye(4)
    ds = convert((X, [0, 1, 0, 1]), tmp_path / "o", dense=False)
    assert ds.is_sparse and ds.n_features == 4


def test_the_package_convert_stays_the_function_after_its_module_is_imported():
    import importlib

    import randsvm_dist.data as data

    importlib.import_module("randsvm_dist.data.convert")
    from randsvm_dist.data import convert

    assert callable(convert) and convert is data.convert
