"""Parquet as pandas, Dask and pyarrow write it, read by `randsvm-dist data info` / `train`:
an index column is never a feature, hive directories and tool files are handled,
non-numeric columns are refused by name, --features / --exclude-columns choose columns."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from randsvm_dist.cli import main
from randsvm_dist.data import Dataset

FEATURES = ["a", "b", "c", "d"]


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    df = pd.DataFrame(X, columns=FEATURES)
    df["label"] = y
    df["day"] = np.arange(n) % 3
    return df


def _info(path, capsys, *extra) -> dict:
    assert main(["data", "info", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _features(path, **kw) -> list[str]:
    return Dataset.open(path, **kw).feature_columns


def test_pandas_index_is_never_a_feature(tmp_path, capsys):
    df = _frame().drop(columns="day").sample(frac=1.0, random_state=0)  # shuffled index
    df.to_parquet(tmp_path / "shuffled.parquet")
    assert "__index_level_0__" in pq.read_schema(tmp_path / "shuffled.parquet").names
    assert _features(tmp_path / "shuffled.parquet") == FEATURES
    assert _info(tmp_path / "shuffled.parquet", capsys)["features"] == 4
    df.reset_index(drop=True).to_parquet(tmp_path / "plain.parquet")  # RangeIndex: no column
    assert _features(tmp_path / "plain.parquet") == FEATURES
    named = df.rename_axis("row_id")
    named.to_parquet(tmp_path / "named.parquet")  # a named index keeps its name
    assert "row_id" in pq.read_schema(tmp_path / "named.parquet").names
    assert _features(tmp_path / "named.parquet") == FEATURES
    # named explicitly, an index column may still be a feature
    assert _features(tmp_path / "named.parquet",
                     feature_columns=["a", "row_id"]) == ["a", "row_id"]


def test_dask_index_is_never_a_feature(tmp_path, capsys):
    dd = pytest.importorskip("dask.dataframe")
    df = _frame().drop(columns="day")
    dd.from_pandas(df, npartitions=3).to_parquet(tmp_path / "dask")
    names = pq.read_schema(next((tmp_path / "dask").glob("*.parquet"))).names
    assert "__null_dask_index__" in names
    info = _info(tmp_path / "dask", capsys)
    assert info["features"] == 4 and info["partitions"] == 3 and info["rows"] == 400


def test_hive_partitioned_directory(tmp_path, capsys):
    table = pa.Table.from_pandas(_frame(), preserve_index=False)
    pq.write_to_dataset(table, tmp_path / "hive", partition_cols=["day"])
    assert sorted(p.name for p in (tmp_path / "hive").iterdir()) == ["day=0", "day=1",
                                                                     "day=2"]
    info = _info(tmp_path / "hive", capsys)
    assert info["rows"] == 400 and info["features"] == 4 and info["partitions"] >= 3
    assert _features(tmp_path / "hive") == FEATURES


def test_spark_style_files_are_not_data(tmp_path, capsys):
    out = tmp_path / "spark"
    out.mkdir()
    df = _frame().drop(columns="day")
    for i, part in enumerate((df.iloc[:200], df.iloc[200:])):
        name = f"part-0000{i}-1234.c000.snappy.parquet"
        part.to_parquet(out / name, index=False)
        (out / f".{name}.crc").write_bytes(b"crc")
    (out / "_SUCCESS").write_bytes(b"")
    pq.write_metadata(pq.read_schema(out / "part-00000-1234.c000.snappy.parquet"),
                      out / "_common_metadata")
    info = _info(out, capsys)
    assert info["rows"] == 400 and info["partitions"] == 2 and info["features"] == 4


def test_non_numeric_columns_refused_by_name(tmp_path):
    from randsvm_dist.exceptions import SchemaError

    df = _frame().drop(columns="day")
    df["city"] = "x"
    df["when"] = pd.Timestamp("2026-01-01")
    df.to_parquet(tmp_path / "mixed.parquet", index=False)
    with pytest.raises(SchemaError, match="'city'.*'when'"):
        Dataset.open(tmp_path / "mixed.parquet")
    assert _features(tmp_path / "mixed.parquet", feature_columns=FEATURES) == FEATURES


def test_features_and_exclude_columns_on_the_command_line(tmp_path, capsys):
    df = _frame()
    df["city"] = "x"
    df.to_parquet(tmp_path / "d.parquet", index=False)
    assert main(["data", "info", str(tmp_path / "d.parquet")]) == 2  # 'city': not numbers
    assert "'city'" in capsys.readouterr().err
    info = _info(tmp_path / "d.parquet", capsys, "--exclude-columns", "city,day")
    assert info["features"] == 4
    info = _info(tmp_path / "d.parquet", capsys, "--features", "a,b")
    assert info["features"] == 2


def test_train_reads_dask_written_features(dask_client, tmp_path, capsys):
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(600).drop(columns="day")
    dd.from_pandas(df, npartitions=2).to_parquet(tmp_path / "dask")
    report = tmp_path / "r.json"
    assert main(["train", str(tmp_path / "dask"), "--kernel", "linear",
                 "--model", str(tmp_path / "m"), "--scheduler",
                 dask_client.scheduler.address, "--report", str(report),
                 "--exclude-columns", "d"]) == 0
    text = (tmp_path / "m").read_text().split("\nSV", 1)[1].split("\n", 1)[1]  # after SV
    indices = {int(tok.split(":")[0]) for line in text.splitlines()
               for tok in line.split()[1:] if ":" in tok and tok.split(":")[0].isdigit()}
    assert indices <= {1, 2, 3}  # a, b, c: neither d nor the index


def test_one_file_of_several_row_groups_is_several_partitions(tmp_path, monkeypatch, capsys):
    from randsvm_dist.data import parquet_layout

    df = _frame(1000).drop(columns="day")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "big.parquet",
                   row_group_size=100)
    monkeypatch.setattr(parquet_layout, "SPLIT_ROWS", 250)
    ds = Dataset.open(tmp_path / "big.parquet")
    assert ds.partition_rows == [300, 300, 400]  # whole row groups; the short tail joins
    assert ds.row_groups == [(0, 1, 2), (3, 4, 5), (6, 7, 8, 9)]
    X = np.concatenate([ds.read_partition(i)[0] for i in range(ds.n_partitions)])
    np.testing.assert_allclose(X, df[FEATURES].to_numpy(np.float32))
    reads = []
    real = pq.ParquetFile.iter_batches
    monkeypatch.setattr(pq.ParquetFile, "iter_batches",
                        lambda self, **kw: reads.append(list(kw["row_groups"]))
                        or real(self, **kw))
    ds.read_partition(1)
    assert reads == [[3, 4, 5]]  # only its own row groups are read
    info = _info(tmp_path / "big.parquet", capsys)
    assert info["partitions"] == 3 and info["partition_rows"] == [300, 300, 400]
