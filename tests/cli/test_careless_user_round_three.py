"""Issue 40 (the third careless-user round), items about a model meeting data and inputs
checked before work, driven as a user does: the ``randsvm-dist`` console script in its own
process (rc, one stderr line, no traceback), against the test cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.exceptions import ParameterError, SchemaError


def _run(*args, scheduler=None, timeout=600):
    exe = Path(sys.executable).with_name("randsvm-dist")
    cmd = [str(exe) if exe.exists() else "randsvm-dist", *map(str, args)]
    if scheduler is not None:
        cmd += ["--scheduler", scheduler]
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _one_error_line(out) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in out.stderr, out.stderr
    errors = [ln for ln in lines if ln.startswith("randsvm-dist: error:")]
    assert len(errors) == 1, out.stderr
    return errors[0]


@pytest.fixture(scope="module")
def twonorm(tmp_path_factory):
    root = tmp_path_factory.mktemp("twonorm")
    X, y = make_arrays("twonorm", 400, seed=3)
    X = X[:, :2]
    write_arrays(X, y, root / "train", partitions=2)
    write_arrays(np.hstack([X, X[:, :1]]), y, root / "three", partitions=2)
    write_arrays(X, np.where(y == y.max(), "pos", "neg"), root / "words", partitions=2)
    return root, X, y


def test_stock_model_meets_wider_data_by_libsvms_rule(dask_client, tmp_path):
    """Item 3: a stock LIBSVM model whose support vectors use features up to 3 evaluated
    on data of 4 features: accepted, said once, and the accuracy is stock svm-predict's
    (the 4th feature is a zero in every support vector)."""
    from libsvm.svmutil import svm_predict, svm_save_model, svm_train

    X, y = make_arrays("twonorm", 600, seed=5)
    X = X[:, :4].astype(np.float64)
    train = X[:300].copy()
    train[:, 3] = 0.0  # the training rows never use feature 4
    m = svm_train(list(y[:300].astype(float)), sp.csr_matrix(train), "-s 0 -t 2 -g 0.5 -q")
    svm_save_model(str(tmp_path / "stock.model"), m)
    assert max(max(sv) for sv in m.get_SV()) == 3  # the model's highest index (1-based)
    _, (ref_acc, *_), _ = svm_predict(list(y[300:].astype(float)), sp.csr_matrix(X[300:]), m,
                                      "-q")
    write_arrays(X[300:], y[300:], tmp_path / "test", partitions=2)
    out = _run("evaluate", tmp_path / "stock.model", tmp_path / "test", "--json",
               scheduler=dask_client.scheduler.address)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["accuracy"] * 100 == pytest.approx(ref_acc, abs=1e-9)
    assert out.stderr.count("beyond the model's highest feature index") == 1, out.stderr
    # the Python API: in-memory prediction takes the wider rows too
    from randsvm_dist.model_files.load import load_model

    est = load_model(str(tmp_path / "stock.model"))
    ref, _, _ = svm_predict([], sp.csr_matrix(X[300:]), m, "-q")
    np.testing.assert_array_equal(est.predict(X[300:]), np.asarray(ref))


def test_label_sets_that_differ_one_line_rc2(dask_client, twonorm, tmp_path):
    """Item 4: a +-1 model on data labelled pos/neg: evaluate and train --test say so in
    one line naming both label sets, rc 2; train --test before training (no model)."""
    root, X, y = twonorm
    from randsvm_dist.estimators import RandSVMClassifier

    RandSVMClassifier(gamma=0.5, client=dask_client, random_state=0).fit(X, y).save(
        tmp_path / "pm.model")
    out = _run("evaluate", tmp_path / "pm.model", root / "words",
               scheduler=dask_client.scheduler.address)
    assert out.returncode == 2, out.stderr
    line = _one_error_line(out)
    assert "'neg', 'pos'" in line and "[-1, 1]" in line, line
    out = _run("train", root / "train", "--model", tmp_path / "t.model", "--test",
               root / "words", scheduler=dask_client.scheduler.address)
    assert out.returncode == 2, out.stderr
    line = _one_error_line(out)
    assert "'neg', 'pos'" in line and "[-1, 1]" in line, line
    assert not (tmp_path / "t.model").exists()  # refused before training


def test_train_test_feature_count_checked_before_training(dask_client, twonorm, tmp_path):
    """Item 5: --test of 3 features on a 2-feature training set: rc 2 before any work."""
    root, *_ = twonorm
    out = _run("train", root / "train", "--model", tmp_path / "t.model", "--test",
               root / "three", scheduler=dask_client.scheduler.address)
    assert out.returncode == 2, out.stderr
    assert "has 3 features; the training set has 2" in _one_error_line(out)
    assert not (tmp_path / "t.model").exists()
    assert "RandSVM" not in out.stdout  # no training summary


def test_value_beyond_float32_named(tmp_path):
    """Item 6: a value float32 cannot hold is named with its row and feature, in Python
    and in ``data convert``, and no RuntimeWarning leaks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from randsvm_dist.estimators import RandSVMClassifier

    X, y = make_arrays("twonorm", 50, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SchemaError, match=r"value -?[0-9.]+e15\d at row 0, feature 0 "
                                              r"is beyond float32's range \(3\.4e38\)"):
            RandSVMClassifier().fit(X.astype(np.float64) * 1e150, y)
    pq.write_table(pa.table({"f0": np.array([1.0, 2.0, 3.77e200]), "f1": np.ones(3),
                             "label": np.array([1, -1, 1])}), tmp_path / "big.parquet")
    out = _run("data", "convert", tmp_path / "big.parquet", tmp_path / "out")
    assert out.returncode == 2, out.stderr
    line = _one_error_line(out)
    assert "value 3.77e200 at row 2, feature 'f0' is beyond float32's range (3.4e38)" in line
    assert "RuntimeWarning" not in out.stderr and "NaN" not in line


def test_one_class_nu_one_names_nu_not_c(dask_client):
    """Item 7: one-class takes no C: nu=1's failure names nu."""
    from randsvm_dist.estimators import RandSVMOneClass

    X, _ = make_arrays("twonorm", 300, seed=1)
    with pytest.raises(ParameterError, match=r"^nu=1: .*use a nu below 1") as e:
        RandSVMOneClass(nu=1.0, gamma=2.0, client=dask_client).fit(X)
    assert "smaller C" not in str(e.value)
