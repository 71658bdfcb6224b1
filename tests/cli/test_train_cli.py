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
                 "--report", str(tmp_path / "report.json"), "--json"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["test"]["accuracy"] > 0.95
    assert report["history"] and report["n_support"] > 0
    printed = capsys.readouterr()
    assert json.loads(printed.out) == report  # --json: stdout is the JSON, nothing else
    assert "trained in" in printed.err
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


def test_report_draws_the_history(dask_client, tmp_path, capsys):
    import matplotlib.image as mpimg
    import numpy as np

    make("twonorm", tmp_path / "train", rows=2000, partitions=2, seed=1)
    run = tmp_path / "run.json"
    assert main(["train", str(tmp_path / "train"), "--kernel", "linear", "--k", "300",
                 "--sample-size", "200", "--max-iter", "3", "--model", str(tmp_path / "m"),
                 "--scheduler", dask_client.scheduler.address, "--report", str(run)]) == 0
    history = json.loads(run.read_text())["history"]
    capsys.readouterr()
    assert main(["report", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["png"] == str(run.with_suffix(".png"))
    assert out["iterations"] == len(history)
    assert out["final_n_support"] == history[-1]["n_support"]
    img = mpimg.imread(out["png"])
    assert img.shape[0] >= 600 and img.shape[1] >= 900
    assert np.unique(img.reshape(-1, img.shape[-1]), axis=0).shape[0] > 20  # not blank
    # a file without a history is a clear error
    (tmp_path / "other.json").write_text('{"accuracy": 0.9}')
    assert main(["report", str(tmp_path / "other.json")]) == 2
    assert "has no training history" in capsys.readouterr().err


def test_train_defaults_are_the_estimators_certified_defaults():
    """`train` with no options fits what RandSVMClassifier() fits: certified, no k bound."""
    from randsvm_dist.cli import build_parser
    from randsvm_dist.cli.train import estimator_params
    from randsvm_dist.estimators import RandSVMClassifier

    parse = build_parser().parse_args
    defaults = RandSVMClassifier().get_params()
    params = estimator_params(parse(["train", "data", "--model", "m.model"]))
    # the command line is reproducible (--random-state 0); all else is the estimator's own
    assert set(params) == {"random_state"}
    fit = RandSVMClassifier(**params).get_params()
    assert {k: v for k, v in fit.items() if k != "random_state"} == \
        {k: v for k, v in defaults.items() if k != "random_state"}
    # the options are the estimator's parameters, with its defaults in their help
    given = estimator_params(parse(["train", "data", "--model", "m", "--cache", "false",
                                    "--k", "none", "--gap-tol", "0.01", "--probability",
                                    "--multi-class", "ovr"]))
    assert (given["cache"], given["gap_tol"], given["probability"],
            given["multi_class"]) == (False, 0.01, True, "ovr")
    assert given.get("k") is None
