"""``randsvm-dist data make|convert|info`` through the CLI entry point."""

from __future__ import annotations

import json

import numpy as np

from randsvm_dist.cli import main
from randsvm_dist.data import Dataset, make_arrays


def test_make_then_info(tmp_path, capsys):
    dst = tmp_path / "cb"
    assert main(["data", "make", "checkerboard", str(dst), "--rows", "5000",
                 "--partitions", "3", "--seed", "4", "--no-progress"]) == 0
    assert "5,000 rows x 2 features" in capsys.readouterr().out
    ds = Dataset.open(dst)
    np.testing.assert_array_equal(ds.to_arrays()[0], make_arrays("checkerboard", 5000, 4)[0])
    assert main(["data", "info", str(dst), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 5000 and info["features"] == 2 and info["partitions"] == 3
    assert info["classes"] == [-1, 1] and sum(info["class_counts"]) == 5000
    assert info["bytes"] > 0 and info["source"]["generator"] == "checkerboard"
    assert main(["data", "info", str(dst)]) == 0
    text = capsys.readouterr().out
    assert "rows         5,000" in text and "partitions   3" in text


def test_convert_a9a_test_with_n_features(tmp_path, shared_datasets, capsys):
    dst = tmp_path / "a9a_t"
    rc = main(["data", "convert", str(shared_datasets / "a9a/a9a.test.svm.gz"), str(dst),
               "--n-features", "123", "--rows-per-partition", "5000", "--dense",
               "--no-progress"])
    assert rc == 0
    ds = Dataset.open(dst)
    assert (ds.n_rows, ds.n_features, ds.n_partitions, ds.is_sparse) == (16_281, 123, 4, False)


def test_user_errors_exit_2_with_file_and_line(tmp_path, capsys):
    src = tmp_path / "bad.svm"
    src.write_text("1 1:1\n1 3:1 2:1\n")
    assert main(["data", "convert", str(src), str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "bad.svm:2: index 2 is descending" in err
    assert not (tmp_path / "o").exists()
    assert main(["data", "info", str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["data", "make", "twonorm", str(tmp_path / "t"), "--rows", "0",
                 "--no-progress"]) == 2
    assert "rows must be a positive integer" in capsys.readouterr().err
