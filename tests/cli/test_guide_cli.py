"""The guide's steps on the command line: `data scale`, `grid`, `train --scale`, `evaluate`."""

from __future__ import annotations

import json

import numpy as np

from randsvm_dist.cli import main
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.distributed.scaling import FeatureScaler


def test_scale_grid_train_evaluate(dask_client, tmp_path, capsys):
    X, y = make_arrays("twonorm", 400, seed=1)
    Xt, yt = make_arrays("twonorm", 200, seed=2)
    spread = np.logspace(0, 4, X.shape[1]).astype(np.float32)
    write_arrays(X * spread + 50, y, tmp_path / "train", partitions=3)
    write_arrays(Xt * spread + 50, yt, tmp_path / "test", partitions=2)
    addr = ["--scheduler", dask_client.scheduler.address]
    # svm-scale's two steps: learn on train (-s), apply to test (-r)
    assert main(["data", "scale", str(tmp_path / "train"), str(tmp_path / "train.s"),
                 "--range", str(tmp_path / "range"), *addr]) == 0
    assert main(["data", "scale", str(tmp_path / "test"), str(tmp_path / "test.s"),
                 "--restore", str(tmp_path / "range"), *addr]) == 0
    scaler = FeatureScaler().fit(X * spread + 50)
    Xs, _ = Dataset.open(tmp_path / "test.s").to_arrays()
    np.testing.assert_allclose(Xs, scaler.transform(Xt * spread + 50), atol=1e-6)
    capsys.readouterr()
    assert main(["grid", str(tmp_path / "train.s"), "--C", "2^-1..2^3", "--gamma",
                 "2^-1..2^-5", "--folds", "3", "--no-refine", "--out", str(tmp_path / "g"),
                 "--model", str(tmp_path / "best.model"), "--json", *addr]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["points"] == 9 and res["cv_accuracy"] > 0.9 and res["solvers"] == ["libsvm"]
    assert (tmp_path / "g" / "grid.png").exists()
    assert (tmp_path / "g" / "grid.csv").read_text().count("\n") == 10
    assert main(["evaluate", str(tmp_path / "best.model"), str(tmp_path / "test.s"), "--json",
                 *addr]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.9
    # train --scale keeps the scaling in the model: evaluate on the unscaled test set
    assert main(["train", str(tmp_path / "train"), "--scale", "minmax", "--C",
                 str(res["best"]["C"]), "--gamma", str(res["best"]["gamma"]), "--k", "none",
                 "--model", str(tmp_path / "m.model"), *addr]) == 0
    assert (tmp_path / "m.model.range").exists()
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "m.model"), str(tmp_path / "test"), "--json",
                 *addr]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.9


def test_grid_of_large_folds_only_in_a_fresh_process(dask_client, tmp_path):
    """Every point on the RandSVM path (no LIBSVM task at all), from a process with no
    default Dask client: the search finishes and records every point."""
    import csv
    import subprocess
    import sys

    X, y = make_arrays("twonorm", 400, seed=1)
    write_arrays(X, y, tmp_path / "train", partitions=2)
    proc = subprocess.run(
        [sys.executable, "-m", "randsvm_dist.cli", "grid", str(tmp_path / "train"), "--C",
         "2^0..2^1:1", "--gamma", "2^-3..2^-3", "--folds", "2", "--no-refine",
         "--libsvm-max-rows", "10", "--out", str(tmp_path / "grid"), "--scheduler",
         dask_client.scheduler.address, "--json"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(tmp_path / "grid" / "folds.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {r["solver"] for r in rows} == {"randsvm"}
