"""``grid`` and ``submit`` with the classifiers of issue 20: multi-class (one-vs-one),
weighted (class weights, a Parquet weight column) and probability models, through the
Python API (``GridSearch``, ``randsvm_dist.jobs``) and the command line's job spec."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from randsvm_dist import jobs
from randsvm_dist.app.grid_search import GridSearch
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import ParameterError

GRID = dict(log2C=(0, 2, 2), log2gamma=(-3, -5, -2), n_folds=3, refine=False,
            random_state=1)


@pytest.fixture(scope="module")
def waveform(tmp_path_factory):
    """3-class waveform as Parquet (train, 2 partitions; test) and as arrays."""
    X, y = make_arrays("waveform", 600, seed=2)
    Xt, yt = make_arrays("waveform", 400, seed=9)
    root = tmp_path_factory.mktemp("wave")
    write_arrays(X, y, root / "train", partitions=2)
    write_arrays(Xt, yt, root / "test", partitions=2)
    return X, y, Xt, yt, root


@pytest.fixture(scope="module")
def weighted(tmp_path_factory):
    """Two classes with a Parquet weight column: the second class weighs 5x."""
    X, y = make_arrays("twonorm", 400, seed=8)
    y = np.where(np.arange(len(y)) % 5 == 0, 1, -1)  # 20% positives, noisy labels
    w = np.where(y > 0, 5.0, 1.0)
    root = tmp_path_factory.mktemp("weighted") / "d"
    root.mkdir()
    for part, rows in enumerate((slice(0, 200), slice(200, 400))):
        cols = {f"f{j}": X[rows, j] for j in range(X.shape[1])}
        pq.write_table(pa.table({**cols, "label": y[rows], "w": w[rows]}),
                       root / f"part-{part}.parquet")
    return X, y, w, root


def test_grid_multiclass_both_solvers_and_a_probability_refit(dask_client, waveform,
                                                              tmp_path):
    X, y, Xt, yt, root = waveform
    lib = GridSearch(**GRID, solver="libsvm", client=dask_client).fit(str(root / "train"))
    rand = GridSearch(**GRID, solver="randsvm", gap_tol=0.0,
                      client=dask_client).fit(str(root / "train"))
    assert lib.classes_.tolist() == [0, 1, 2]
    by = {(p["log2C"], p["log2gamma"]): p["mean_accuracy"] for p in lib.points_}
    for p in rand.points_:  # LIBSVM's own one-vs-one, fold by fold, within a few rows
        assert abs(p["mean_accuracy"] - by[(p["log2C"], p["log2gamma"])]) <= 4 / len(y)
    est = lib.refit(str(root / "train"), model_path=tmp_path / "best.model",
                    probability=True)
    assert est.problems_ == [(0, 1), (0, 2), (1, 2)] and est.C == lib.best_params_["C"]
    P = est.predict_proba(Xt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    back = RandSVMClassifier.load(tmp_path / "best.model")
    np.testing.assert_allclose(back.predict_proba(Xt), P, atol=1e-12)
    assert est.score(Xt, yt) > 0.75


def test_grid_respects_a_weight_column(dask_client, weighted):
    """Weights change the model: every fold must be solved with them (RandSVM's path;
    libsvm-official has no per-row weights), never silently without."""
    X, y, w, root = weighted
    ds = Dataset.open(str(root), weight_column="w")
    grid = dict(GRID, log2C=(0, 0, 1), log2gamma=(-5, -5, -1))
    auto = GridSearch(**grid, client=dask_client).fit(ds)
    forced = GridSearch(**grid, solver="randsvm", client=dask_client).fit(ds)
    plain = GridSearch(**grid, solver="libsvm", client=dask_client).fit(str(root))
    assert auto.points_[0]["solver"] == "randsvm"
    assert auto.points_[0]["fold_accuracy"] == forced.points_[0]["fold_accuracy"]
    assert auto.points_[0]["fold_accuracy"] != plain.points_[0]["fold_accuracy"]
    with pytest.raises(ParameterError, match="weight"):
        GridSearch(**grid, solver="libsvm", client=dask_client).fit(ds)


def test_submitted_train_multiclass_probability_balanced(dask_client, waveform, tmp_path):
    X, y, Xt, yt, root = waveform
    params = {"C": 1.0, "probability": True, "class_weight": "balanced",
              "random_state": 0}
    job = jobs.submit("train", data=str(root / "train"), model=str(tmp_path / "m.model"),
                      params=params, test=str(root / "test"),
                      scheduler=dask_client.scheduler.address, job_dir=str(tmp_path / "jobs"))
    st = jobs.wait(str(tmp_path / "jobs"), job, timeout=300)
    assert st["state"] == "done", jobs.logs(str(tmp_path / "jobs"), job)
    result = jobs.result(str(tmp_path / "jobs"), job)
    got = RandSVMClassifier.load(tmp_path / "m.model")
    local = RandSVMClassifier(**params, client=dask_client).fit(str(root / "train"))
    np.testing.assert_allclose(got.predict_proba(Xt), local.predict_proba(Xt), atol=1e-9)
    assert result["certified"] and len(result["history"]) >= 3
    test = result["test"]
    assert np.asarray(test["confusion_matrix"]).shape == (3, 3)
    assert test["log_loss"] == pytest.approx(local.evaluate(str(root / "test"),
                                                            client=dask_client)["log_loss"])


def test_submitted_train_uses_the_weight_column(dask_client, weighted, tmp_path):
    from randsvm_dist.cli import build_parser
    from randsvm_dist.cli.jobs import job_spec

    X, y, w, root = weighted
    args = build_parser().parse_args(
        ["submit", "train", str(root), "--model", str(tmp_path / "w.model"), "--C", "1",
         "--gamma", "0.05", "--weight-column", "w", "--job-dir", str(tmp_path / "jobs"),
         "--scheduler", dask_client.scheduler.address])
    spec = job_spec(args)
    assert spec["weight_column"] == "w"
    job = jobs.submit("train", scheduler=dask_client.scheduler.address,
                      job_dir=str(tmp_path / "jobs"), **spec)
    st = jobs.wait(str(tmp_path / "jobs"), job, timeout=300)
    assert st["state"] == "done", jobs.logs(str(tmp_path / "jobs"), job)
    got = RandSVMClassifier.load(tmp_path / "w.model")
    ref = RandSVMClassifier(C=1, gamma=0.05, client=dask_client,
                            random_state=got.random_state).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(got.decision_function(X), ref.decision_function(X),
                               atol=2e-3)
    unweighted = RandSVMClassifier(C=1, gamma=0.05, client=dask_client).fit(X, y)
    assert np.abs(got.decision_function(X) - unweighted.decision_function(X)).max() > 0.1
