"""One-hot encoding where the user asks (``one_hot_columns=`` / ``--one-hot``, categories
fixed at fit and saved in the model); Parquet written by polars, DuckDB and Spark read with the
right features; ``train --test`` reads the test set with the training run's features."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.cli import main
from randsvm_dist.data import Dataset
from randsvm_dist.exceptions import SchemaError


def _frame(n: int = 600, seed: int = 0, colors=("red", "green", "blue")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    color = rng.choice(list(colors), n)
    a = rng.normal(size=n)
    shift = {"red": 1.5, "green": -1.5, "blue": 0.0}
    y = np.where(a + np.array([shift.get(c, 0.0) for c in color]) > 0, 1, -1)
    df = pd.DataFrame({"a": a, "color": color, "label": y})
    df["size"] = pd.Categorical(rng.choice(["S", "M", "L"], n))
    df["when"] = pd.Timestamp("2026-01-01")
    df["tags"] = [[1, 2]] * n
    return df


def _info(path, capsys, *extra) -> dict:
    assert main(["data", "info", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_hot_columns_expand_with_categories_of_the_data(tmp_path):
    df = _frame()
    df.to_parquet(tmp_path / "d.parquet", index=False)
    with pytest.raises(SchemaError, match="'color'.*--one-hot color,size.*'when'.*'tags'"):
        Dataset.open(tmp_path / "d.parquet")
    ds = Dataset.open(tmp_path / "d.parquet", feature_columns=["a", "color", "size"],
                      one_hot_columns=["color", "size"])
    assert ds.n_features == 1 + 3 + 3
    assert ds.feature_names == ["a", "color=blue", "color=green", "color=red",
                                "size=L", "size=M", "size=S"]
    X, _ = ds.read_partition(0)
    assert X.shape == (600, 7)
    np.testing.assert_allclose(X[:, 0], df["a"].to_numpy(np.float32))
    np.testing.assert_array_equal(X[:, 1:4].argmax(1),
                                  pd.Categorical(df["color"], ["blue", "green", "red"]).codes)
    assert (X[:, 1:4].sum(1) == 1).all() and (X[:, 4:].sum(1) == 1).all()
    for col in ("when", "tags"):  # timestamps and nested columns: refused by name
        with pytest.raises(SchemaError, match=f"'{col}'"):
            Dataset.open(tmp_path / "d.parquet", feature_columns=["a", col],
                         one_hot_columns=[col])


def test_categories_fixed_at_fit_saved_and_unseen_values_refused(tmp_path):
    _frame().drop(columns=["when", "tags"]).to_parquet(tmp_path / "train.parquet",
                                                       index=False)
    _frame(200, seed=1, colors=("red", "blue")).drop(columns=["when", "tags"]).to_parquet(
        tmp_path / "test.parquet", index=False)  # a subset of the categories
    _frame(50, seed=2, colors=("red", "purple")).drop(columns=["when", "tags"]).to_parquet(
        tmp_path / "unseen.parquet", index=False)
    est = RandSVMClassifier(kernel="linear", random_state=0).fit(
        str(tmp_path / "train.parquet"),
        dataset_kwargs={"one_hot_columns": ["color", "size"]})
    assert est.n_features_in_ == 7 and est.feature_columns_ == ["a", "color", "size"]
    assert est.one_hot_categories_ == {"color": ["blue", "green", "red"],
                                       "size": ["L", "M", "S"]}
    est.save(tmp_path / "m")
    back = RandSVMClassifier.load(tmp_path / "m")
    assert back.one_hot_categories_ == est.one_hot_categories_
    result = back.evaluate(str(tmp_path / "test.parquet"), client=None)
    assert result["accuracy"] > 0.95  # the same 7 columns, though 'green' is absent
    with pytest.raises(SchemaError, match="one-hot column 'color' holds 'purple'"):
        back.evaluate(str(tmp_path / "unseen.parquet"))


def test_one_hot_on_the_command_line(dask_client, tmp_path, capsys):
    _frame().to_parquet(tmp_path / "train.parquet", index=False)
    _frame(200, seed=1).to_parquet(tmp_path / "test.parquet", index=False)
    info = _info(tmp_path / "train.parquet", capsys, "--exclude-columns", "when,tags",
                 "--one-hot", "color,size")
    assert info["features"] == 7 and info["feature_names"][1] == "color=blue"
    addr = dask_client.scheduler.address
    report = tmp_path / "r.json"
    assert main(["train", str(tmp_path / "train.parquet"), "--kernel", "linear",
                 "--exclude-columns", "when,tags", "--one-hot", "color,size",
                 "--model", str(tmp_path / "m"), "--scheduler", addr,
                 "--test", str(tmp_path / "test.parquet"), "--report", str(report)]) == 0
    assert json.loads(report.read_text())["test"]["accuracy"] > 0.95
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "m"), str(tmp_path / "test.parquet"), "--json",
                 "--scheduler", addr]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.95
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "test.parquet"),
                 str(tmp_path / "pred"), "--scheduler", addr]) == 0
    assert pq.read_table(tmp_path / "pred").num_rows == 200


def test_train_test_reads_the_training_runs_features(dask_client, tmp_path):
    rng = np.random.default_rng(0)

    def frame(n, order):
        X = rng.normal(size=(n, 3))
        df = pd.DataFrame(X, columns=["a", "b", "noise"])
        df["label"] = np.where(X[:, 0] - X[:, 1] > 0, 1, -1)
        return df[order]

    frame(600, ["a", "b", "noise", "label"]).to_parquet(tmp_path / "train.parquet",
                                                        index=False)
    # the test set's own default features would be noise, b, a: 3 columns, another order
    frame(300, ["noise", "b", "a", "label"]).to_parquet(tmp_path / "test.parquet",
                                                        index=False)
    report = tmp_path / "r.json"
    assert main(["train", str(tmp_path / "train.parquet"), "--kernel", "linear",
                 "--features", "a,b", "--model", str(tmp_path / "m"),
                 "--scheduler", dask_client.scheduler.address,
                 "--test", str(tmp_path / "test.parquet"), "--report", str(report)]) == 0
    assert json.loads(report.read_text())["test"]["accuracy"] > 0.97


def _tool_frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["label"] = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    df["day"] = np.arange(n) % 3
    return df


def test_polars_written_parquet(dask_client, tmp_path, capsys):
    pl = pytest.importorskip("polars")
    df = pl.from_pandas(_tool_frame())
    df.drop("day").write_parquet(tmp_path / "one.parquet")
    assert Dataset.open(tmp_path / "one.parquet").feature_columns == ["a", "b", "c"]
    df.write_parquet(tmp_path / "hive", partition_by="day")  # day=0/, day=1/, ...
    assert any(p.name.startswith("day=") for p in (tmp_path / "hive").iterdir())
    info = _info(tmp_path / "hive", capsys)
    assert info["feature_names"] == ["a", "b", "c"] and info["rows"] == 400
    (tmp_path / "parts").mkdir()
    for i, part in enumerate(df.drop("day").partition_by("label")):
        part.write_parquet(tmp_path / "parts" / f"part-{i}.parquet")
    assert _info(tmp_path / "parts", capsys)["feature_names"] == ["a", "b", "c"]
    assert main(["train", str(tmp_path / "hive"), "--kernel", "linear", "--model",
                 str(tmp_path / "m"), "--scheduler", dask_client.scheduler.address]) == 0
    assert RandSVMClassifier.load(tmp_path / "m").feature_columns_ == ["a", "b", "c"]


def test_duckdb_written_parquet(dask_client, tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    frame = _tool_frame()  # noqa: F841 (DuckDB reads the local DataFrame by its name)
    con = duckdb.connect()
    con.execute(f"COPY (SELECT a, b, c, label FROM frame) TO '{tmp_path / 'one.parquet'}' "
                "(FORMAT PARQUET)")
    con.execute(f"COPY frame TO '{tmp_path / 'hive'}' (FORMAT PARQUET, PARTITION_BY (day))")
    assert Dataset.open(tmp_path / "one.parquet").feature_columns == ["a", "b", "c"]
    info = _info(tmp_path / "hive", capsys)
    assert info["feature_names"] == ["a", "b", "c"] and info["rows"] == 400
    assert main(["train", str(tmp_path / "hive"), "--kernel", "linear", "--model",
                 str(tmp_path / "m"), "--scheduler", dask_client.scheduler.address]) == 0
    X = np.concatenate([Dataset.open(tmp_path / "hive").read_partition(i)[0]
                        for i in range(Dataset.open(tmp_path / "hive").n_partitions)])
    assert X.shape == (400, 3)
    assert pa.types.is_integer(pq.read_schema(tmp_path / "one.parquet").field("label").type)


def test_spark_written_parquet(dask_client, tmp_path, capsys):
    """Parquet as Apache Spark writes it, by a real local Spark session (a JVM on
    loopback): part-*.parquet files beside _SUCCESS and .crc files, and partitionBy's hive
    directories; read with the frame's features, trained on from the command line."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (the dev extra has it)")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime: java is not on PATH")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("randsvm-dist test")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        df = spark.createDataFrame(_tool_frame())
        df.drop("day").repartition(3).write.parquet(str(tmp_path / "spark"))
        df.write.partitionBy("day").parquet(str(tmp_path / "hive"))
    finally:
        spark.stop()
    names = [p.name for p in (tmp_path / "spark").iterdir()]
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names), names
    assert sum(n.startswith("part-") and n.endswith(".parquet") for n in names) == 3, names
    info = _info(tmp_path / "spark", capsys)
    assert info["feature_names"] == ["a", "b", "c"] and info["rows"] == 400
    info = _info(tmp_path / "hive", capsys)
    assert info["feature_names"] == ["a", "b", "c"] and info["rows"] == 400
    assert main(["train", str(tmp_path / "spark"), "--kernel", "linear", "--model",
                 str(tmp_path / "m"), "--scheduler", dask_client.scheduler.address]) == 0
    assert RandSVMClassifier.load(tmp_path / "m").feature_columns_ == ["a", "b", "c"]
