"""The guide's steps on the command line: `data scale`, `grid`, `train --scale`, `evaluate`."""

from __future__ import annotations

import json

import numpy as np

from randsvm_dist.cli import main
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.preprocessing import FeatureScaler


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
