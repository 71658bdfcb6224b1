"""Classification as LIBSVM and scikit-learn users expect it (issue 20), side by side.

Three parts, each engine in its own process (its peak memory its own, sampled with psutil
over the process and its children: for RandSVM the driver, the scheduler and the workers):

* ``fmnist``: Fashion-MNIST (60,000 x 784, 10 classes, scaled to [0, 1]; ``--rows N`` a
  stratified subset), C=10, gamma='scale' resolved ONCE on the training rows and passed as
  that number to every engine. One-vs-one RandSVMClassifier (2 single-threaded workers)
  against LIBSVM alone (libsvm-official in its own process with its default OpenMP
  threads, run first, before any Dask cluster exists: ``bench_randsvm.run_libsvm``),
  scikit-learn's ``SVC`` and scikit-learn-intelex's ``SVC`` (oneDAL). Time, test accuracy,
  #SV, worst certified gap, peak memory, and RandSVM's per-pair solve task times (measured
  on the workers, one event per solve task) with the projected fit time for more workers.
* ``w8a``: 3% positives. ``class_weight='balanced'`` and the equivalent ``sample_weight``
  (n / (2 n_class) per row), RandSVM against scikit-learn's ``SVC`` with the same weights:
  the largest decision-value difference on held-out rows, certified gaps.
* ``proba``: ``probability=True`` on a9a and on a Fashion-MNIST subset (10,000 rows):
  log loss and Brier score of RandSVM (computed on the workers by ``evaluate``) against
  ``SVC(probability=True)``, and stock LIBSVM's ``svm_predict(..., '-b 1')`` on RandSVM's
  saved model file against ``predict_proba`` (largest difference).

    python benchmarks/bench_classification.py fmnist --out benchmarks/results/classification.jsonl
    python benchmarks/bench_classification.py fmnist --rows 3000 --engines libsvm randsvm
    python benchmarks/bench_classification.py w8a proba \\
        --out benchmarks/results/classification.jsonl
    python benchmarks/bench_classification.py --report benchmarks/results/classification.jsonl

Time only on a quiet machine: nothing else running (a busy second core slows LIBSVM's
OpenMP threads several times over).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_randsvm import (  # noqa: E402  (the binary benchmark's helpers, reused)
    SCRATCH,
    SHARED,
    _cpu_seconds,
    _warm_up,
    _worker_peak_rss_mb,
    run_libsvm,
)

FMNIST_C = 10.0
A9A = (32.0, 0.008)          # C, gamma: bench_randsvm's a9a figures
W8A_C = 1.0
PAIR_EVENT = "randsvm-bench-pair-task"
PROJECT_WORKERS = (1, 2, 4, 8, 16, 45)
ENGINES = ("libsvm", "randsvm", "svc", "sklearnex")


# -- measuring ---------------------------------------------------------------------------
class PeakMemory:
    """Peak resident memory (MB) of this process and all its children, sampled by psutil
    every ``interval`` seconds in a thread while the ``with`` block runs."""

    def __init__(self, interval: float = 0.05):
        self.interval, self.peak_mb = interval, 0.0
        self._stop = threading.Event()

    def _total_mb(self) -> float:
        import psutil

        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self._total_mb())
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._total_mb())


def _instrument_pair_tasks() -> None:
    """Time every per-pair solve task on its worker (one Dask event each: pair label, solve
    round, seconds) by wrapping the driver's solve steps in this process only. The scans
    are shared by all pairs and timed per iteration in ``history_``."""
    from randsvm_dist.exact import driver, solve_plan, solving

    orig_task, orig_direct_task = solve_plan.solve_working_set_task, solving.solve_partitions
    orig_sampled, orig_direct = driver.solve_sampled, driver.solve_direct
    rounds = [0]

    def timed(fn, round_no: int):
        def task(kind, *args, **kwargs):
            from distributed import get_worker

            t0, c0 = time.perf_counter(), time.thread_time()
            out = fn(kind, *args, **kwargs)
            get_worker().log_event(PAIR_EVENT, {
                "label": kind.label, "round": round_no,
                "seconds": time.perf_counter() - t0, "cpu_seconds": time.thread_time() - c0})
            return out
        return task

    def sampled(*args, **kwargs):
        rounds[0] += 1
        solve_plan.solve_working_set_task = timed(orig_task, rounds[0])
        try:
            return orig_sampled(*args, **kwargs)
        finally:
            solve_plan.solve_working_set_task = orig_task

    def direct(*args, **kwargs):
        rounds[0] += 1
        solving.solve_partitions = timed(orig_direct_task, rounds[0])
        try:
            return orig_direct(*args, **kwargs)
        finally:
            solving.solve_partitions = orig_direct_task

    driver.solve_sampled, driver.solve_direct = sampled, direct


def lpt_makespan(durations: list[float], workers: int) -> float:
    """Makespan of independent tasks on ``workers`` by longest-processing-time-first."""
    loads = [0.0] * workers
    for d in sorted(durations, reverse=True):
        loads[loads.index(min(loads))] += d
    return max(loads)


def pair_summary(events: list[dict], history: list[dict], fit_seconds: float,
                 measured_workers: int) -> dict:
    """Per-pair solve task seconds and the fit time projected for more workers.

    Projection (a model, not a measurement): every solve round's pair tasks scheduled on W
    workers longest first, the shared scans divided by W / measured_workers, and the rest
    of the measured fit (driver, draws, certificates, Dask overhead) unchanged.
    """
    per_pair: dict[str, float] = {}
    rounds: dict[int, list[float]] = {}
    for e in events:
        per_pair[e["label"]] = per_pair.get(e["label"], 0.0) + e["seconds"]
        rounds.setdefault(e["round"], []).append(e["seconds"])
    scan = sum({h["iteration"]: h["scan_seconds"] for h in history}.values())
    solve_wall = sum({h["iteration"]: h["solve_seconds"] for h in history}.values())
    other = max(fit_seconds - scan - solve_wall, 0.0)
    projected = {str(w): other + scan * measured_workers / w
                 + sum(lpt_makespan(d, w) for d in rounds.values())
                 for w in PROJECT_WORKERS}
    times = sorted(per_pair.values())
    return {"pair_task_seconds": dict(sorted(per_pair.items(), key=lambda kv: -kv[1])),
            "pair_task_total": sum(times), "pair_task_max": times[-1] if times else 0.0,
            "pair_task_median": float(np.median(times)) if times else 0.0,
            "solve_rounds": len(rounds), "scan_seconds": scan, "solve_wall_seconds": solve_wall,
            "other_seconds": other, "projected_seconds": projected}


# -- data --------------------------------------------------------------------------------
def _idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def load_fmnist() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fashion-MNIST scaled to [0, 1] (float32): X, y (60,000), X_test, y_test (10,000)."""
    root = SHARED / "fashion-mnist"
    X = _idx(root / "train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    y = _idx(root / "train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    Xt = _idx(root / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    yt = _idx(root / "t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return (X / np.float32(255)).astype(np.float32), y, \
        (Xt / np.float32(255)).astype(np.float32), yt


def stratified(y: np.ndarray, rows: int | None, seed: int = 0) -> np.ndarray:
    """Sorted indices of a stratified subset of ``rows`` rows (all rows when None)."""
    if rows is None or rows >= len(y):
        return np.arange(len(y))
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(np.arange(len(y)), train_size=rows, stratify=y,
                               random_state=seed)
    return np.sort(keep)


def scale_gamma(X) -> float:
    """scikit-learn's gamma='scale', 1 / (n_features * X.var()), in float64."""
    import scipy.sparse as sp

    if sp.issparse(X):
        X = X.astype(np.float64)
        var = X.multiply(X).mean() - X.mean() ** 2
    else:
        var = np.asarray(X, np.float64).var()
    return float(1.0 / (X.shape[1] * var))


def prepare_fmnist(rows: int | None, test_rows: int | None) -> dict:
    """Parquet train/test of Fashion-MNIST (made once per size, reused) and the gamma."""
    from randsvm_dist.data import write_arrays

    X, y, Xt, yt = load_fmnist()
    keep, tkeep = stratified(y, rows), stratified(yt, test_rows, seed=1)
    X, y, Xt, yt = X[keep], y[keep], Xt[tkeep], yt[tkeep]
    train = SCRATCH / f"fmnist-{len(y)}"
    test = SCRATCH / f"fmnist-test-{len(yt)}"
    if not train.exists():
        write_arrays(X, y, train, partitions=max(4, len(y) // 7500))
    if not test.exists():
        write_arrays(Xt, yt, test, partitions=2)
    return {"train": str(train), "test": str(test), "n": len(y), "n_test": len(yt),
            "C": FMNIST_C, "gamma": scale_gamma(X)}


def prepare_a9a(rows: int | None) -> dict:
    """Parquet train/test of a9a (123 features; ``rows``: a stratified training subset)."""
    from sklearn.datasets import load_svmlight_files

    from randsvm_dist.data import write_arrays

    X, y, Xt, yt = load_svmlight_files([str(SHARED / "a9a/a9a.train.svm.gz"),
                                        str(SHARED / "a9a/a9a.test.svm.gz")], n_features=123)
    keep = stratified(y, rows)
    train, test = SCRATCH / f"a9a-train-{len(keep)}", SCRATCH / "a9a-test-all"
    if not train.exists():
        write_arrays(X[keep], y[keep].astype(np.int64), train, partitions=8)
    if not test.exists():
        write_arrays(Xt, yt.astype(np.int64), test, partitions=2)
    return {"train": str(train), "test": str(test), "n": len(keep), "n_test": len(yt),
            "C": A9A[0], "gamma": A9A[1]}


def load_w8a(rows: int | None, seed: int = 0):
    """w8a (49,749 x 300, 3% positives) split 2/3 train, 1/3 held out, stratified; ``rows``
    a stratified subset first. Returns X, y, X_held, y_held (float32 CSR, labels +-1)."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.model_selection import train_test_split

    X, y = load_svmlight_file(str(SHARED / "w8a/w8a.train.svm.gz"), n_features=300)
    keep = stratified(y, rows, seed)
    X, y = X[keep].astype(np.float32), y[keep].astype(np.int64)
    a, b = train_test_split(np.arange(len(y)), test_size=1 / 3, stratify=y, random_state=seed)
    a, b = np.sort(a), np.sort(b)
    return X[a], y[a], X[b], y[b]


def balanced_weights(y: np.ndarray) -> np.ndarray:
    """The per-row sample weights class_weight='balanced' stands for: n / (k n_class)."""
    classes, idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    return (len(y) / (len(classes) * counts))[idx]


# -- engines (each in its own process) ---------------------------------------------------
def engine_libsvm(spec: dict) -> dict:
    """libsvm-official on every training row, its default threads (bench_randsvm's)."""
    with PeakMemory() as mem:
        out = run_libsvm(Path(spec["train"]), Path(spec["test"]), spec["C"], spec["gamma"])
    return {**out, "peak_mb": mem.peak_mb}


def _arrays(spec: dict, dense: bool):
    from randsvm_dist.data import Dataset

    X, y = Dataset.open(spec["train"]).to_arrays(max_bytes=8 << 30)
    Xt, yt = Dataset.open(spec["test"]).to_arrays(max_bytes=8 << 30)
    if dense and hasattr(X, "toarray"):
        X, Xt = X.toarray(), Xt.toarray()
    return np.asarray(X, np.float64) if dense else X, y, \
        np.asarray(Xt, np.float64) if dense else Xt, yt


def engine_svc(spec: dict, intelex: bool = False) -> dict:
    """scikit-learn's SVC (or scikit-learn-intelex's) on every training row, -m 1000."""
    if intelex:
        try:
            from sklearnex.svm import SVC
        except ImportError as e:
            return {"error": f"scikit-learn-intelex not importable: {e}"}
    else:
        from sklearn.svm import SVC
    X, y, Xt, yt = _arrays(spec, dense=True)
    with PeakMemory() as mem:
        t0, c0 = time.perf_counter(), _cpu_seconds()
        proba = {"probability": True} if spec.get("probability") else {}  # (deprecated
        # in scikit-learn 1.9, removed in 1.11: CalibratedClassifierCV(ensemble=False))
        est = SVC(C=spec["C"], gamma=spec["gamma"], cache_size=1000, random_state=0,
                  **proba).fit(X, y)
        seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        pred = est.predict(Xt)
    out = {"seconds": seconds, "cpu_seconds": cpu, "accuracy": float(np.mean(pred == yt)),
           "n_support": int(est.n_support_.sum()), "peak_mb": mem.peak_mb,
           "module": type(est).__module__,
           "onedal": getattr(est, "_onedal_estimator", None) is not None}  # not a fallback
    if spec.get("probability"):
        out.update(_probability_figures(yt, est.predict_proba(Xt), est.classes_))
    return out


def _probability_figures(y, P, classes) -> dict:
    from sklearn.metrics import brier_score_loss, log_loss

    brier = (brier_score_loss(y, P[:, 1], pos_label=classes[1]) if P.shape[1] == 2
             else brier_score_loss(y, P, labels=classes))
    return {"log_loss": float(log_loss(y, P, labels=classes)), "brier_score": float(brier)}


def _cluster(workers: int):
    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    procs = launch(workers)
    client = Client(procs.address)
    wait_for_workers(client, workers)
    _warm_up(client)
    return procs, client


def engine_randsvm(spec: dict) -> dict:
    """One-vs-one RandSVMClassifier from Parquet on a LocalCluster (start excluded)."""
    from randsvm_dist.estimators import RandSVMClassifier

    workers = spec.get("workers", 2)
    with PeakMemory() as mem:
        procs, client = _cluster(workers)
        _instrument_pair_tasks()  # after the warm-up fit: only this fit's pairs
        try:
            est = RandSVMClassifier(C=spec["C"], gamma=spec["gamma"], random_state=0,
                                    client=client, probability=spec.get("probability", False),
                                    gap_tol=spec.get("gap_tol", 1e-3))
            w0, t0, c0 = client.run(_cpu_seconds), time.perf_counter(), _cpu_seconds()
            est.fit(spec["train"])
            seconds, w1 = time.perf_counter() - t0, client.run(_cpu_seconds)
            cpu = _cpu_seconds() - c0 + sum(w1[w] - w0.get(w, 0.0) for w in w1)
            events = [e for _, e in client.get_events(PAIR_EVENT)]
            if len({e["label"] for e in events}) < len(est.relative_gaps_):
                raise RuntimeError(  # the wrapped driver steps were renamed or moved
                    f"{len(events)} per-pair task events for {len(est.relative_gaps_)} "
                    "problems: update _instrument_pair_tasks to the driver's solve steps")
            worker_rss = client.run(_worker_peak_rss_mb)
            ev = est.evaluate(spec["test"], client=client)
        finally:
            client.close()
            procs.close()
    out = {"seconds": seconds, "cpu_seconds": cpu, "accuracy": ev["accuracy"],
           "n_support": int(len(est.support_)), "relative_gap": est.relative_gap_,
           "relative_gaps": est.relative_gaps_.tolist(), "certified": est.certified_,
           "iterations": est.n_iter_, "peak_mb": mem.peak_mb,
           "worker_peak_rss_mb": max(worker_rss.values()),
           "confusion_matrix": ev["confusion_matrix"], "history": est.history_,
           **pair_summary(events, est.history_, seconds, workers)}
    if spec.get("probability"):
        out.update({k: ev[k] for k in ("log_loss", "brier_score")})
        out.update(_stock_agreement(est, spec))
    return out


def _stock_agreement(est, spec: dict) -> dict:
    """Stock LIBSVM (svm_load_model + svm_predict -b 1) on the saved file vs the model."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_load_model, svm_predict

    from randsvm_dist.data import Dataset

    Xt, yt = Dataset.open(spec["test"]).to_arrays(max_bytes=8 << 30)
    path = SCRATCH / f"proba-{spec['set']}-{spec['n']}.model"
    SCRATCH.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    est.save(path)
    stock = svm_load_model(str(path))
    Xs = sp.csr_matrix(Xt, dtype=np.float64)
    labels, _, probs = svm_predict(np.asarray(yt, float), Xs, stock, "-b 1 -q")
    order = np.argsort(stock.get_labels())  # LIBSVM lists them in its label order
    P_stock = np.asarray(probs)[:, order]
    P = est.predict_proba(Xt)
    return {"stock_b1_max_abs_diff": float(np.abs(P_stock - P).max()),
            "stock_label_agreement": float(np.mean(np.asarray(labels) == est.predict(Xt)))}


def engine_w8a(spec: dict) -> dict:
    """class_weight='balanced' and its sample_weight: RandSVM vs SVC, same weights."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import SVC

    from randsvm_dist.estimators import RandSVMClassifier

    X, y, Xh, yh = load_w8a(spec.get("rows"))
    gamma, C, tol = scale_gamma(X), spec["C"], spec["tol"]
    sw = balanced_weights(y)
    out: dict = {"n": len(y), "n_held_out": len(yh), "gamma": gamma, "C": C, "tol": tol,
                 "positive_fraction": float(np.mean(y > 0))}
    fits = {}
    procs, client = _cluster(spec.get("workers", 2))
    try:
        for name, kw, fit_kw in (("randsvm_balanced", {"class_weight": "balanced"}, {}),
                                 ("randsvm_sample_weight", {}, {"sample_weight": sw})):
            est = RandSVMClassifier(C=C, gamma=gamma, tol=tol, gap_tol=spec["gap_tol"],
                                    random_state=0, client=client, **kw)
            t0 = time.perf_counter()
            est.fit(X, y, **fit_kw)
            fits[name] = (est, time.perf_counter() - t0)
    finally:
        client.close()
        procs.close()
    X64, Xh64 = X.astype(np.float64), Xh.astype(np.float64)
    for name, kw, fit_kw in (("svc_balanced", {"class_weight": "balanced"}, {}),
                             ("svc_sample_weight", {}, {"sample_weight": sw})):
        t0 = time.perf_counter()
        est = SVC(C=C, gamma=gamma, tol=tol, cache_size=1000, **kw).fit(X64, y, **fit_kw)
        fits[name] = (est, time.perf_counter() - t0)
    ref = fits["svc_balanced"][0].decision_function(Xh64)
    scale = float(np.abs(ref).max())
    for name, (est, seconds) in fits.items():
        f = est.decision_function(Xh64 if name.startswith("svc") else Xh)
        pred = est.predict(Xh64 if name.startswith("svc") else Xh)
        row = {"seconds": seconds, "accuracy": float(np.mean(pred == yh)),
               "balanced_accuracy": float(balanced_accuracy_score(yh, pred)),
               "n_support": int(np.sum(est.n_support_)),
               "max_abs_decision_diff_vs_svc_balanced": float(np.abs(f - ref).max()),
               "decision_scale": scale}
        if name.startswith("randsvm"):
            row.update({"relative_gap": est.relative_gap_, "certified": est.certified_})
        out[name] = row
    return out


ENGINE_FUNCS = {"libsvm": engine_libsvm, "randsvm": engine_randsvm, "svc": engine_svc,
                "sklearnex": lambda s: engine_svc(s, intelex=True), "w8a": engine_w8a}


def _child(engine: str, spec: dict) -> dict:
    """Run one engine in a fresh process (stderr -> SCRATCH/classification-progress.log)."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    log = SCRATCH / "classification-progress.log"
    with open(log, "a") as err:
        err.write(f"--- {time.strftime('%F %T')} {engine} {json.dumps(spec)}\n")
        err.flush()
        out = subprocess.run([sys.executable, __file__, "_one", engine, json.dumps(spec)],
                             stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if out.returncode != 0:
        return {"error": f"{engine} failed (exit {out.returncode}): see {log}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _record(path: str | None, row: dict, timed: bool = False) -> None:
    """Append a result row (``timed``: the run was on a quiet machine, see --timed)."""
    row = {**row, "timed": timed, "load_average": os.getloadavg(),
           "date": time.strftime("%F %T")}
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


# -- parts -------------------------------------------------------------------------------
def part_fmnist(args) -> None:
    """Fashion-MNIST: LIBSVM first (no Dask cluster exists yet), then the others."""
    spec = prepare_fmnist(args.rows, args.test_rows)
    spec["workers"] = args.workers
    print(f"Fashion-MNIST {spec['n']} train / {spec['n_test']} test rows, C={spec['C']:g}, "
          f"gamma={spec['gamma']:.6g} (scale, resolved once)", flush=True)
    results = {}
    for engine in [e for e in ENGINES if e in args.engines]:  # libsvm first
        results[engine] = r = _child(engine, spec)
        if "error" in r:
            print(f"  {engine:10s} {r['error']}", flush=True)
            continue
        gap = f"  gap {r['relative_gap']:.1e}" if "relative_gap" in r else ""
        print(f"  {engine:10s} {r['seconds']:8.1f} s  acc {r['accuracy']:.4f}  "
              f"#SV {r['n_support']:6d}  peak {r['peak_mb']:6.0f} MB{gap}", flush=True)
        if engine == "randsvm":
            proj = ", ".join(f"{w}: {s:.1f}" for w, s in r["projected_seconds"].items())
            print(f"             pair tasks: total {r['pair_task_total']:.1f} s, max "
                  f"{r['pair_task_max']:.1f} s, median {r['pair_task_median']:.2f} s over "
                  f"{len(r['pair_task_seconds'])} pairs; projected s by workers {proj}",
                  flush=True)
    _record(args.out, {"part": "fmnist", **spec, "engines": results}, args.timed)


def part_w8a(args) -> None:
    """w8a: balanced class weights and their sample weights, RandSVM vs SVC."""
    spec = {"rows": args.rows, "C": W8A_C, "tol": args.w8a_tol, "gap_tol": args.w8a_gap_tol,
            "workers": args.workers}
    r = _child("w8a", spec)
    if "error" in r:
        print(f"w8a: {r['error']}", flush=True)
    else:
        print(f"w8a {r['n']} train / {r['n_held_out']} held-out rows "
              f"({100 * r['positive_fraction']:.1f}% positive), C={r['C']:g}, "
              f"gamma={r['gamma']:.4g}", flush=True)
        for name in ("randsvm_balanced", "randsvm_sample_weight", "svc_balanced",
                     "svc_sample_weight"):
            x = r[name]
            gap = (f"  gap {x['relative_gap']:.1e} cert {x['certified']}"
                   if "relative_gap" in x else "")
            print(f"  {name:22s} {x['seconds']:7.1f} s  acc {x['accuracy']:.4f}  bal.acc "
                  f"{x['balanced_accuracy']:.4f}  #SV {x['n_support']:5d}  max|df| "
                  f"{x['max_abs_decision_diff_vs_svc_balanced']:.2e}{gap}", flush=True)
    _record(args.out, {"part": "w8a", **spec, "result": r}, args.timed)


def part_proba(args) -> None:
    """probability=True on a9a and a Fashion-MNIST subset: RandSVM vs SVC(probability)."""
    for name in args.proba_sets:
        spec = (prepare_a9a(args.rows) if name == "a9a"
                else prepare_fmnist(args.proba_fmnist_rows, args.test_rows))
        spec.update({"set": name, "probability": True, "workers": args.workers})
        ours, svc = _child("randsvm", spec), _child("svc", spec)
        for who, r in (("randsvm", ours), ("svc", svc)):
            if "error" in r:
                print(f"  {name} {who}: {r['error']}", flush=True)
            else:
                extra = (f"  stock -b 1 max|dP| {r['stock_b1_max_abs_diff']:.1e}"
                         if "stock_b1_max_abs_diff" in r else "")
                print(f"  {name:6s} n={spec['n']:6d} {who:8s} {r['seconds']:7.1f} s  acc "
                      f"{r['accuracy']:.4f}  log loss {r['log_loss']:.4f}  Brier "
                      f"{r['brier_score']:.4f}{extra}", flush=True)
        for r in (ours, svc):
            r.pop("history", None)
        _record(args.out, {"part": "proba", **spec, "engines": {"randsvm": ours,
                                                                "svc": svc}}, args.timed)


# -- report ------------------------------------------------------------------------------
def _cell(r: dict | None, key: str, fmt: str, timed: bool) -> str:
    if not r or "error" in r or r.get(key) is None:
        return "-"
    return "pending quiet run" if timed and not _quiet(r) else format(r[key], fmt)


def _quiet(r: dict) -> bool:
    return bool(r.get("_quiet"))


def markdown_table(path: str) -> str:
    """Markdown tables of a results file (last run per part and size). Timing cells of
    runs not made with --timed (a quiet machine) read 'pending quiet run'."""
    rows: dict = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        rows[(r["part"], r.get("set"), r.get("n") or r.get("rows"))] = r
    out = []
    for (part, name, _n), r in sorted(rows.items(), key=lambda kv: str(kv[0])):
        quiet = bool(r.get("timed"))
        if part == "fmnist":
            out += [f"**Fashion-MNIST, {r['n']:,} train / {r['n_test']:,} test rows, C=10, "
                    f"gamma={r['gamma']:.5g}** (load {r['load_average'][0]:.1f})", "",
                    "| engine | fit s | speed-up vs LIBSVM | test acc | acc - LIBSVM (pts) | "
                    "#SV | worst certified gap | peak MB |",
                    "|---|---|---|---|---|---|---|---|"]
            lib = r["engines"].get("libsvm") or {}
            for e in ENGINES:
                x = dict(r["engines"].get(e) or {}, _quiet=quiet)
                if "seconds" in x and "seconds" in lib:
                    x["speed_up"] = lib["seconds"] / x["seconds"]
                    x["acc_diff"] = 100 * (x["accuracy"] - lib["accuracy"])
                gap = (f"{x['relative_gap']:.1e}" if "relative_gap" in x else
                       "n/a (one solve)" if "seconds" in x else "-")
                acc = "-" if "accuracy" not in x else f"{100 * x['accuracy']:.2f}"
                out.append(f"| {e} | {_cell(x, 'seconds', '.1f', True)} | "
                           f"{_cell(x, 'speed_up', '.2f', True)} | {acc} | "
                           f"{_cell(x, 'acc_diff', '+.2f', False)} | "
                           f"{_cell(x, 'n_support', ',d', False)} | {gap} | "
                           f"{_cell(x, 'peak_mb', '.0f', True)} |")
            x = r["engines"].get("randsvm") or {}
            if "projected_seconds" in x:
                proj = " / ".join(f"{w}: {s:.1f}" if quiet else f"{w}: pending"
                                  for w, s in x["projected_seconds"].items())
                out += ["", f"RandSVM per-pair solve tasks: {len(x['pair_task_seconds'])} "
                        f"pairs, {x['solve_rounds']} solve rounds; "
                        + (f"total {x['pair_task_total']:.1f} s, largest pair "
                           f"{x['pair_task_max']:.1f} s, median "
                           f"{x['pair_task_median']:.2f} s; shared scans "
                           f"{x['scan_seconds']:.1f} s; projected fit s by workers: {proj}; "
                           "largest pairs (class indices): " + ", ".join(
                               f"{k} {v:.1f} s"
                               for k, v in list(x["pair_task_seconds"].items())[:5])
                           if quiet else "times pending quiet run")]
            out.append("")
        elif part == "w8a":
            x = r["result"]
            if "error" in x:
                continue
            out += [f"**w8a, {x['n']:,} train / {x['n_held_out']:,} held-out rows "
                    f"({100 * x['positive_fraction']:.1f}% positive), C={x['C']:g}, "
                    f"gamma={x['gamma']:.4g}, tol={x['tol']:g}** "
                    f"(load {r['load_average'][0]:.1f})", "",
                    "| model | fit s | acc | balanced acc | #SV | max abs decision diff vs "
                    "SVC balanced | certified gap |", "|---|---|---|---|---|---|---|"]
            for name in ("randsvm_balanced", "randsvm_sample_weight", "svc_balanced",
                         "svc_sample_weight"):
                m = dict(x[name], _quiet=quiet)
                gap = (f"{m['relative_gap']:.1e}" + ("" if m["certified"] else " (not cert.)")
                       if "relative_gap" in m else "-")
                out.append(f"| {name} | {_cell(m, 'seconds', '.1f', True)} | "
                           f"{100 * m['accuracy']:.2f} | {100 * m['balanced_accuracy']:.2f} | "
                           f"{m['n_support']:,} | "
                           f"{m['max_abs_decision_diff_vs_svc_balanced']:.1e} | {gap} |")
            out.append("")
        else:
            out += [f"**Probabilities, {name} {r['n']:,} train / {r['n_test']:,} test rows, "
                    f"C={r['C']:g}, gamma={r['gamma']:.5g}** "
                    f"(load {r['load_average'][0]:.1f})", "",
                    "| model | fit s | acc | log loss | Brier | stock `-b 1` max abs diff |",
                    "|---|---|---|---|---|---|"]
            for e in ("randsvm", "svc"):
                m = dict(r["engines"][e], _quiet=quiet)
                if "error" in m:
                    continue
                stock = (f"{m['stock_b1_max_abs_diff']:.1e}" if "stock_b1_max_abs_diff" in m
                         else "-")
                out.append(f"| {e} | {_cell(m, 'seconds', '.1f', True)} | "
                           f"{100 * m['accuracy']:.2f} | {m['log_loss']:.4f} | "
                           f"{m['brier_score']:.4f} | {stock} |")
            out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    """Parse the command line and run the asked-for parts (or print a report)."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("parts", nargs="*", metavar="PART",
                   help="fmnist, w8a and/or proba (default: all three)")
    p.add_argument("--rows", type=int, default=None,
                   help="a stratified subset of this many training rows (fmnist, w8a, "
                        "a9a); default all")
    p.add_argument("--test-rows", type=int, default=None,
                   help="Fashion-MNIST test rows (stratified); default all 10,000")
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--proba-sets", nargs="+", default=["a9a", "fmnist"],
                   choices=["a9a", "fmnist"])
    p.add_argument("--proba-fmnist-rows", type=int, default=10_000)
    p.add_argument("--w8a-tol", type=float, default=1e-3,
                   help="LIBSVM's -e for every w8a fit (RandSVM's tol, SVC's tol)")
    p.add_argument("--w8a-gap-tol", type=float, default=1e-3)
    p.add_argument("--out", default=None, help="append JSON lines of results here")
    p.add_argument("--timed", action="store_true",
                   help="the machine is quiet (nothing else running): the report shows "
                        "this run's times; without it they read 'pending quiet run'")
    p.add_argument("--report", default=None, help="print Markdown tables of a results "
                                                  "file and exit")
    args = p.parse_args(argv)
    bad = sorted(set(args.parts) - {"fmnist", "w8a", "proba"})
    if bad:
        p.error(f"unknown part(s) {', '.join(bad)}: choose from fmnist, w8a, proba")
    if args.report:
        print(markdown_table(args.report))
        return 0
    for part in args.parts or ["fmnist", "w8a", "proba"]:
        {"fmnist": part_fmnist, "w8a": part_w8a, "proba": part_proba}[part](args)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("distributed").setLevel(logging.WARNING)
        result = ENGINE_FUNCS[sys.argv[2]](json.loads(sys.argv[3]))
        print(json.dumps(result, default=float))
        sys.exit(0)
    sys.exit(main())
