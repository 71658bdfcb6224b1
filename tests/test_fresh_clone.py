"""What a fresh clone has: the committed fixtures work, and the full-data tests skip cleanly
without ../shared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from randsvm_dist.cli import main
from randsvm_dist.data import Dataset, convert

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name, n_features, shape, counts", [
    ("heart_scale.svm.gz", None, (270, 13), [150, 120]),
    ("a9a_train_3000.svm.gz", 123, (3000, 123), [2266, 734]),
    ("a9a_test_1000.svm.gz", 123, (1000, 123), None),
])
def test_committed_fixtures_convert_like_sklearn(test_data, tmp_path, name, n_features,
                                                 shape, counts):
    src = test_data / name
    assert src.stat().st_size < 100_000  # small enough for the repository
    ds = convert(src, tmp_path / "out", n_features=n_features, partitions=2)
    assert (ds.n_rows, ds.n_features) == shape
    if counts:
        assert ds.classes.tolist() == [-1, 1] and ds.class_counts.tolist() == counts
    Xs, ys = load_svmlight_file(str(src), n_features=n_features)
    X, y = ds.to_arrays()
    np.testing.assert_array_equal(X.toarray(), Xs.toarray().astype(np.float32))
    np.testing.assert_array_equal(y, ys)


def test_a9a_test_subset_needs_n_features(test_data, tmp_path, capsys):
    # the official a9a.t never uses its last features: the width must be given
    assert convert(test_data / "a9a_test_1000.svm.gz", tmp_path / "a").n_features == 121
    assert main(["data", "convert", str(test_data / "a9a_test_1000.svm.gz"),
                 str(tmp_path / "b"), "--n-features", "123", "--dense", "--no-progress"]) == 0
    ds = Dataset.open(tmp_path / "b")
    assert (ds.n_rows, ds.n_features, ds.is_sparse) == (1000, 123, False)


def test_shared_data_tests_skip_with_the_reason_without_shared(tmp_path):
    env = {**os.environ, "RANDSVM_SHARED_DATASETS": str(tmp_path / "no-shared")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/data/test_convert.py", "-k", "real_sets or width_without"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert proc.stdout.startswith("ssssss ") and "passed" not in proc.stdout
    assert proc.stdout.count("no-shared not found") == 2  # reasons, grouped by test
    assert "error" not in proc.stdout.lower()
