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
import time
from pathlib import Path

import numpy as np
import pytest
from test_nothing_lost_nothing_hangs import EXE, one_line_error, run

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
def test_more_folds_than_rows_refused_before_the_cluster(sets, tmp_path):
    one_line_error(run("grid", sets / "tn", "--folds", "100000", "--out", tmp_path / "g",
                       *UNREACHABLE, cwd=tmp_path), "--folds", "100 rows", "at most 100")
    one_line_error(run("grid", sets / "tn", "--folds", "1", *UNREACHABLE, cwd=tmp_path),
                   "--folds must be >= 2")
    assert not (tmp_path / "g").exists()


def test_more_folds_than_the_largest_class_refused_before_any_fold(sets, tmp_path):
    """60 folds of 100 rows, 50 per class: some fold would hold no row (it was
    "internal error: ValueError: cannot convert float NaN to integer")."""
    proc = run("grid", sets / "tn", "--folds", "60", "--no-refine", "--C", "2^0..2^1:1",
               "--gamma", "2^-3..2^-2:1", "--out", tmp_path / "g", cwd=tmp_path)
    one_line_error(proc, "n_folds=60", "largest class", "use at most")
    assert not (tmp_path / "g" / "folds.csv").exists()  # no fold was solved


def busy_grid(sets, tmp_path: Path) -> tuple[subprocess.Popen, list]:
    """``grid`` on 2,000 rows, started and running on its embedded cluster; with the
    cluster's processes."""
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
    return proc, children


def test_sigkill_leaves_no_process_of_the_embedded_cluster(sets, tmp_path):
    """The driver killed outright: its scheduler stops itself (within seconds even when
    busy with tasks) and the workers follow."""
    import psutil

    proc, children = busy_grid(sets, tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    _, alive = psutil.wait_procs(children, timeout=120)
    assert not alive, [p.cmdline() for p in alive]


def test_sigterm_stops_the_command_its_cluster_and_its_locks(sets, tmp_path):
    """SIGTERM (what `kill` and a job system send): one line, exit 143, no lock left and no
    process of the embedded cluster outliving the command."""
    import psutil

    proc, children = busy_grid(sets, tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "randsvm-dist: terminated (SIGTERM)", err
    assert "Traceback" not in err
    assert not list(tmp_path.rglob("*randsvm-lock*"))
    gone, alive = psutil.wait_procs(children, timeout=60)
    assert not alive, [p.cmdline() for p in alive]


# --- 6. positive weights all in one class ---------------------------------------------------
def test_positive_weights_of_one_class_refused_in_python(dask_client):
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays
    from randsvm_dist.exceptions import ParameterError, SchemaError

    X, y = make_arrays("twonorm", 300, seed=1)
    with pytest.raises(SchemaError, match="positive sample weights belong to class 1"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=(y > 0))
    with pytest.raises(ParameterError, match="zero or negative sample weights"):
        RandSVMClassifier(client=dask_client).fit(X, y, sample_weight=np.zeros(len(y)))


def test_a_weight_column_of_one_class_refused_on_the_command_line(sets, tmp_path):
    proc = run("train", sets / "onesided", "--weight-column", "w", "--model",
               tmp_path / "m.model", cwd=tmp_path)
    one_line_error(proc, "positive sample weights belong to class 1")
    assert not (tmp_path / "m.model").exists()


# --- 9. each "internal error" is a one-line user error --------------------------------------
def test_former_internal_errors_are_one_line_errors(sets, tmp_path):
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
def test_a_c_that_overflows_is_refused(sets, tmp_path):
    proc = run("train", sets / "tn", "--C", "1e308", "--model", tmp_path / "m.model",
               cwd=tmp_path)
    one_line_error(proc, "C=1e+308", "largest float64")
    assert "optimal" not in proc.stdout and not (tmp_path / "m.model").exists()


def test_a_non_finite_certificate_is_an_error():
    from randsvm_dist.exact.certificate import Certificate
    from randsvm_dist.exact.driver import finite
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
def test_grid_ranges_starting_with_minus_reach_the_parser(sets, tmp_path, value, needle):
    proc = run("grid", sets / "tn", "--C", value, cwd=tmp_path)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert "expected one argument" not in proc.stderr


def test_negative_exponents_are_accepted(sets, tmp_path):
    proc = run("grid", sets / "tn", "--C", "-5,-3,2", "--gamma", "2^-3..2^-2:1", "--folds",
               "2", "--no-refine", "--out", tmp_path / "g", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["points"] == 4


# --- 8 and 2: submit uses the variable; a job claims its output at submit -----------------
def test_submit_uses_the_variable_and_jobs_claim_their_model(sets, tmp_path):
    env = {"RANDSVM_DIST_STATE_DIR": str(tmp_path / ".state")}
    started = run("cluster", "start", "--workers", "2", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stderr
    export = started.stdout.strip()
    try:
        again = run("cluster", "start", cwd=tmp_path, env=env)  # prints the export line
        assert again.returncode == 0 and again.stdout.strip() == export, again.stderr
        env["RANDSVM_DIST_SCHEDULER"] = export.partition("=")[2]  # what eval "$(...)" sets
        submit = ["submit", "train", sets / "tn2k", "--model", tmp_path / "m.model",
                  "--job-dir", tmp_path / "jobs"]
        first = run(*submit, cwd=tmp_path, env=env)
        assert first.returncode == 0, first.stderr  # no --scheduler: the variable's
        job = first.stdout.split()[0]
        second = run(*submit, cwd=tmp_path, env=env)
        from randsvm_dist import jobs

        if second.returncode == 0:  # the first was done already: the second fails to publish
            late = jobs.wait(str(tmp_path / "jobs"), second.stdout.split()[0], timeout=600)
            assert late["state"] == "failed" and "exists" in late["error"], late
        elif "exists" in second.stderr:  # the first had published it: the file is there
            one_line_error(second, "m.model", "exists")
        else:
            one_line_error(second, "m.model", f"output of job {job}")
        assert jobs.wait(str(tmp_path / "jobs"), job, timeout=600)["state"] == "done"
        assert "model written to" in jobs.logs(str(tmp_path / "jobs"), job)
        assert len(jobs.list_jobs(str(tmp_path / "jobs"))) in (1, 2)
    finally:
        run("cluster", "stop", cwd=tmp_path, env=env)


# --- 1. the grid's results are another search's unless data, folds and settings match ----
def test_grid_results_of_another_data_set_are_not_reused(sets, tmp_path):
    from randsvm_dist.data import make

    make("twonorm", tmp_path / "other", rows=100, partitions=2, seed=7)
    grid = ["--C", "2^0..2^1:1", "--gamma", "2^-3..2^-2:1", "--folds", "2", "--no-refine",
            "--out", tmp_path / "g", "--json"]
    first = run("grid", sets / "tn", *grid, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    table = (tmp_path / "g" / "grid.csv").read_text()
    one_line_error(run("grid", tmp_path / "other", *grid, *UNREACHABLE, cwd=tmp_path),
                   "holds the results of another search")
    three_folds = [*grid[:5], "3", *grid[6:]]
    one_line_error(run("grid", sets / "tn", *three_folds, *UNREACHABLE, cwd=tmp_path),
                   "another search")  # other folds
    assert (tmp_path / "g" / "grid.csv").read_text() == table  # nothing replaced
    again = run("grid", sets / "tn", *grid, cwd=tmp_path)  # the same search: resumes
    assert again.returncode == 0 and json.loads(again.stdout)["cv_score"] == \
        json.loads(first.stdout)["cv_score"]
    other = run("grid", tmp_path / "other", *grid, "--overwrite", cwd=tmp_path)
    assert other.returncode == 0, other.stderr  # starts over, on its own folds
    rows = (tmp_path / "g" / "folds.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 4 and len({r.rsplit(",", 1)[1] for r in rows[1:]}) == 1


# --- 3, 4, 7: one output plan, before any work ---------------------------------------------
def test_two_outputs_of_one_command_on_one_path_refused_first(sets, tmp_path):
    model = tmp_path / "m.model"
    for extra in (["--report", model, "--overwrite"],
                  ["--scale", "minmax", "--report", f"{model}.range"]):
        one_line_error(run("train", sets / "tn", "--model", model, *extra, *UNREACHABLE,
                           cwd=tmp_path), "same path")
    one_line_error(run("grid", sets / "tn", "--out", tmp_path / "g", "--model",
                       tmp_path / "g", *UNREACHABLE, cwd=tmp_path), "same path")
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]


STOCK_MODEL = "svm_type c_svc\nkernel_type linear\nnr_class 2\ntotal_sv 2\nrho 0\n" \
    "label 1 -1\nnr_sv 1 1\nSV\n1 1:1\n-1 2:1\n"


def test_overwrite_replaces_only_files_randsvm_dist_wrote(sets, tmp_path):
    from randsvm_dist.data import make

    (tmp_path / "stock.model").write_text(STOCK_MODEL)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    make("twonorm", tmp_path / "another", rows=50, partitions=1)
    manifest = tmp_path / "another" / "_manifest.json"
    before = manifest.read_bytes()
    for target, needle in ((notes, "not a file randsvm-dist writes"),
                           (manifest, "a file of the data set")):
        one_line_error(run("evaluate", tmp_path / "stock.model", sets / "tn", "--report",
                           target, "--overwrite", *UNREACHABLE, cwd=tmp_path), needle)
        one_line_error(run("data", "scale", sets / "tn", tmp_path / "s", "--range", target,
                           "--overwrite", *UNREACHABLE, cwd=tmp_path), needle)
    picture = tmp_path / "mine.png"
    picture.write_text("not a picture")
    one_line_error(run("report", tmp_path / "r.json", "--out", picture, "--overwrite",
                       cwd=tmp_path), "not a file randsvm-dist writes")
    assert notes.read_text() == "my notes" and manifest.read_bytes() == before
    assert picture.read_text() == "not a picture"


def test_checkpoint_contents_and_paths_checked_before_any_work(sets, tmp_path):
    ckpt = tmp_path / "ck"
    ckpt.mkdir()
    (ckpt / "state.npz").write_bytes(b"my own arrays")
    one_line_error(run("train", sets / "tn", "--model", tmp_path / "m.model", "--checkpoint",
                       ckpt, "--overwrite", *UNREACHABLE, cwd=tmp_path),
                   "not a randsvm-dist checkpoint")
    same = tmp_path / "X"
    one_line_error(run("train", sets / "tn", "--model", same, "--checkpoint", same,
                       *UNREACHABLE, cwd=tmp_path), "same path")
    assert not same.exists() and (ckpt / "state.npz").read_bytes() == b"my own arrays"


# --- 13. the Python API's save follows the same rule ---------------------------------------
def test_save_refuses_what_it_did_not_write(sets, dask_client, tmp_path):
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays
    from randsvm_dist.exceptions import DataFormatError

    X, y = make_arrays("twonorm", 200, seed=2)
    est = RandSVMClassifier(client=dask_client, scale="minmax").fit(X, y)
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(DataFormatError, match="exists; choose a new path or pass overwrite"):
        est.save(notes)
    with pytest.raises(DataFormatError, match="not a file randsvm-dist writes"):
        est.save(notes, overwrite=True)
    part = next((sets / "tn").glob("part-*.parquet"))
    with pytest.raises(DataFormatError, match="a file of the data set"):
        est.save(part, overwrite=True)
    model = tmp_path / "m.model"
    est.save(model)
    est.save(model, overwrite=True)  # its own file (and its .range)
    (tmp_path / "m2.model.range").write_text("mine")
    with pytest.raises(DataFormatError, match="range file"):
        est.save(tmp_path / "m2.model", overwrite=True)
    assert notes.read_text() == "mine" and not (tmp_path / "m2.model").exists()


# --- 14. the guide's last step: a model's scaling applied to sparse rows -------------------
def test_the_guides_last_step_evaluates_sparse_rows_with_the_models_scaling(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    from randsvm_dist.data import make_arrays

    X, y = make_arrays("twonorm", 600, seed=5)
    dump_svmlight_file(X[:400], y[:400], str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[400:], y[400:], str(tmp_path / "test.svm"), zero_based=False)
    for name in ("train", "test"):  # svmlight text: the sparse layout
        assert run("data", "convert", tmp_path / f"{name}.svm", tmp_path / name,
                   cwd=tmp_path).returncode == 0
    trained = run("train", tmp_path / "train", "--scale", "minmax", "--model",
                  tmp_path / "m.model", "--test", tmp_path / "test", "--json", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    proc = run("evaluate", tmp_path / "m.model", tmp_path / "test", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["accuracy"] == json.loads(trained.stdout)["test"]["accuracy"]
    assert json.loads(proc.stdout)["accuracy"] > 0.9


def test_a_scaling_that_moves_zeros_scales_csr_rows_as_dense_ones():
    import scipy.sparse as sp

    from randsvm_dist.distributed.scaling import FeatureScaler

    X = np.array([[0.0, 2.0], [1.0, 0.0], [3.0, 4.0]], np.float32)
    scaler = FeatureScaler.from_parameters(-1.0, 1.0, np.zeros(2), np.array([3.0, 4.0]))
    np.testing.assert_array_equal(scaler.transform(sp.csr_matrix(X)), scaler.transform(X))


# --- 12. the model file carries every digit: stock LIBSVM computes the model's values ------
def test_stock_libsvm_computes_the_saved_models_float64_values(dask_client, tmp_path):
    import scipy.sparse as sp
    from libsvm.svmutil import svm_load_model, svm_predict

    from randsvm_dist.data import make_arrays
    from randsvm_dist.estimators import RandSVMOneClass

    X, y = make_arrays("twonorm", 1000, seed=3)
    est = RandSVMOneClass(nu=0.1, gamma=0.05, client=dask_client, random_state=0).fit(X, y)
    est.save(tmp_path / "m.model")
    _, _, values = svm_predict(np.zeros(len(X)), sp.csr_matrix(X.astype(np.float64)),
                               svm_load_model(str(tmp_path / "m.model")), "-q")
    sv = np.asarray(est.support_vectors_, np.float64)
    X64 = X.astype(np.float64)
    d2 = (X64 ** 2).sum(1)[:, None] + (sv ** 2).sum(1)[None, :] - 2 * X64 @ sv.T
    exact = np.exp(-0.05 * np.maximum(d2, 0)) @ np.asarray(est.dual_coef_).ravel() \
        + float(np.ravel(est.intercept_)[0])
    np.testing.assert_allclose(np.asarray(values)[:, 0], exact, rtol=0, atol=1e-7)


# --- the smaller ones: parameter errors first, plain numbers in messages -------------------
def test_smaller_parameter_errors_before_the_cluster_and_plain_numbers(sets, tmp_path):
    one_line_error(run("train", sets / "tn", "--C", "0", "--model", tmp_path / "m.model",
                       *UNREACHABLE, cwd=tmp_path), "'C' parameter", "Got 0.0")
    from randsvm_dist.core.validation import check_sample_weight
    from randsvm_dist.exceptions import ParameterError

    with pytest.raises(ParameterError, match=r"row 1: nan is not a finite number") as e:
        check_sample_weight(np.array([1.0, np.nan]), 2)
    assert "np." not in str(e.value)
