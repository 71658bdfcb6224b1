"""Bad input: each case names the file, the line/row and what was expected, and leaves no
output (not even a temporary directory) behind."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from randsvm_dist.data import convert, textio, write_arrays
from randsvm_dist.exceptions import DataFormatError, SchemaError

GOOD = "+1 1:0.5 3:1\n-1 2:0.25\n"


def _assert_nothing_left(tmp_path, keep):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


@pytest.mark.parametrize("bad, message", [
    ("1 1:2 oops", r"line3?:3: token 'oops' is not index:value"),
    ("1 1:abc", r":3: value 'abc' of index 1 is not a number"),
    ("yes 1:1", r":3: label 'yes' is not a number"),
    ("1 0:1", r":3: index 0 .*1-based \(expected >= 1\)"),
    ("1 3:1 2:1", r":3: index 2 is descending \(after 3\); expected strictly ascending"),
    ("1 2:1 2:5", r":3: index 2 is repeated; expected strictly ascending"),
    ("1 1.5:2", r":3: index '1.5' .* is not an integer"),
    ("1 1:nan", r":3: value 'nan' of index 1 is NaN or infinite; expected a finite"),
    ("1 2:-inf", r":3: value '-inf' of index 2 is NaN or infinite"),
    ("1 2:1e40", r":3: value '1e40' of index 2 overflows float32"),
    ("nan 1:1", r":3: label 'nan' is NaN or infinite"),
])
def test_malformed_svmlight_line(tmp_path, bad, message):
    src = tmp_path / "line3.svm"
    src.write_text(GOOD + bad + "\n" + GOOD)
    with pytest.raises(DataFormatError, match=r"line3\.svm" + message.removeprefix(r"line3?")):
        convert(src, tmp_path / "out")
    _assert_nothing_left(tmp_path, ["line3.svm"])


def test_error_after_partitions_were_written_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(textio, "CHUNK_BYTES", 256)
    lines = [f"{1 if i % 2 else -1} 1:{i} 2:1" for i in range(500)]
    lines[437] = "1 2:1 1:3"
    src = tmp_path / "late.svm.gz"
    with gzip.open(src, "wt") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=r"late\.svm\.gz:438: index 1 is descending"):
        convert(src, tmp_path / "out", rows_per_partition=50)
    _assert_nothing_left(tmp_path, ["late.svm.gz"])


def test_empty_and_comment_only_files(tmp_path):
    for name, text in [("empty.svm", ""), ("blank.svm", "\n\n# only a comment\n"),
                       ("empty.csv", ""), ("header_only.csv", "a,label\n")]:
        src = tmp_path / name
        src.write_text(text)
        with pytest.raises(DataFormatError, match=rf"{name}: empty: no data rows"):
            convert(src, tmp_path / "out")
        with pytest.raises(DataFormatError, match=rf"{name}: empty"):
            convert(src, tmp_path / "out", partitions=2)
    _assert_nothing_left(tmp_path, ["empty.svm", "blank.svm", "empty.csv", "header_only.csv"])


def test_missing_file(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope\.svm: not found"):
        convert(tmp_path / "nope.svm", tmp_path / "out")
    with pytest.raises(DataFormatError, match="not found"):
        convert(tmp_path / "nope.csv", tmp_path / "out")
    _assert_nothing_left(tmp_path, [])


def test_corrupt_gzip(tmp_path):
    src = tmp_path / "bad.svm.gz"
    src.write_bytes(b"this is not gzip data\n")
    with pytest.raises(DataFormatError, match=r"bad\.svm\.gz: cannot decompress"):
        convert(src, tmp_path / "out")
    _assert_nothing_left(tmp_path, ["bad.svm.gz"])


@pytest.mark.parametrize("row, message", [
    ("4,x,2", r"bad\.csv:3: feature column 'b' \(column 2\): 'x' is not a number"),
    ("4,,2", r"bad\.csv:3: feature column 'b' \(column 2\): empty; expected a number"),
    ("4,nan,2", r"bad\.csv:3: feature column 'b' \(column 2\): 'nan' is NaN or infinite"),
    ("4,1,inf", r"bad\.csv:3: feature column 'label' .*NaN or infinite"),
    ("4,1", r"bad\.csv:3: 2 fields; expected 3"),
    (",1,2", r"bad\.csv:3: empty label in column 'a'"),
])
def test_bad_csv_row(tmp_path, row, message):
    src = tmp_path / "bad.csv"
    src.write_text(f"a,b,label\n1,2,3\n{row}\n5,6,7\n")
    with pytest.raises(DataFormatError, match=message):
        convert(src, tmp_path / "out", label_column="a")
    _assert_nothing_left(tmp_path, ["bad.csv"])


def test_csv_labels_switching_from_numbers_to_text(tmp_path, monkeypatch):
    monkeypatch.setattr(textio, "CHUNK_BYTES", 64)
    src = tmp_path / "mixed.csv"
    src.write_text("label,x\n" + "".join(f"{i % 2},{i}\n" for i in range(40)) + "cat,1\n")
    with pytest.raises(DataFormatError, match=r"mixed\.csv:\d+.*not all numbers"):
        convert(src, tmp_path / "out")
    _assert_nothing_left(tmp_path, ["mixed.csv"])


def test_csv_label_column_not_there(tmp_path):
    src = tmp_path / "h.csv"
    src.write_text("a,b\n1,2\n")
    with pytest.raises(SchemaError, match=r"h\.csv:1: no column 'label'"):
        convert(src, tmp_path / "out", label_column="label")
    with pytest.raises(SchemaError, match="index 5 out of range"):
        convert(src, tmp_path / "out", label_column=5)
    _assert_nothing_left(tmp_path, ["h.csv"])


def test_one_class_and_too_many_classes_for_binary(tmp_path):
    src = tmp_path / "one.svm"
    src.write_text("1 1:1\n1 2:1\n")
    ds = convert(src, tmp_path / "one")
    with pytest.raises(SchemaError, match=r"one\.svm|one.*one class"):
        ds.encode_labels(np.array([1, 1]))
    three = write_arrays(np.ones((3, 1)), [1, 2, 3], tmp_path / "three")
    with pytest.raises(SchemaError, match=r"three.*exactly two.*holds 3: \[1, 2, 3\]"):
        three.encode_labels(np.array([1, 2]), binary=True)


def test_existing_output_refused_and_kept(tmp_path):
    src = tmp_path / "a.svm"
    src.write_text(GOOD)
    convert(src, tmp_path / "out")
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    with pytest.raises(DataFormatError, match="already exists"):
        convert(src, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before
    (tmp_path / "b.svm").write_text("1 0:1\n")
    with pytest.raises(DataFormatError):
        convert(tmp_path / "b.svm", tmp_path / "out", overwrite=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before
    _assert_nothing_left(tmp_path, ["a.svm", "b.svm", "out"])


def test_rows_without_features_need_n_features(tmp_path):
    src = tmp_path / "labels_only.svm"
    src.write_text("1\n-1\n")
    with pytest.raises(SchemaError, match="no row has any feature; give n_features"):
        convert(src, tmp_path / "out")
    _assert_nothing_left(tmp_path, ["labels_only.svm"])
    ds = convert(src, tmp_path / "out", n_features=3)
    assert ds.n_features == 3 and ds.to_arrays()[0].nnz == 0
