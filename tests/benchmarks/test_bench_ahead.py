"""benchmarks/bench_ahead.py's plumbing: earlier peer figures reused as such, and an engine
that outlives --timeout stopped with everything it started."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_ahead  # noqa: E402
from bench_engines import run_child, set_kind  # noqa: E402


def test_earlier_peers_come_from_both_result_formats_and_say_where(tmp_path):
    ahead = tmp_path / "ahead.jsonl"
    ahead.write_text("".join(json.dumps(r) + "\n" for r in [
        {"set": "ijcnn1", "date": "d1", "engines": {
            "libsvm": {"seconds": 9.0}, "sklearnex": {"seconds": 2.0},
            "randsvm": {"seconds": 1.0}}},
        {"set": "ijcnn1", "date": "d2", "engines": {"libsvm": {"seconds": 5.0}}},
        {"set": "a9a", "date": "d3", "engines": {"libsvm": {"seconds": 7.0,
                                                            "reference": True}}},
    ]))
    family = tmp_path / "svm_family.jsonl"
    family.write_text(json.dumps({"part": "friedman", "n": 300000, "baseline": "libsvm",
                                  "date": "d4", "libsvm": {"seconds": 240.0, "r2": 0.95}})
                      + "\n")
    files = [str(ahead), str(family)]
    got = bench_ahead.earlier_peers(files, "ijcnn1")
    assert got["libsvm"]["seconds"] == 5.0 and got["libsvm"]["reused"]["date"] == "d2"
    assert got["sklearnex"]["reused"] == {"file": "ahead.jsonl", "date": "d1"}
    assert "randsvm" not in got
    assert bench_ahead.earlier_peers(files, "a9a") == {}  # a reference is not a run
    assert bench_ahead.earlier_peers(files, "friedman1:300000")["libsvm"]["r2"] == 0.95
    assert bench_ahead.earlier_peers(files, "friedman1:100000") == {}


def test_set_kinds():
    assert set_kind("fmnist10") == "classification"
    assert set_kind("nyc_delayed:50000") == "classification"
    assert set_kind("nyc_airtime") == "regression"
    assert set_kind("oneclass:100000") == "one_class"


def test_a_timed_out_engine_is_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    t0 = time.perf_counter()
    out = run_child([sys.executable, "-c", code], tmp_path / "log", timeout=3)
    assert out == {"timed_out": 3.0} and time.perf_counter() - t0 < 30
    grandchild = int(pid_file.read_text())
    stat = Path(f"/proc/{grandchild}/stat")
    for _ in range(50):  # gone, or a zombie waiting for init to reap it
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.1)
    raise AssertionError(f"process {grandchild} outlived the timeout")


def test_a_failing_engine_is_an_error_not_a_time(tmp_path):
    out = run_child([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "log")
    assert out["error"].startswith("failed (exit 3)")
