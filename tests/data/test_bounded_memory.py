"""Large-size checks (run with ``pytest -m heavy``): bounded memory at 10M rows."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from randsvm_dist.data import Dataset, make_arrays

pytestmark = pytest.mark.heavy

# A fresh wrapper process whose only child is the command: its RUSAGE_CHILDREN peak RSS is
# the command's own (like /usr/bin/time -v, which not every machine has).
WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print('peak_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def _peak_rss_mib(args: list[str]) -> float:
    cmd = [sys.executable, "-c", WRAPPER, sys.executable, "-m", "randsvm_dist.cli", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return int(re.search(r"peak_kib (\d+)", proc.stdout)[1]) / 1024


def test_make_10m_checkerboard_under_1gb(tmp_path):
    dst = tmp_path / "cb"
    rss = _peak_rss_mib(["data", "make", "checkerboard", str(dst), "--rows", "10000000",
                         "--partitions", "40", "--seed", "0", "--no-progress"])
    assert rss < 1024
    ds = Dataset.open(dst)
    assert (ds.n_rows, ds.n_partitions, ds.n_features) == (10_000_000, 40, 2)
    X, y = ds.read_partition(39)
    Xr, yr = make_arrays("checkerboard", len(y), 0, start=10_000_000 - len(y))
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(y, yr)


def test_convert_3m_row_svmlight_under_1gb(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_data import write_svmlight

    src = tmp_path / "cl5.svm"
    write_svmlight("clusters5", 3_000_000, src)
    for extra in (["--sparse"], ["--dense", "--partitions", "6"]):
        dst = tmp_path / "out"
        rss = _peak_rss_mib(["data", "convert", str(src), str(dst), *extra, "--no-progress"])
        assert rss < 1024
        ds = Dataset.open(dst)
        assert (ds.n_rows, ds.n_features) == (3_000_000, 5)
        X, y = ds.read_partition(ds.n_partitions - 1)
        Xr, yr = make_arrays("clusters5", len(y), 0, start=3_000_000 - len(y))
        np.testing.assert_array_equal(X.toarray() if hasattr(X, "toarray") else X, Xr)
        np.testing.assert_array_equal(y, yr)
        shutil.rmtree(dst)
