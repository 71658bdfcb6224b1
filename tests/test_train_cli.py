"""`randsvm-dist train | evaluate | predict` end to end against a running cluster."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from randsvm_dist.cli import main
from randsvm_dist.data import make


def test_train_evaluate_predict(dask_client, tmp_path, capsys):
    make("checkerboard", tmp_path / "train", rows=3000, partitions=3, seed=1)
    make("checkerboard", tmp_path / "test", rows=1000, partitions=2, seed=2)
    addr = dask_client.scheduler.address
    model = tmp_path / "cb.model"
    assert main(["train", str(tmp_path / "train"), "--C", "10", "--gamma", "1",
                 "--k", "3000", "--sample-size", "1000", "--model", str(model),
                 "--scheduler", addr, "--test", str(tmp_path / "test"),
                 "--report", str(tmp_path / "report.json")]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["test"]["accuracy"] > 0.95
    assert report["history"] and report["n_support"] > 0
    capsys.readouterr()
    assert main(["evaluate", str(model), str(tmp_path / "test"), "--json",
                 "--scheduler", addr]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["accuracy"] == report["test"]["accuracy"]
    assert main(["predict", str(model), str(tmp_path / "test"), str(tmp_path / "pred"),
                 "--scheduler", addr]) == 0
    assert pq.read_table(tmp_path / "pred").num_rows == 1000


def test_bad_kernel_is_a_usage_error(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["train", str(tmp_path), "--kernel", "cubic", "--model", "m"])
    assert "invalid choice" in capsys.readouterr().err


def test_missing_data_is_a_clear_error(tmp_path, capsys, dask_client):
    code = main(["train", str(tmp_path / "nowhere"), "--model", str(tmp_path / "m"),
                 "--scheduler", dask_client.scheduler.address])
    assert code == 2
    assert "nowhere" in capsys.readouterr().err
