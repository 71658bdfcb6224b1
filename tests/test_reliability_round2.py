"""Issue 28 ("no wrong answer, no lost model, no hang": the second careless-user round),
through the console script ``randsvm-dist`` as a user runs it (no default Dask client; the
embedded default of 2 workers x 1 thread, or an address nothing listens on where the check
must come before the cluster), or through the Python API where the defect was in it. Each
test names the item of the issue it covers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_reliability_cli import EXE, one_line_error, run

UNREACHABLE = ["--scheduler", "tcp://127.0.0.1:9"]  # a check that comes before the cluster


def write_weighted(root: Path, X: np.ndarray, y: np.ndarray, w, label=None) -> Path:
    """A two-part Parquet data set with a weight column ``w`` (numbers or strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir()
    half = len(y) // 2
    for part, rows in enumerate((slice(0, half), slice(half, len(y)))):
        cols = {f"f{j}": X[rows, j] for j in range(X.shape[1])}
        pq.write_table(pa.table({**cols, "label": y[rows], "w": w[rows]}),
                       root / f"part-{part}.parquet")
    return root


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """twonorm (100 and 2,000 rows, 2 parts), weighted twonorm (200 rows) whose class -1
    has weight 0, and one whose weights are strings, made without a cluster."""
    from randsvm_dist.data import make, make_arrays

    d = tmp_path_factory.mktemp("sets")
    make("twonorm", d / "tn", rows=100, partitions=2)
    make("twonorm", d / "tn2k", rows=2000, partitions=2)
    X, y = make_arrays("twonorm", 200, seed=3)
    write_weighted(d / "onesided", X, y, np.where(y > 0, 1.0, 0.0))
    write_weighted(d / "strw", X, y, np.array(["heavy"] * len(y)))
    return d


# --- 5. folds > rows / class counts: one line, before any work ------------------------------
def test_5_more_folds_than_rows_refused_before_the_cluster(sets, tmp_path):
    one_line_error(run("grid", sets / "tn", "--folds", "100000", "--out", tmp_path / "g",
                       *UNREACHABLE, cwd=tmp_path), "--folds", "100 rows", "at most 100")
    one_line_error(run("grid", sets / "tn", "--folds", "1", *UNREACHABLE, cwd=tmp_path),
                   "--folds must be >= 2")
    assert not (tmp_path / "g").exists()


def test_5_more_folds_than_the_largest_class_refused_before_any_fold(sets, tmp_path):
    """60 folds of 100 rows, 50 per class: some fold would hold no row (it was
    "internal error: ValueError: cannot convert float NaN to integer")."""
    proc = run("grid", sets / "tn", "--folds", "60", "--no-refine", "--C", "2^0..2^1:1",
               "--gamma", "2^-3..2^-2:1", "--out", tmp_path / "g", cwd=tmp_path)
    one_line_error(proc, "n_folds=60", "largest class", "use at most")
    assert not (tmp_path / "g" / "folds.csv").exists()  # no fold was solved


def test_5_sigterm_stops_the_command_its_cluster_and_its_locks(sets, tmp_path):
    """SIGTERM (what `kill` and a job system send): one line, exit 143, no lock left and no
    process of the embedded cluster outliving the command."""
    import psutil

    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    env["RANDSVM_DIST_STATE_DIR"] = str(tmp_path / ".state")
    proc = subprocess.Popen([EXE, "grid", str(sets / "tn2k"), "--folds", "5", "--out",
                             str(tmp_path / "g"), "--model", str(tmp_path / "m.model")],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    children: list = []
    while time.monotonic() < deadline and len(children) < 2:  # the scheduler and workers
        children = psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.2)
    assert proc.poll() is None and len(children) >= 2
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "randsvm-dist: terminated (SIGTERM)", err
    assert "Traceback" not in err
    assert not list(tmp_path.rglob("*randsvm-lock*"))
    gone, alive = psutil.wait_procs(children, timeout=60)
    assert not alive, [p.cmdline() for p in alive]


# --- 6. positive weights all in one class ---------------------------------------------------
def test_6_positive_weights_of_one_class_refused_in_python(dask_client):
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays
    from randsvm_dist.exceptions import SchemaError

    X, y = make_arrays("twonorm", 300, seed=1)
    with pytest.raises(SchemaError, match="positive sample weights belong to class 1"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=(y > 0))
    with pytest.raises(SchemaError, match="zero or negative sample weights"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=np.zeros(len(y)))


def test_6_a_weight_column_of_one_class_refused_on_the_command_line(sets, tmp_path):
    proc = run("train", sets / "onesided", "--weight-column", "w", "--model",
               tmp_path / "m.model", cwd=tmp_path)
    one_line_error(proc, "positive sample weights belong to class 1")
    assert not (tmp_path / "m.model").exists()


# --- 9. each "internal error" is a one-line user error --------------------------------------
def test_9_former_internal_errors_are_one_line_errors(sets, tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("label,a,b\n1,0.5,1\n-1,0.2,0\n")
    for bad in ("-1", "0"):
        one_line_error(run("data", "convert", csv, tmp_path / f"o{bad}",
                           "--rows-per-partition", bad, cwd=tmp_path),
                       "rows_per_partition must be a positive integer")
    one_line_error(run("train", sets / "tn", "--weight-column", "label", "--model",
                       tmp_path / "m.model", *UNREACHABLE, cwd=tmp_path),
                   "weight column 'label' is the label column")
    one_line_error(run("train", sets / "strw", "--weight-column", "w", "--model",
                       tmp_path / "m.model", *UNREACHABLE, cwd=tmp_path),
                   "weight column 'w' holds string, not numbers")
    run_json = tmp_path / "r.json"
    run_json.write_text(json.dumps({"history": [
        {"iteration": 1, "relative_gap": 0.1, "n_support": 5, "n_violators": 3,
         "sample_size": 10, "solve_seconds": 0.1, "scan_seconds": 0.1}]}))
    one_line_error(run("report", run_json, "--out", tmp_path / "cb.model", "--overwrite",
                       cwd=tmp_path), "--out", ".model is none of")
    import pickle

    (tmp_path / "p.model").write_bytes(pickle.dumps({"not": "a model"}))
    one_line_error(run("evaluate", tmp_path / "p.model", sets / "tn", "--allow-pickle",
                       cwd=tmp_path), "holds a dict, not a fitted model")


# --- 10. a C that overflows: refused, never "optimal" ---------------------------------------
def test_10_a_c_that_overflows_is_refused(sets, tmp_path):
    proc = run("train", sets / "tn", "--C", "1e308", "--model", tmp_path / "m.model",
               cwd=tmp_path)
    one_line_error(proc, "C=1e+308", "largest float64")
    assert "optimal" not in proc.stdout and not (tmp_path / "m.model").exists()


def test_10_a_non_finite_certificate_is_an_error():
    from randsvm_dist.exact.driver import finite
    from randsvm_dist.exact.steps import Certificate
    from randsvm_dist.exceptions import ParameterError

    class Solver:
        C = 1e300

    class Problem:
        solver = Solver()

    ok = Certificate(1.0, 0.5, 0.5, 0.1)
    assert finite(ok, Problem()) is ok
    with pytest.raises(ParameterError, match="not a finite number"):
        finite(Certificate(float("nan"), float("nan"), float("nan"), float("nan")),
               Problem())


# --- 11. negative exponents; the parser's own message ---------------------------------------
@pytest.mark.parametrize("value, needle", [
    ("-5,15,0", "the step must be non-zero"),   # grid.py's form, parsed (was: expected one
    ("-1..1:1", "expected '2^A..2^B'"),          # argument); the parser's message shown
])
def test_11_grid_ranges_starting_with_minus_reach_the_parser(sets, tmp_path, value, needle):
    proc = run("grid", sets / "tn", "--C", value, cwd=tmp_path)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert "expected one argument" not in proc.stderr


def test_11_negative_exponents_are_accepted(sets, tmp_path):
    proc = run("grid", sets / "tn", "--C", "-5,-3,2", "--gamma", "2^-3..2^-2:1", "--folds",
               "2", "--no-refine", "--out", tmp_path / "g", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["points"] == 4


# --- 8 and the cluster's export line --------------------------------------------------------
def test_8_submit_uses_the_variable_and_a_second_start_prints_the_export_line(sets,
                                                                               tmp_path):
    env = {"RANDSVM_DIST_STATE_DIR": str(tmp_path / ".state")}
    started = run("cluster", "start", "--workers", "2", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stderr
    export = started.stdout.strip()
    try:
        again = run("cluster", "start", cwd=tmp_path, env=env)
        assert again.returncode == 0 and again.stdout.strip() == export, again.stderr
        address = export.partition("=")[2]
        env["RANDSVM_DIST_SCHEDULER"] = address  # what eval "$(... cluster start)" sets
        proc = run("submit", "train", sets / "tn", "--model", tmp_path / "m.model",
                   "--job-dir", tmp_path / "jobs", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        from randsvm_dist import jobs

        job = proc.stdout.split()[0]
        assert jobs.wait(str(tmp_path / "jobs"), job, timeout=600)["state"] == "done"
        assert (tmp_path / "m.model").exists()
    finally:
        run("cluster", "stop", cwd=tmp_path, env=env)
