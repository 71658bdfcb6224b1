"""Model files (app.model_io): every kind round-trips without pickle, stock LIBSVM reads
RandSVM models, and crafted, truncated or corrupt files are refused with a clear error."""

from __future__ import annotations

import hashlib
import json
import re

import joblib
import numpy as np
import pytest

from randsvm_dist.app import model_io
from randsvm_dist.cli import main as cli_main
from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.estimator_files import model_text
from randsvm_dist.model_files.libsvm_text import END_TAG, META_TAG, format_model
from randsvm_dist.model_files.streaming_files import streaming_model_bytes
from randsvm_dist.streaming import BlurredBallSVM, BudgetedSGD, OnlineRampSVM, StreamSVM

LEARNERS = [
    lambda: StreamSVM(C=1.0, random_state=3),
    lambda: BlurredBallSVM(C=1.0, random_state=3),
    lambda: BudgetedSGD(C=1.0, budget=30, random_state=3),
    lambda: OnlineRampSVM(C=1.0, random_state=3),
]


@pytest.fixture(scope="module")
def binary_and_multi():
    X, y = make_arrays("twonorm", 600, seed=5)
    Xw, yw = make_arrays("waveform", 600, seed=6)
    return (X, y), (Xw, yw)


def _fitted(client, name: str, rows: int, seed: int, k: int, sample_size: int):
    """(a RandSVMClassifier fitted on ``rows`` rows of ``name``, its X)."""
    X, y = make_arrays(name, rows, seed=seed)
    est = RandSVMClassifier(C=1.0, k=k, sample_size=sample_size, max_iter=3, random_state=0,
                            client=client).fit(X, y)
    return est, X


@pytest.fixture(scope="module")
def randsvm_binary(dask_client):
    return _fitted(dask_client, "twonorm", 800, 1, 600, 300)


@pytest.fixture(scope="module")
def randsvm_multi(dask_client):
    return _fitted(dask_client, "waveform", 900, 4, 2000, 400)


@pytest.mark.parametrize("make", LEARNERS)
@pytest.mark.parametrize("multiclass", [False, True])
def test_streaming_roundtrip_without_pickle_keeps_the_whole_state(make, multiclass,
                                                                  binary_and_multi, tmp_path):
    X, y = binary_and_multi[multiclass]
    first, rest = slice(0, 400), slice(400, None)
    est = make().partial_fit(X[first], y[first], classes=np.unique(y))
    path = tmp_path / "m.npz"
    model_io.save_model(est, path)
    with np.load(path, allow_pickle=False) as z:  # loadable without pickle
        header = json.loads(z["header"].tobytes())
    assert header["format"] == "randsvm-dist-stream" and header["version"] == 1
    back = model_io.load_model(path)
    assert type(back) is type(est)
    np.testing.assert_array_equal(back.classes_, est.classes_)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    # the learner's state (random generators included) is restored: learning goes on alike
    est.partial_fit(X[rest], y[rest])
    back.partial_fit(X[rest], y[rest])
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))


def test_randsvm_load_keeps_support_and_metadata(randsvm_binary, tmp_path):
    est, X = randsvm_binary
    path = tmp_path / "m.model"
    est.save(path)
    assert not (tmp_path / "m.model.meta.json").exists()  # one file: the model is one unit
    back = RandSVMClassifier.load(path)
    np.testing.assert_array_equal(back.support_, est.support_)  # was dropped (issue 10)
    np.testing.assert_array_equal(back.classes_, est.classes_)
    assert back.get_params()["C"] == est.C and back.client is None
    assert back.history_ == json.loads(json.dumps(est.history_))
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X), atol=1e-5)


def test_randsvm_multiclass_is_one_file_and_keeps_support(randsvm_multi, tmp_path):
    from libsvm.svmutil import svm_load_model

    est, X = randsvm_multi
    path = tmp_path / "wave.model"
    est.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wave.model"]
    back = RandSVMClassifier.load(path)
    np.testing.assert_array_equal(back.support_, est.support_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert svm_load_model(str(path)).get_nr_sv() == len(est.support_)


def _rewrite_meta(text: str, **changes) -> str:
    """The model text with its metadata changed and a valid checksum (a crafted file)."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, s in enumerate(lines) if s.startswith(META_TAG))
    meta = json.loads(lines[at][len(META_TAG):])
    for key, value in changes.items():
        if key == "params":
            meta["params"].update(value)
        else:
            meta[key] = value
    lines[at] = META_TAG + json.dumps(meta) + "\n"
    body = "".join(ln for ln in lines if not ln.startswith(END_TAG))
    return body + END_TAG + hashlib.sha256(body.encode()).hexdigest() + "\n"


@pytest.mark.parametrize("change, match", [
    ({"params": {"client": "tcp://attacker.example:8786"}}, "'client' is not allowed"),
    ({"params": {"C": {"__class__": "os.system"}}}, "disallowed value"),
    ({"model_path": "/etc/passwd"}, "not allowed"),
    ({"history": [{"x": {"nested": 1}}]}, "flat records"),
])
def test_crafted_metadata_is_refused(randsvm_binary, tmp_path, change, match):
    est, _ = randsvm_binary
    path = tmp_path / "m.model"
    path.write_text(_rewrite_meta(model_text(est), **change))
    with pytest.raises(DataFormatError, match=match):
        RandSVMClassifier.load(path)


def test_a_meta_json_sidecar_is_ignored(randsvm_binary, tmp_path):
    """Sidecars of the earlier format are no longer read: a file beside the model cannot
    set any parameter (e.g. the scheduler)."""
    est, _ = randsvm_binary
    path = tmp_path / "old.model"
    path.write_text(format_model(est._libsvm))  # stock LIBSVM's text: no marker, no trailer
    meta = {"format": "randsvm-dist/1", "classes": [-1, 1], "n_features": 20,
            "params": {"client": "tcp://attacker.example:8786"}, "history": []}
    (tmp_path / "old.model.meta.json").write_text(json.dumps(meta))
    old = model_io.load_model(path)  # a stock LIBSVM model
    assert old.client is None and old.n_features_in_ == est.n_features_in_


def test_truncated_and_corrupt_randsvm_files(randsvm_binary, tmp_path):
    est, _ = randsvm_binary
    text = model_text(est)
    path = tmp_path / "m.model"
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))  # cut inside the SV block
    with pytest.raises(DataFormatError, match="truncated"):
        RandSVMClassifier.load(path)
    path.write_text(text[:-30])  # cut inside the end line
    with pytest.raises(DataFormatError, match="checksum|truncated"):
        RandSVMClassifier.load(path)
    path.write_text(text.replace("\n1 ", "\n2 ", 1) if "\n1 " in text
                    else text.replace("e-", "e+", 1))
    with pytest.raises(DataFormatError, match="checksum"):
        RandSVMClassifier.load(path)
    stock = re.sub(r"\nSV [^\n]*\n", "\nSV\n", text[: text.index(META_TAG)])  # stock LIBSVM's
    path.write_text(stock.rsplit("\n", 2)[0])  # cut inside its last line
    with pytest.raises(DataFormatError, match="truncated"):
        RandSVMClassifier.load(path)
    # a stock file with one SV line lost
    path.write_text(stock.rsplit("\n", 2)[0] + "\n")
    with pytest.raises(DataFormatError, match="total_sv"):
        RandSVMClassifier.load(path)
    path.write_text(stock.replace("rho", "rh0"))
    with pytest.raises(DataFormatError, match="lacks rho"):
        RandSVMClassifier.load(path)


def test_truncated_and_crafted_streaming_files(binary_and_multi, tmp_path):
    (X, y), _ = binary_and_multi
    data = streaming_model_bytes(StreamSVM(C=1.0).fit(X, y))
    path = tmp_path / "m.npz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match="truncated or corrupt"):
        model_io.load_model(path)
    header = {"format": "randsvm-dist-stream", "version": 1,
              "model": {"$": "object", "class": "Popen", "state": {}}}
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), np.uint8))
    with pytest.raises(DataFormatError, match="'Popen' is not a model kind"):
        model_io.load_model(path)
    header["version"] = 99
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), np.uint8))
    with pytest.raises(DataFormatError, match="version 99"):
        model_io.load_model(path)


def test_pickles_load_only_when_allowed(binary_and_multi, tmp_path, capsys):
    (X, y), _ = binary_and_multi
    est = StreamSVM(C=1.0).fit(X, y)
    path = tmp_path / "old.pkl"
    joblib.dump(est, path)
    with pytest.raises(DataFormatError, match="--allow-pickle"):
        model_io.load_model(path)
    back = model_io.load_model(path, allow_pickle=True)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    data = write_arrays(X, y, tmp_path / "data", partitions=1)
    assert cli_main(["evaluate", str(path), data.url, "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "--allow-pickle" in capsys.readouterr().err


def test_output_paths_are_checked_before_training(tmp_path, capsys):
    X, y = make_arrays("twonorm", 200, seed=1)
    data = write_arrays(X, y, tmp_path / "data", partitions=1)
    # an unreachable scheduler: reaching it (training) would fail with another message
    unreachable = ["--scheduler", "tcp://127.0.0.1:9"]
    assert cli_main(["train", data.url, "--model", str(tmp_path / "typo" / "m.model"),
                     *unreachable]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli_main(["stream", data.url, "--method", "bsgd", "--model",
                     str(tmp_path / "typo" / "m.npz"), *unreachable]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli_main(["train", data.url, "--model", str(tmp_path / "m"), "--report",
                     str(tmp_path / "typo" / "r.json"), *unreachable]) == 2
    assert "--report" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    assert cli_main(["train", data.url, "--model", str(notes), *unreachable]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert cli_main(["train", data.url, "--model", str(notes), "--overwrite",
                     *unreachable]) == 2
    assert "not a randsvm-dist model" in capsys.readouterr().err
    assert notes.read_text() == "my notes"
