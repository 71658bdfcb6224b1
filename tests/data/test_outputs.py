"""Outputs that cannot be lost or mixed: data sets and predictions are published in one step
with a completion manifest that readers require; existing outputs are refused without
overwrite, and overwrite replaces only what randsvm-dist wrote (local paths and fsspec URLs)."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from randsvm_dist.cli import main as cli_main
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.data.checksums import MANIFEST
from randsvm_dist.distributed.predict import predict_dataset, read_predictions
from randsvm_dist.exceptions import DataFormatError, OutputBusyError
from randsvm_dist.streaming import StreamSVM

UNREACHABLE = ["--scheduler", "tcp://127.0.0.1:9"]  # reaching it would fail differently


@pytest.fixture(scope="module")
def arrays():
    return make_arrays("twonorm", 600, seed=3)


def test_dataset_carries_a_manifest_that_readers_require(arrays, tmp_path):
    X, y = arrays
    ds = write_arrays(X, y, tmp_path / "d", partitions=3)
    manifest = json.loads((tmp_path / "d" / MANIFEST).read_text())
    assert [e["name"] for e in manifest["files"]] == [f"part-{i:05d}.parquet" for i in range(3)]
    assert ds.n_rows == 600
    (tmp_path / "d" / MANIFEST).unlink()
    with pytest.raises(DataFormatError, match="did not finish"):
        Dataset.open(tmp_path / "d")


def test_a_changed_or_extra_file_after_publishing(arrays, tmp_path):
    X, y = arrays
    write_arrays(X, y, tmp_path / "d", partitions=2)
    # a stray part file (e.g. copied in later) is not a partition: the manifest decides
    pq.write_table(pa.table({"f0": [1.0], "label": [1]}), tmp_path / "d" / "part-00007.parquet")
    assert Dataset.open(tmp_path / "d").n_rows == 600
    with open(tmp_path / "d" / "part-00001.parquet", "ab") as f:
        f.write(b"junk")
    with pytest.raises(DataFormatError, match="part-00001.parquet has changed since"):
        Dataset.open(tmp_path / "d")


def test_interrupted_remote_write_is_never_read_as_complete(arrays, monkeypatch):
    import fsspec

    X, y = arrays
    url = f"memory://out-{uuid.uuid4().hex[:6]}/d"
    write_arrays(X, y, url, partitions=4)
    assert Dataset.open(url).n_rows == 600
    fs = fsspec.filesystem("memory")
    move = type(fs).mv

    def move_two_files_then_fail(src, dst, recursive=False, **kw):  # a dropped connection
        for name in sorted(fs.ls(src, detail=False))[:2]:
            move(fs, name, f"{dst}/{name.rsplit('/', 1)[1]}")
        raise ConnectionError("connection lost")

    monkeypatch.setattr(type(fs), "mv", lambda self, *a, **k: move_two_files_then_fail(*a, **k))
    with pytest.raises(ConnectionError):
        write_arrays(X[:300], y[:300], url, partitions=4, overwrite=True)
    monkeypatch.undo()
    with pytest.raises(DataFormatError, match="did not finish"):
        Dataset.open(url)


def test_overwrite_replaces_only_what_the_project_wrote(arrays, tmp_path):
    X, y = arrays
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for overwrite in (False, True):
        with pytest.raises(DataFormatError, match="already exists|not written by randsvm"):
            write_arrays(X, y, mine, partitions=1, overwrite=overwrite)
    assert (mine / "thesis.tex").read_text() == "years of work"
    write_arrays(X, y, tmp_path / "d", partitions=2)
    with pytest.raises(DataFormatError, match="already exists"):
        write_arrays(X, y, tmp_path / "d", partitions=2)
    assert write_arrays(X[:100], y[:100], tmp_path / "d", partitions=1,
                        overwrite=True).n_rows == 100


def test_remote_overwrite_refuses_a_foreign_directory(arrays):
    import fsspec

    X, y = arrays
    url = f"memory://foreign-{uuid.uuid4().hex[:6]}/d"
    with fsspec.open(f"{url}/notes.txt", "w") as f:
        f.write("not ours")
    with pytest.raises(DataFormatError, match="not written by randsvm-dist"):
        write_arrays(X, y, url, partitions=1, overwrite=True)
    assert fsspec.filesystem("memory").cat_file(f"{url}/notes.txt") == b"not ours"


def test_stale_prediction_directory(arrays, dask_client, tmp_path):
    X, y = arrays
    model = StreamSVM(C=1.0).fit(X, y)
    data = write_arrays(X, y, tmp_path / "d", partitions=2)
    out = tmp_path / "pred"
    out.mkdir()  # an earlier run's part file, e.g. from a data set with more partitions
    pq.write_table(pa.table({"prediction": np.ones(50), "label": np.ones(50)}),
                   out / "part-00005.parquet")
    with pytest.raises(DataFormatError, match="already exists"):
        predict_dataset(model, data, out, client=dask_client)
    info = predict_dataset(model, data, out, client=dask_client, overwrite=True)
    assert info["rows"] == 600
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "part-00000.parquet",
                                                     "part-00001.parquet"]
    table = read_predictions(out)
    assert table.num_rows == 600
    np.testing.assert_array_equal(table["prediction"].to_numpy(), model.predict(X))
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # no orphans


def test_predict_refuses_outputs_before_any_work(arrays, tmp_path, capsys):
    from randsvm_dist.app.model_io import save_model

    X, y = arrays
    save_model(StreamSVM(C=1.0).fit(X, y), tmp_path / "m.npz")
    data = write_arrays(X, y, tmp_path / "d", partitions=1)
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff\xd8")
    assert cli_main(["predict", str(tmp_path / "m.npz"), data.url, str(foreign), "--overwrite",
                     *UNREACHABLE]) == 2
    assert "not written by randsvm-dist" in capsys.readouterr().err
    assert cli_main(["predict", str(tmp_path / "m.npz"), data.url, str(tmp_path / "m.npz"),
                     *UNREACHABLE]) == 2
    assert "lies inside the input" in capsys.readouterr().err  # the output is the model
    (tmp_path / "f").write_text("a file")
    assert cli_main(["predict", str(tmp_path / "m.npz"), data.url, str(tmp_path / "f"),
                     *UNREACHABLE]) == 2
    assert "is a file" in capsys.readouterr().err
    with pytest.raises(DataFormatError, match="no _manifest.json"):
        read_predictions(foreign)


def test_one_flipped_bit_in_a_part_is_detected_on_read_and_by_info(arrays, tmp_path, capsys):
    """Issue 18, defect 5 (Parquet): same size, other content."""
    X, y = arrays
    write_arrays(X, y, tmp_path / "d", partitions=2)
    manifest = json.loads((tmp_path / "d" / MANIFEST).read_text())
    assert all(len(e["crc32"]) == 8 for e in manifest["files"])
    part = tmp_path / "d" / "part-00001.parquet"
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 3] ^= 0x10  # inside a data page: the footer still parses
    part.write_bytes(bytes(raw))
    ds = Dataset.open(tmp_path / "d")  # footers only: cheap, nothing read yet
    ds.read_partition(0)
    with pytest.raises(DataFormatError, match=r"part-00001.parquet: content checksum"):
        ds.read_partition(1)
    with pytest.raises(DataFormatError, match=r"part-00001.parquet: content checksum"):
        ds.verify()
    assert cli_main(["data", "info", str(tmp_path / "d")]) == 2
    assert "part-00001.parquet: content checksum" in capsys.readouterr().err


def test_overwrite_keeps_files_the_project_did_not_write(arrays, tmp_path):
    """Issue 18, defect 2: --overwrite removes only what the manifest lists."""
    X, y = arrays
    d = tmp_path / "d"
    write_arrays(X, y, d, partitions=3)
    (d / "notes.md").write_text("mine")
    (d / "sub").mkdir()
    (d / "sub" / "keep.txt").write_text("mine too")
    ds = write_arrays(X[:100], y[:100], d, partitions=1, overwrite=True)
    assert ds.n_rows == 100 and ds.n_partitions == 1
    assert (d / "notes.md").read_text() == "mine"
    assert (d / "sub" / "keep.txt").read_text() == "mine too"
    assert sorted(p.name for p in d.iterdir()) == [MANIFEST, "notes.md", "part-00000.parquet",
                                                   "sub"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no tmp, no lock


def test_a_second_writer_of_one_path_fails_loudly(arrays, tmp_path):
    """Issue 18, defect 3: concurrent writers of one output."""
    from randsvm_dist.data.publish import AtomicDir, OutputLock, publish_file

    X, y = arrays
    lock = tmp_path / ".d.randsvm-lock"
    lock.write_text(json.dumps({"pid": 1, "host": __import__("socket").gethostname()}))
    with pytest.raises(OutputBusyError, match="being written by process 1"):
        write_arrays(X, y, tmp_path / "d", partitions=1)
    lock.unlink()
    with AtomicDir(tmp_path / "d"):  # a writer in another process is simulated by the
        held = json.loads(lock.read_text())  # lock file's owner
        assert held["pid"] == __import__("os").getpid()
    assert not lock.exists()
    (tmp_path / ".m.model.randsvm-lock").write_text(json.dumps({"pid": 1, "host": held["host"]}))
    with pytest.raises(OutputBusyError, match="being written"):
        publish_file(tmp_path / "m.model", b"x")
    with OutputLock(tmp_path / "r.json"):
        assert publish_file(tmp_path / "r.json", b"{}")  # re-entrant in one process
    with pytest.raises(DataFormatError, match="exists; choose a new path or pass --overwrite"):
        publish_file(tmp_path / "r.json", b"{}")
    publish_file(tmp_path / "r.json", b"[]", overwrite=True)
    assert (tmp_path / "r.json").read_bytes() == b"[]"


def test_zero_row_part_with_copied_metadata(arrays, tmp_path, capsys):
    """Issue 18, defect 8: a 0-row part carrying another part's class counts."""
    X, y = arrays
    write_arrays(X, y, tmp_path / "src", partitions=1)
    full = pq.read_table(tmp_path / "src" / "part-00000.parquet")
    pq.write_table(full.slice(0, 0), tmp_path / "empty.parquet")  # schema metadata copied
    ds = Dataset.open(tmp_path / "empty.parquet")
    assert ds.n_rows == 0 and int(ds.class_counts.sum()) == 0
    assert cli_main(["data", "info", str(tmp_path / "empty.parquet")]) == 0
    out = capsys.readouterr().out
    assert "%" not in out and "one class only" in out
