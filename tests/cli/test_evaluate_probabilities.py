"""``evaluate`` of classifiers with probabilities (issue 20): log loss and Brier score as
scikit-learn computes them, and the full multi-class confusion matrix, all computed on the
workers; through the Python API, the CLI function and the ``randsvm-dist`` console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import brier_score_loss, confusion_matrix, log_loss

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.distributed.predict import evaluate_dataset, probability_metrics
from randsvm_dist.estimators import RandSVMClassifier


@pytest.fixture(scope="module")
def waveform(tmp_path_factory):
    """3-class waveform: training arrays and a 3-partition Parquet test set (its arrays)."""
    X, y = make_arrays("waveform", 1500, seed=2)
    Xt, yt = make_arrays("waveform", 900, seed=9)
    root = tmp_path_factory.mktemp("waveform")
    write_arrays(Xt, yt, root / "test", partitions=3)
    return X, y, Xt, yt, root / "test"


@pytest.fixture(scope="module")
def multi_model(dask_client, waveform):
    X, y, *_ = waveform
    return RandSVMClassifier(C=1.0, probability=True, client=dask_client,
                             random_state=0).fit(X, y)


def _sklearn_figures(est, Xt, yt) -> dict:
    P = est.predict_proba(Xt)
    brier = (brier_score_loss(yt, P[:, 1], pos_label=est.classes_[1]) if P.shape[1] == 2
             else brier_score_loss(yt, P, labels=est.classes_))
    return {"log_loss": log_loss(yt, P, labels=est.classes_), "brier_score": brier,
            "confusion_matrix": confusion_matrix(yt, est.predict(Xt),
                                                 labels=est.classes_).tolist()}


def test_multiclass_log_loss_brier_and_confusion_are_sklearns(dask_client, waveform,
                                                              multi_model):
    *_, Xt, yt, path = waveform
    got = multi_model.evaluate(str(path), client=dask_client)
    ref = _sklearn_figures(multi_model, Xt, yt)
    assert got["log_loss"] == pytest.approx(ref["log_loss"], rel=1e-9)
    assert got["brier_score"] == pytest.approx(ref["brier_score"], rel=1e-9)
    assert got["confusion_matrix"] == ref["confusion_matrix"]  # the full 3 x 3 matrix
    assert np.asarray(got["confusion_matrix"]).shape == (3, 3)
    assert got["rows"] == len(yt) and got["classes"] == [0, 1, 2]
    # sane for a calibrated model (waveform is ~86% separable): better than the prior
    assert got["log_loss"] < np.log(3) and got["brier_score"] < 2 / 3


def test_binary_brier_is_the_positive_class_error(dask_client, tmp_path):
    X, y = make_arrays("twonorm", 1200, seed=4)
    Xt, yt = make_arrays("twonorm", 600, seed=5)
    write_arrays(Xt, yt, tmp_path / "test", partitions=2)
    est = RandSVMClassifier(C=1.0, gamma=0.05, probability=True, client=dask_client,
                            random_state=0).fit(X, y)
    got = evaluate_dataset(est, str(tmp_path / "test"), client=dask_client)
    ref = _sklearn_figures(est, Xt, yt)
    assert got["log_loss"] == pytest.approx(ref["log_loss"], rel=1e-9)
    assert got["brier_score"] == pytest.approx(ref["brier_score"], rel=1e-9)
    assert got["confusion_matrix"] == ref["confusion_matrix"]


def test_no_probabilities_no_probability_figures(dask_client, waveform):
    X, y, _, yt, path = waveform
    est = RandSVMClassifier(C=1.0, client=dask_client, random_state=0).fit(X, y)
    got = est.evaluate(str(path), client=dask_client)
    assert "log_loss" not in got and "brier_score" not in got
    assert np.asarray(got["confusion_matrix"]).shape == (3, 3)
    assert got["rows"] == len(yt)


def test_probability_metrics_clip_like_sklearn():
    """A probability 0 for the true class costs -log(eps), as scikit-learn's log_loss."""
    P = np.array([[1.0, 0.0], [0.3, 0.7], [0.0, 1.0]])
    t = np.array([1, 1, 0])
    eps = np.finfo(np.float64).eps
    ll = -np.log(np.clip(P[np.arange(3), t], eps, 1 - eps)).sum()
    E = P.copy()
    E[np.arange(3), t] -= 1
    cm = np.zeros((2, 2), np.int64)
    np.add.at(cm, (t, np.argmax(P, 1)), 1)
    got = probability_metrics([(cm, ll, float((E * E).sum()))])
    assert got["log_loss"] == pytest.approx(log_loss(t, P), rel=1e-12)
    assert got["brier_score"] == pytest.approx(brier_score_loss(t, P[:, 1]), rel=1e-12)


def test_stock_libsvm_b1_model_evaluates_to_its_own_probabilities(dask_client, waveform,
                                                                   tmp_path):
    """A model trained by stock LIBSVM with -b 1: the figures are those of its own
    ``svm_predict(..., '-b 1')`` probabilities."""
    from libsvm.svmutil import svm_predict, svm_save_model, svm_train

    from randsvm_dist.app.model_io import load_model

    X, y, Xt, yt, path = waveform
    m = svm_train(list(y[:600].astype(float)), sp.csr_matrix(X[:600].astype(np.float64)),
                  "-s 0 -t 2 -g 0.05 -c 1 -b 1 -q")
    svm_save_model(str(tmp_path / "stock.model"), m)
    _, _, probs = svm_predict([], sp.csr_matrix(Xt.astype(np.float64)), m, "-b 1 -q")
    order = np.argsort(m.get_labels())  # LIBSVM lists probabilities in its label order
    P = np.asarray(probs)[:, order]
    got = evaluate_dataset(load_model(str(tmp_path / "stock.model")), str(path),
                           client=dask_client)
    assert got["log_loss"] == pytest.approx(log_loss(yt, P, labels=[0, 1, 2]), rel=1e-5)
    assert got["brier_score"] == pytest.approx(
        brier_score_loss(yt, P, labels=[0, 1, 2]), rel=1e-5)


def test_console_script_evaluate_json_and_text(dask_client, waveform, multi_model,
                                               tmp_path):
    """``randsvm-dist evaluate MODEL DATA --json`` in its own process, against the same
    cluster: the same figures as the API; the text form prints them and every class."""
    *_, path = waveform
    model = tmp_path / "wave.model"
    multi_model.save(model)
    exe = Path(sys.executable).with_name("randsvm-dist")
    cmd = [str(exe) if exe.exists() else "randsvm-dist", "evaluate", str(model), str(path),
           "--scheduler", dask_client.scheduler.address]
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    api = multi_model.evaluate(str(path), client=dask_client)
    for key in ("log_loss", "brier_score"):
        assert got[key] == pytest.approx(api[key], rel=1e-9)
    assert got["confusion_matrix"] == api["confusion_matrix"]
    assert got["n_support"] == len(multi_model.support_)
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert text.returncode == 0, text.stderr
    shown = text.stdout + text.stderr
    assert f"log loss {api['log_loss']:.4f}, Brier score {api['brier_score']:.4f}" in shown
    rows = [line.split() for line in shown.splitlines()
            if line.strip()[:1] in "012" and len(line.split()) == 4]
    assert [[int(v) for v in r[1:]] for r in rows] == api["confusion_matrix"]
