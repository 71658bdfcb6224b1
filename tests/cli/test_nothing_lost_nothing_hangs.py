"""Issue 18 ("nothing lost, nothing hangs, nothing misleads"), through the console script
``randsvm-dist`` as a user runs it: no default Dask client, on the embedded default or on a
``dask scheduler`` + ``dask worker`` started here on 127.0.0.1. Each test names the
defect it covers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
A9A = ROOT / "tests" / "data" / "a9a_train_3000.svm.gz"
# the console script of the Python running the tests (its bin/ need not be on PATH)
BESIDE_PYTHON = Path(sys.executable).with_name("randsvm-dist")
EXE = str(BESIDE_PYTHON) if BESIDE_PYTHON.exists() else shutil.which("randsvm-dist") or ""
# for scripts that call randsvm-dist by name
SCRIPT_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def run(*args, cwd: Path, timeout: float = 600, env: dict | None = None):
    """``randsvm-dist ARGS`` in a fresh process; returns the CompletedProcess."""
    full = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    full.update({"RANDSVM_DIST_STATE_DIR": str(cwd / ".state"), **(env or {})})
    cmd = [EXE] if EXE else [sys.executable, "-m", "randsvm_dist.cli"]
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(proc, *needles: str) -> None:
    """Exit code 2, one ``randsvm-dist: error:`` line naming every needle, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("randsvm-dist: error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


class DaskCLICluster:
    """``dask scheduler`` and ``dask worker`` (1 process x 1 thread) on 127.0.0.1."""

    def __init__(self, tmp: Path):
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "error"}
        sfile = tmp / "scheduler.json"
        py = [sys.executable, "-m"]
        self.procs = [subprocess.Popen(
            [*py, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sfile)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.monotonic() + 300  # a bound, generous for a loaded machine
        while not sfile.exists():
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.2)
        time.sleep(0.3)
        info = json.loads(sfile.read_text())
        self.address = info["address"]
        self.dashboard = info["services"]["dashboard"]
        self.procs.append(subprocess.Popen(
            [*py, "distributed.cli.dask_worker", self.address, "--nworkers", "1",
             "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(self.address, set_as_default=False, timeout="60s") as c:
            c.wait_for_workers(1, timeout=300)

    def close(self) -> None:
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = DaskCLICluster(tmp_path_factory.mktemp("dask"))
    yield c
    c.close()


STOCK_MODEL = """svm_type c_svc
kernel_type linear
nr_class 2
total_sv 2
rho 0
label 1 -1
nr_sv 1 1
SV
1 1:1 122:0.5
-1 2:1
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """a9a (3,000 rows, 122 features, 2 parts) and a small stock LIBSVM model for it
    (``m.npz``: only a name), made without a cluster."""
    from randsvm_dist.data import convert

    d = tmp_path_factory.mktemp("work")
    convert(A9A, d / "a9a", partitions=2, progress=False)
    (d / "m.npz").write_text(STOCK_MODEL)
    return d


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory nobody can write in (a read-only tmpfs when running as root)."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    if not os.access(d, os.W_OK):
        yield d
        d.chmod(0o755)
        return
    d.chmod(0o755)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot make a read-only directory as root here")
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], capture_output=True)


# --- 1. grid: "No clients found" ----------------------------------------------------------
def test_grid_with_libsvm_folds_on_a_dask_cli_cluster(cluster, work, tmp_path):
    args = ["grid", work / "a9a", "--C", "2^0..2^1:1", "--gamma", "2^-5..2^-4:1", "--folds", "2",
            "--no-refine", "--out", tmp_path / "g", "--scheduler", cluster.address, "--json"]
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["solvers"] == ["libsvm"]
    assert (tmp_path / "g" / "grid.csv").read_text().count("\n") == 5  # header + 4 points
    assert run(*args, cwd=tmp_path).returncode == 0  # same command again: resumes


# --- 2. --overwrite deletes user data / output == input -------------------------------------
def test_overwrite_keeps_foreign_files_and_an_output_is_never_an_input(cluster, work,
                                                                           tmp_path):
    at = ["--scheduler", cluster.address]
    out = tmp_path / "pred"
    assert run("predict", work / "m.npz", work / "a9a", out, *at, cwd=tmp_path).returncode == 0
    (out / "notes.md").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "keep.txt").write_text("mine too")
    proc = run("predict", work / "m.npz", work / "a9a", out, "--overwrite", *at, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (out / "notes.md").read_text() == "mine"
    assert (out / "sub" / "keep.txt").read_text() == "mine too"
    one_line_error(run("predict", work / "m.npz", work / "a9a", work / "a9a", "--overwrite",
                       *at, cwd=tmp_path), "lies inside the input")
    one_line_error(run("predict", work / "m.npz", work / "a9a", work / "a9a" / "p", *at,
                       cwd=tmp_path), "input")
    one_line_error(run("data", "convert", A9A, A9A, cwd=tmp_path), "input")
    from randsvm_dist.data import Dataset

    assert Dataset.open(work / "a9a").n_rows == 3000  # the input is untouched
    made = tmp_path / "made"
    assert run("data", "make", "twonorm", made, "--rows", "100", cwd=tmp_path).returncode == 0
    (made / "notes.md").write_text("mine")
    assert run("data", "make", "twonorm", made, "--rows", "50", "--overwrite",
               cwd=tmp_path).returncode == 0
    assert (made / "notes.md").read_text() == "mine"


# --- 3. side outputs without --overwrite; concurrent writers ---------------------------------
def test_side_outputs_refuse_existing_files_and_a_second_writer(work, tmp_path):
    unreachable = ["--scheduler", "tcp://127.0.0.1:9"]  # the check comes before the cluster
    mine = tmp_path / "mine.json"
    mine.write_text("my notes")
    one_line_error(run("evaluate", work / "m.npz", work / "a9a", "--report", mine,
                       *unreachable, cwd=tmp_path), "--report", "exists")
    one_line_error(run("data", "scale", work / "a9a", tmp_path / "s", "--range", mine,
                       *unreachable, cwd=tmp_path), "--range", "exists")
    (tmp_path / "m.model.range").write_text("mine")
    one_line_error(run("train", work / "a9a", "--model", tmp_path / "m.model", "--scale",
                       "minmax", *unreachable, cwd=tmp_path), "range file", "exists")
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "grid.csv").write_text("mine")
    one_line_error(run("grid", work / "a9a", "--out", tmp_path / "g", *unreachable,
                       cwd=tmp_path), "grid.csv", "exists")
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"history": [
        {"iteration": 1, "relative_gap": 0.1, "n_support": 5, "n_violators": 3,
         "sample_size": 10, "solve_seconds": 0.1, "scan_seconds": 0.1}]}))
    (tmp_path / "run.png").write_bytes(b"my picture")
    one_line_error(run("report", run_json, cwd=tmp_path), "--out", "exists")
    assert mine.read_text() == "my notes" and (tmp_path / "run.png").read_bytes() == \
        b"my picture"
    # a second writer of one path: the first holds its lock (here: a live process's)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (tmp_path / ".same.model.randsvm-lock").write_text(json.dumps(
            {"pid": other.pid, "host": socket.gethostname()}))
        one_line_error(run("train", work / "a9a", "--model", tmp_path / "same.model",
                           *unreachable, cwd=tmp_path),
                       "same.model is being written by process", str(other.pid))
    finally:
        other.kill()
        other.wait()


# --- 4. unbounded handshake -------------------------------------------------------------------
def test_a_port_that_is_not_a_scheduler_is_named_at_once(cluster, work, tmp_path):
    for address, what in ((f"tcp://127.0.0.1:{cluster.dashboard}", "HTTP"),
                          ("garbage", "not a Dask scheduler address"),
                          ("tls://127.0.0.1:9", "no certificates")):
        proc = run("evaluate", work / "m.npz", work / "a9a", "--scheduler", address,
                   cwd=tmp_path, timeout=120, env={"RANDSVM_DIST_TIMEOUT": "20"})
        one_line_error(proc, what)
    proc = run("evaluate", work / "m.npz", work / "a9a", "--scheduler",
               f"tcp://127.0.0.1:{cluster.dashboard}", cwd=tmp_path, timeout=120)
    one_line_error(proc, f"tcp://127.0.0.1:{cluster.dashboard}: it answered but is not a "
                         "Dask scheduler (HTTP")


# --- 5. a flipped bit in a Parquet part -------------------------------------------------------
def test_a_flipped_bit_in_a_part_is_refused_on_the_workers(cluster, work, tmp_path):
    shutil.copytree(work / "a9a", tmp_path / "d")
    part = tmp_path / "d" / "part-00001.parquet"
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    part.write_bytes(bytes(raw))
    one_line_error(run("evaluate", work / "m.npz", tmp_path / "d", "--scheduler",
                       cluster.address, cwd=tmp_path), "part-00001.parquet", "checksum")
    one_line_error(run("data", "info", tmp_path / "d", cwd=tmp_path), "part-00001.parquet")


# --- 7. jobs cancel / status ------------------------------------------------------------------
def test_cancel_stops_a_running_job_and_status_reports_failure(cluster, tmp_path):
    from randsvm_dist.data import make

    # large enough that the fit is still running when the cancel (a command-line start of
    # a few seconds) reaches it: a job that ends first keeps its model
    make("checkerboard", tmp_path / "big", rows=200000, partitions=4, seed=3, progress=False)
    jd = tmp_path / "jobs"
    at = ["--scheduler", cluster.address, "--job-dir", jd]
    proc = run("submit", "train", tmp_path / "big", "--model", tmp_path / "j.model", "--C",
               "10", "--gamma", "1", "--sample-size", "500", "--max-iter", "400",
               "--gap-tol", "0", *at, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout)["job_id"]
    from randsvm_dist import jobs

    deadline = time.monotonic() + 300
    while "iter" not in jobs.logs(str(jd), job):  # the solve is under way
        assert time.monotonic() < deadline and jobs.status(str(jd), job)["state"] in (
            "submitted", "running"), jobs.status(str(jd), job)
        time.sleep(0.2)
    proc = run("jobs", "cancel", job, *at, cwd=tmp_path)
    assert proc.returncode == 0 and "cancelled" in proc.stdout, proc.stderr
    assert run("jobs", "status", job, *at, cwd=tmp_path).returncode == 3
    final = jobs.wait(str(jd), job, timeout=300)  # the driver itself records its stop
    assert final["state"] == "cancelled"
    while "--- cancelled" not in jobs.logs(str(jd), job):
        assert time.monotonic() < deadline + 300
        time.sleep(0.2)
    assert not (tmp_path / "j.model").exists()
    # a failed job: status exits 1
    (tmp_path / "bad.npz").write_bytes(b"PK not a model")
    proc = run("submit", "predict", tmp_path / "bad.npz", tmp_path / "big", tmp_path / "p",
               *at, "--json", cwd=tmp_path)
    job = json.loads(proc.stdout)["job_id"]
    assert jobs.wait(str(jd), job, timeout=300)["state"] == "failed"
    proc = run("jobs", "status", job, *at, cwd=tmp_path)
    assert proc.returncode == 1 and "failed" in proc.stdout


def test_jobs_imports_nothing_of_the_command_line():
    """jobs/ ran cmd_train & co. with a rebuilt argparse Namespace and imported
    cli.build_parser (a cycle): no import of randsvm_dist.cli anywhere in jobs/, even
    inside a function."""
    import ast

    for f in sorted((ROOT / "randsvm_dist" / "jobs").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.startswith("randsvm_dist.cli")
                        or n == "argparse"], f"{f.name}:{node.lineno}"
        assert "argparse" not in f.read_text(), f.name
    code = ("import sys, randsvm_dist.jobs, randsvm_dist.jobs.runner, randsvm_dist.jobs.store;"
            "print([m for m in sys.modules if m.startswith('randsvm_dist.cli')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# --- 8. raw tracebacks ------------------------------------------------------------------------
def test_user_errors_are_one_line_on_the_embedded_default(work, tmp_path, readonly_dir):
    one_line_error(run("evaluate", tmp_path / "missing.model", work / "a9a", cwd=tmp_path),
                   "missing.model", "not found")
    one_line_error(run("predict", tmp_path / "missing.model", work / "a9a", tmp_path / "p",
                       cwd=tmp_path), "missing.model")
    one_line_error(run("predict", work / "m.npz", work / "a9a", readonly_dir / "p",
                       cwd=tmp_path), "not writable")
    one_line_error(run("data", "make", "twonorm", readonly_dir / "d", "--rows", "10",
                       cwd=tmp_path), str(readonly_dir))
    one_line_error(run("data", "convert", A9A, readonly_dir / "d", cwd=tmp_path),
                   str(readonly_dir))
    one_line_error(run("grid", work / "a9a", "--out", readonly_dir / "g", cwd=tmp_path),
                   str(readonly_dir))
    one_line_error(run("train", work / "a9a", "--model", tmp_path / "m.model", "--checkpoint",
                       readonly_dir / "ck", "--max-iter", "1", cwd=tmp_path),
                   str(readonly_dir))
    # a crafted .npz header
    import io

    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(b"[" * 100000 + b"]" * 100000, dtype=np.uint8))
    (tmp_path / "deep.npz").write_bytes(buf.getvalue())
    one_line_error(run("evaluate", tmp_path / "deep.npz", work / "a9a", cwd=tmp_path),
                   "deep.npz")
    # an internal error: one line and exit 1; the traceback only with --debug
    proc = run("report", tmp_path / "deep.npz", "--out", tmp_path / "x.png", cwd=tmp_path)
    assert "Traceback" not in proc.stderr


# --- 9. cluster start/stop races --------------------------------------------------------------
def test_cluster_stop_on_a_dead_address_and_the_state_lock(tmp_path):
    state = tmp_path / ".state"
    state.mkdir()
    (state / "cluster.json").write_text(json.dumps({"address": "tcp://127.0.0.1:9",
                                                    "pids": [], "log": "x"}))
    proc = run("cluster", "stop", cwd=tmp_path)
    assert proc.returncode == 1 and "no cluster answered at tcp://127.0.0.1:9" in proc.stderr
    assert proc.stdout.strip() == "unset RANDSVM_DIST_SCHEDULER"  # eval "$(... stop)"
    assert not (state / "cluster.json").exists()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (state / ".cluster.json.randsvm-lock").write_text(json.dumps(
            {"pid": other.pid, "host": socket.gethostname()}))
        for action in ("start", "stop"):
            one_line_error(run("cluster", action, cwd=tmp_path), "another 'randsvm-dist "
                                                                  "cluster start/stop'")
    finally:
        other.kill()
        other.wait()


def test_eval_cluster_stop_unsets_the_variable(tmp_path):
    script = (f'eval "$({EXE} cluster start --workers 1)"; test -n "$RANDSVM_DIST_SCHEDULER"'
              f' || exit 3; eval "$({EXE} cluster stop)"; '
              'test -z "${RANDSVM_DIST_SCHEDULER+set}" || exit 4')
    env = {**os.environ, "RANDSVM_DIST_STATE_DIR": str(tmp_path / "st"), "PATH": SCRIPT_PATH}
    env.pop("RANDSVM_DIST_SCHEDULER", None)
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr


# --- 10. a newcomer's friction ------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["data", "make", "--help"],
                                  ["grid", "--help"], ["cluster", "--help"], ["train"],
                                  ["evaluate", "m"], ["nosuchcommand"]])
def test_help_and_argument_errors_import_no_dask_numba_sklearn(argv):
    code = ("import sys\nfrom randsvm_dist.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nheavy = {'dask', 'distributed', 'numba', 'sklearn'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


def test_help_texts(tmp_path):
    proc = run("cluster", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "``" not in proc.stdout
    proc = run("data", "info", "--help", cwd=tmp_path)
    assert "DATA" in proc.stdout and "dst" not in proc.stdout


def test_numba_functions_are_cached():
    import ast

    for f in (ROOT / "randsvm_dist").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    src = ast.unparse(d)
                    if "jit" in src:
                        assert "cache=True" in src, f"{f}:{node.lineno} {src}"


def test_quick_tour_outputs_are_ignored_by_git():
    ignored = (ROOT / ".gitignore").read_text()
    for name in ("cb-train/", "cb-test/", "cb.model", "predictions/", "report.json",
                 "scratch/"):
        assert name in ignored, name


def test_python_shows_the_iteration_lines_in_interactive_sessions(tmp_path):
    """fit() in Python printed nothing while the CLI showed each iteration."""
    script = tmp_path / "s.py"
    script.write_text("import logging, randsvm_dist\n"
                      "logging.getLogger('randsvm_dist').info('iter  1 the line')\n")
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_PROGRESS"}
    quiet = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env)
    shown = subprocess.run([sys.executable, "-i", str(script)], capture_output=True,
                           text=True, env=env, stdin=subprocess.DEVNULL)
    assert "the line" not in quiet.stderr  # a script stays quiet
    assert "iter  1 the line" in shown.stderr  # the prompt shows progress
    off = subprocess.run([sys.executable, "-i", str(script)], capture_output=True, text=True,
                         env={**env, "RANDSVM_DIST_PROGRESS": "0"}, stdin=subprocess.DEVNULL)
    assert "the line" not in off.stderr


@pytest.mark.heavy
def test_practical_guide_runs_on_a_clone_twice_in_a_row(tmp_path):
    """workflows/practical_guide.sh read ../../shared and died with a raw FileNotFoundError on
    a clone; now it runs on the committed a9a sample, into one scratch dir, twice."""
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    env.update(OUT=str(tmp_path / "out"), SRC="a9a", PATH=SCRIPT_PATH)
    for _ in range(2):
        proc = subprocess.run(["bash", str(ROOT / "workflows" / "practical_guide.sh")],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1800)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "test accuracy: unscaled default" in proc.stdout
    assert not [p for p in ROOT.iterdir() if p.name in ("guide-out", "out")]


def test_readme_python_example_runs_twice(tmp_path):
    """The README's data lines (make ... overwrite=True) run again without an error."""
    readme = (ROOT / "README.md").read_text()
    lines = [ln for ln in readme.splitlines() if ln.startswith(("make(", "     overwrite"))]
    assert lines and all("overwrite=True" in " ".join(lines).split("make(")[i]
                         for i in range(1, " ".join(lines).count("make(") + 1))
    code = ("from randsvm_dist.data import make\n" + "\n".join(lines).replace(
        "200_000", "2_000").replace("20_000", "500"))
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                       capture_output=True)


def test_zero_row_part_with_copied_metadata(cluster, tmp_path):
    """A 0-row part whose metadata was copied from a full one: `data info` said
    '208400.0%' and train failed with a TypeError."""
    from randsvm_dist.data import make_arrays
    from randsvm_dist.data.publish import AtomicDir
    from randsvm_dist.data.writer import partition_table, write_table

    X, y = make_arrays("checkerboard", 2000, seed=1)
    table = partition_table(X, y)
    with AtomicDir(tmp_path / "zr") as out:
        write_table(table, out.path("part-00000.parquet"))
        write_table(table.slice(0, 0), out.path("part-00001.parquet"))
        out.commit()
    proc = run("data", "info", tmp_path / "zr", "--json", cwd=tmp_path)
    info = json.loads(proc.stdout)
    assert info["rows"] == 2000 and sum(info["class_counts"]) == 2000
    proc = run("train", tmp_path / "zr", "--model", tmp_path / "m.model", "--C", "10",
               "--gamma", "1", "--scheduler", cluster.address, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
