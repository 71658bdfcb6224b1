"""Issue 40 (the third careless-user round), items about a model meeting data and inputs
checked before work, driven as a user does: the ``randsvm-dist`` console script in its own
process (rc, one stderr line, no traceback), against the test cluster."""

from __future__ import annotations

import json
import logging
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
    import pandas as pd  # three features named unlike the training set's (f0, f1)

    (root / "other").mkdir()
    pd.DataFrame({"label": y, "a": X[:, 0], "b": X[:, 1], "c": X[:, 0]}).to_parquet(
        root / "other" / "part-0.parquet", index=False)
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
    from randsvm_dist.app.model_io import load_model

    est = load_model(str(tmp_path / "stock.model"))
    ref, _, _ = svm_predict([], sp.csr_matrix(X[300:]), m, "-q")
    np.testing.assert_array_equal(est.predict(X[300:]), np.asarray(ref))


def test_label_sets_that_differ_one_line_rc2(dask_client, twonorm, tmp_path):
    """Item 4: a +-1 model on data labelled pos/neg: evaluate and train --test say so in
    one line naming both label sets, rc 2; train --test before training (no model)."""
    root, X, y = twonorm
    from randsvm_dist.app.model_io import save_model
    from randsvm_dist.streaming import StreamSVM

    save_model(StreamSVM(gamma=0.5).fit(X, y), tmp_path / "pm.npz")
    out = _run("evaluate", tmp_path / "pm.npz", root / "words",
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
    """Item 5: --test of 3 features (other names) on a 2-feature training set: rc 2 before
    any work. A test set holding the training features and one more is read with the
    training features (as LIBSVM's rule for a model meeting wider data), said once."""
    root, *_ = twonorm
    out = _run("train", root / "train", "--model", tmp_path / "t.model", "--test",
               root / "other", scheduler=dask_client.scheduler.address)
    assert out.returncode == 2, out.stderr
    assert "has 3 features; the training set has 2" in _one_error_line(out)
    assert not (tmp_path / "t.model").exists()
    assert "RandSVM" not in out.stdout  # no training summary
    out = _run("train", root / "train", "--model", tmp_path / "w.model", "--test",
               root / "three", scheduler=dask_client.scheduler.address)
    assert out.returncode == 0, out.stderr
    assert "column(s) 'f2' are not features of the model" in out.stderr, out.stderr


def test_value_beyond_float32_named(tmp_path):
    """Item 6: a value float32 cannot hold is named with its row and feature, in Python
    and in ``data convert``, and no RuntimeWarning leaks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from randsvm_dist.estimators import RandSVMClassifier

    X, y = make_arrays("twonorm", 50, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SchemaError, match=r"value -?[0-9.]+e1\d\d at row 0, feature 0 "
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


def test_linear_kernel_on_huge_features_names_the_scale(twonorm, tmp_path):
    """Item 7: a linear kernel on X * 1e20 (k(x, x) past float32) is refused before any
    solve with one line naming the features' scale, not a C."""
    root, X, y = twonorm
    write_arrays(X * 1e20, y, tmp_path / "huge", partitions=2)
    out = _run("train", tmp_path / "huge", "--kernel", "linear", "--model",
               tmp_path / "huge.model")
    assert out.returncode == 2, out.stderr
    line = _one_error_line(out)
    assert "linear kernel's value" in line and "scale the features" in line, line
    assert "C=" not in line
    assert not (tmp_path / "huge.model").exists()


def test_kernel_scale_check_refuses_overflow_and_warns_past_the_limit():
    """Item 7's rule, per kernel: overflow of float32 refused naming the row, values past
    KERNEL_SCALE_WARN warned, rbf (k(x, x) = 1) never."""
    from randsvm_dist.numerics.kernels import KERNEL_SCALE_WARN, Kernel, check_kernel_scale

    X = np.array([[1.0, 2.0], [3e19, 1.0]], np.float32)
    with pytest.raises(ParameterError, match=r"linear kernel's value k\(x, x\) at row 7 "
                                             r"is 9e\+38.*scale the features"):
        check_kernel_scale(X, Kernel("linear"), rows=np.array([3, 7]))
    big = np.array([[np.sqrt(KERNEL_SCALE_WARN) * 2, 0.0]], np.float32)
    with pytest.warns(RuntimeWarning, match="reaches 4e\\+10 .*scale the features"):
        check_kernel_scale(big, Kernel("linear"))
    with pytest.warns(RuntimeWarning, match="poly kernel"):
        check_kernel_scale(np.array([[100.0, 0]]), Kernel("poly", gamma=1.0, degree=3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_kernel_scale(X * 0 + 1e30, Kernel("rbf", gamma=1.0))
        check_kernel_scale(np.array([[1e4, 0]]), Kernel("linear"))  # 1e8: below the limit
        check_kernel_scale(X[:0], Kernel("linear"))


def test_unlabelled_csv_note_and_label_column_none(tmp_path):
    """Item 12: the column taken as the label is named in a note; --label-column none
    converts unlabelled data (every column a feature)."""
    from randsvm_dist.data import Dataset

    (tmp_path / "nolabel.csv").write_text("f0,f1\n1,2\n3,4\n5,6\n")
    out = _run("data", "convert", tmp_path / "nolabel.csv", tmp_path / "guessed",
               "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "the first column 'f0' is taken as the label" in out.stderr
    assert "--label-column" in out.stderr and "'none'" in out.stderr
    out = _run("data", "convert", tmp_path / "nolabel.csv", tmp_path / "unlabelled",
               "--label-column", "none", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "taken as the label" not in out.stderr
    ds = Dataset.open(str(tmp_path / "unlabelled"))
    X, y = ds.to_arrays()
    assert ds.n_features == 2 and X.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert (np.asarray(y) == 0).all()


def test_second_writer_refused_before_any_work(tmp_path):
    """Item 14: a --model whose lock a live process holds is refused at once: before the
    command's imports, checks and cluster (its one line is all it prints)."""
    import socket

    X, y = make_arrays("twonorm", 200, seed=1)
    write_arrays(X, y, tmp_path / "data", partitions=1)
    lock = tmp_path / ".m.model.randsvm-lock"
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                "since": 0}))
    for cmd in (["train", tmp_path / "data", "--model", tmp_path / "m.model"],
                ["stream", tmp_path / "data", "--method", "bsgd", "--model",
                 tmp_path / "m.model"]):
        out = _run(*cmd)
        assert out.returncode == 2, out.stderr
        line = _one_error_line(out)
        assert "is being written by process" in line and str(os.getpid()) in line
        assert out.stderr.strip() == line  # nothing else ran: no cluster, no progress
    lock.unlink()


def test_staging_leftovers_reclaimed_by_the_next_writer(tmp_path):
    """Item 15: a killed writer's ``.NAME.tmp-*`` beside the output goes with the next
    writer of that output (others' names stay)."""
    dd = tmp_path / "dd"
    out = _run("data", "make", "checkerboard", dd, "--rows", "200", "--no-progress")
    assert out.returncode == 0, out.stderr
    left = tmp_path / ".dd.tmp-0123abcd"
    left.mkdir()
    (left / "part-00000.parquet").write_bytes(b"x" * 1000)
    other = tmp_path / ".ddx.tmp-0123abcd"
    other.mkdir()
    out = _run("data", "make", "checkerboard", dd, "--rows", "200", "--overwrite",
               "--no-progress")
    assert out.returncode == 0, out.stderr
    assert not left.exists() and other.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dd.tmp-")]


def test_file_staging_leftovers_reclaimed(tmp_path):
    from randsvm_dist.data.publish import publish_file

    (tmp_path / ".r.tmp-89abcdef.json").write_text("half")
    publish_file(tmp_path / "r.json", b"{}")
    assert not (tmp_path / ".r.tmp-89abcdef.json").exists()
    assert (tmp_path / "r.json").read_bytes() == b"{}"


def test_blurred_ball_is_one_name(dask_client, twonorm, tmp_path):
    """Item 16: the CLI's --method takes the registry's name blurred_ball; the old
    spelling blurred is still accepted (scripts written with it keep working)."""
    from randsvm_dist.cli.stream import METHODS, build_estimator
    from randsvm_dist.streaming import LEARNERS, BlurredBallSVM

    assert set(METHODS) == set(LEARNERS)
    assert isinstance(build_estimator("blurred"), BlurredBallSVM)
    help_text = _run("stream", "--help").stdout
    assert "blurred_ball" in help_text and "{streamsvm,blurred_ball,bsgd,ramp}" in help_text
    root, *_ = twonorm
    for i, name in enumerate(("blurred_ball", "blurred")):
        out = _run("stream", root / "train", "--method", name, "--lookahead", "50",
                   "--model", tmp_path / f"b{i}.npz",
                   scheduler=dask_client.scheduler.address)
        assert out.returncode == 0, out.stderr


def test_column_vector_y_warns_once(dask_client):
    """Item 16: DataConversionWarning once for a column-vector y."""
    from sklearn.exceptions import DataConversionWarning

    from randsvm_dist.estimators import RandSVMClassifier
    from randsvm_dist.streaming import StreamSVM

    X, y = make_arrays("twonorm", 300, seed=1)
    for est in (StreamSVM(), RandSVMClassifier(client=dask_client)):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            est.fit(X, y.reshape(-1, 1))
        conv = [w for w in got if issubclass(w.category, DataConversionWarning)]
        assert len(conv) == 1, [str(w.message) for w in conv]


def test_two_interrupts_one_line_rc130(tmp_path):
    """Item 8: Ctrl-C twice, 0.3 s apart, during train's iterations on the embedded
    default: one line, rc 130, no traceback, however many interrupts."""
    import signal
    import time

    out = _run("data", "make", "checkerboard", tmp_path / "cb", "--rows", "60000",
               "--no-progress")
    assert out.returncode == 0, out.stderr
    exe = Path(sys.executable).with_name("randsvm-dist")
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    proc = subprocess.Popen([str(exe) if exe.exists() else "randsvm-dist", "train",
                             str(tmp_path / "cb"), "--model", str(tmp_path / "m.model")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    # interrupted once its iterations run (read from its log, not after a fixed sleep: on a
    # loaded machine 6 s could still be the cluster's start, where the interrupt was lost)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("iter "):
            break
    for _ in range(2):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
    _, rest = proc.communicate(timeout=300)
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "lost sys.stderr" not in err, err
    assert err.count("randsvm-dist: interrupted") == 1, err
    assert not (tmp_path / "m.model").exists()


@pytest.mark.heavy   # a real scheduler killed: distributed's shutdown varies run to run
def test_scheduler_killed_under_a_running_train_is_one_line(dask_cli_cluster, tmp_path):
    """Item 9 for real: ``dask scheduler`` SIGKILLed while ``train --scheduler`` runs its
    iterations: one line naming the lost scheduler and the checkpoint, rc 2, no traceback,
    and the checkpoint written before the kill is there for --resume."""
    import signal
    import time

    from randsvm_dist.data import make

    make("checkerboard", tmp_path / "cb", rows=200_000, partitions=4, seed=1)
    cluster = dask_cli_cluster(tmp_path / "cluster", n_workers=2)
    exe = Path(sys.executable).with_name("randsvm-dist")
    cmd = [str(exe) if exe.exists() else "randsvm-dist", "train", str(tmp_path / "cb"),
           "--C", "100", "--gamma", "1", "--model", str(tmp_path / "m.model"),
           "--checkpoint", str(tmp_path / "ck"), "--scheduler", cluster.address]
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    try:
        with open(tmp_path / "err.txt", "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                    env=env)
            deadline = time.monotonic() + 300
            while "iter  1" not in (tmp_path / "err.txt").read_text() or not any(
                    (tmp_path / "ck").glob("*")):
                assert proc.poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "err.txt").read_text()
                time.sleep(0.2)
            cluster.procs[0].send_signal(signal.SIGKILL)   # the scheduler
            rc = proc.wait(180)
    finally:
        cluster.close()
    stderr = (tmp_path / "err.txt").read_text()
    assert rc == 2, stderr
    assert "Traceback" not in stderr, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("randsvm-dist: error:")]
    assert len(errors) == 1, stderr
    assert "lost the Dask scheduler" in errors[0] and "--resume" in errors[0], errors[0]
    assert not (tmp_path / "m.model").exists()
    assert any((tmp_path / "ck").glob("*"))


def test_lost_scheduler_is_a_cluster_error():
    """Item 9: a lost scheduler is a cluster error (rc 2) naming it and the checkpoint."""
    from distributed.client import FutureCancelledError

    from randsvm_dist.cli import _error_line
    from randsvm_dist.cli.train import _cluster_lost

    e = FutureCancelledError("task-1", "scheduler-connection-lost")
    line, code = _error_line(e)
    assert code == 2 and "lost the Dask scheduler" in line, line
    assert logging.root.manager.disable == logging.NOTSET  # the line alone changes nothing
    with_ckpt = _cluster_lost(e, "/tmp/ck")
    assert "--checkpoint /tmp/ck" in str(with_ckpt) and "--resume" in str(with_ckpt)
    other = ValueError("x")
    assert _cluster_lost(other, "/tmp/ck") is other


def test_a_lost_scheduler_in_process_leaves_logging_as_it_was(monkeypatch, tmp_path, capsys):
    """``main([...])`` called in a process that goes on (a notebook, a test) silences the
    client's reconnect logs only while it reports the lost scheduler: afterwards the
    process's logging is as before (sklearnex's log, for one, is read again)."""
    from distributed.client import FutureCancelledError

    from randsvm_dist import cli
    from randsvm_dist.cli import data as data_cli

    def lost(args):
        raise FutureCancelledError("task-1", "scheduler-connection-lost")

    monkeypatch.setattr(data_cli, "_info", lost)
    assert cli.main(["data", "info", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("randsvm-dist: error:") and "lost the Dask scheduler" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert logging.root.manager.disable == logging.NOTSET
    assert logging.raiseExceptions
