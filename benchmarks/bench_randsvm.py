"""RandSVM vs LIBSVM on all rows, side by side in one run (issue: RandSVM driver).

Each measurement runs in its own subprocess so its peak memory (ru_maxrss) is its own:
the LIBSVM baseline trains libsvm-official on every training row in one process; RandSVM
runs its driver in the subprocess against a LocalCluster of 2 single-threaded workers and
reads the Parquet partitions there. Reports training time (wall and CPU: driver plus workers
for RandSVM), test accuracy, #SV, iterations, driver peak RSS, and the time ratios.

    python benchmarks/bench_randsvm.py --sets checkerboard ringnorm --sizes 100000 300000 \\
        --out benchmarks/results/randsvm.jsonl
    python benchmarks/bench_randsvm.py --sets ijcnn1 a9a skin_nonskin
    python benchmarks/bench_randsvm.py --sets checkerboard --sizes 10000000 --cache false \\
        --memory-limit 1GB        # larger than memory: partitions re-read every pass

RandSVM runs with its defaults (certified relative gap 1e-3, no k bound) unless told.
LIBSVM above --libsvm-max-rows is not rerun: the table then shows the reference figure
recorded for this kind of machine (LIBSVM_REFERENCE below), marked as such, or
extrapolates from the set's two largest measured sizes (t = a n^b), marked as such.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
SCRATCH = Path(os.environ.get("RANDSVM_SCRATCH", "/tmp/randsvm-bench"))

SYNTHETIC = {"checkerboard": (100.0, 1.0), "ringnorm": (1.0, 0.05)}
REAL = {  # name: (C, gamma, train file, test file or None for a 2/3 split)
    "ijcnn1": (32.0, 2.0, "ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz"),
    "a9a": (32.0, 0.008, "a9a/a9a.train.svm.gz", "a9a/a9a.test.svm.gz"),
    "skin_nonskin": (8.0, 0.03, "skin_nonskin/skin_nonskin.svm.gz", None),
}
# LIBSVM on all rows, measured once on this kind of machine (2 cores), too long to rerun
LIBSVM_REFERENCE = {
    ("checkerboard", 1_000_000): {"seconds": 220.0, "accuracy": 0.9992, "n_support": 20737},
    ("ringnorm", 1_000_000): {"seconds": 2725.0, "accuracy": 0.9890, "n_support": 38800},
    ("skin_nonskin", 163_371): {"seconds": 379.0, "accuracy": 0.9996, "n_support": 11146},
}


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process (less sensitive to a busy machine)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def prepare(name: str, n: int | None) -> tuple[Path, Path, float, float]:
    """Parquet train/test directories of a set (made once, reused)."""
    from randsvm_dist.data import convert, make

    if name in SYNTHETIC:
        train, test = SCRATCH / f"{name}-{n}", SCRATCH / f"{name}-test"
        if not train.exists():
            make(name, train, rows=n, partitions=max(4, n // 62500), seed=1)
        if not test.exists():
            make(name, test, rows=10000, partitions=1, seed=2)
        return train, test, *SYNTHETIC[name]
    C, gamma, train_file, test_file = REAL[name]
    train, test = SCRATCH / f"{name}-train", SCRATCH / f"{name}-test"
    if not train.exists():
        if test_file is None:
            _split(SHARED / train_file, train, test)
        else:
            d = _n_features(SHARED / train_file, SHARED / test_file)
            convert(str(SHARED / train_file), train, partitions=8, n_features=d)
            convert(str(SHARED / test_file), test, partitions=2, n_features=d)
    return train, test, C, gamma


def _n_features(*files: Path) -> int:
    from sklearn.datasets import load_svmlight_files

    return max(X.shape[1] for X in load_svmlight_files([str(f) for f in files])[::2])


def _split(src: Path, train: Path, test: Path) -> None:
    import numpy as np
    from sklearn.datasets import load_svmlight_file

    from randsvm_dist.data import write_arrays

    X, y = load_svmlight_file(str(src))
    X = X.toarray().astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(y))
    cut = 2 * len(y) // 3
    write_arrays(X[perm[:cut]], y[perm[:cut]].astype(np.int64), train, partitions=8)
    write_arrays(X[perm[cut:]], y[perm[cut:]].astype(np.int64), test, partitions=2)


def run_libsvm(train: Path, test: Path, C: float, gamma: float) -> dict:
    """libsvm-official on all training rows (its own OpenMP threads, -m 1000)."""

    from randsvm_dist.data import Dataset

    X, y = Dataset.open(train).to_arrays(max_bytes=8 << 30)
    Xt, yt = Dataset.open(test).to_arrays(max_bytes=8 << 30)
    return {**libsvm_fit_score(X, y, Xt, yt, C, gamma), "peak_rss_mb": _peak_rss_mb()}


def libsvm_fit_score(X, y, Xt, yt, C: float, gamma: float) -> dict:
    """libsvm-official's svm_train on (X, y) (RBF, -m 1000, its default threads), timed,
    and its accuracy on (Xt, yt): seconds, cpu_seconds, accuracy, n_support."""
    import numpy as np
    import scipy.sparse as sp
    from libsvm.svmutil import svm_predict, svm_problem, svm_train

    X64 = sp.csr_matrix(X, dtype=np.float64)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    model = svm_train(svm_problem(np.asarray(y, float), X64),
                      f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q")
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    pred, _, _ = svm_predict(np.asarray(yt, float), sp.csr_matrix(Xt, dtype=np.float64),
                             model, "-q")
    return {"seconds": seconds, "cpu_seconds": cpu,
            "accuracy": float(np.mean(np.asarray(pred) == yt)),
            "n_support": int(model.get_nr_sv())}


def _worker_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _warm_up(client) -> None:
    """A tiny fit, so imports and numba's cached compiles (about 1 s, paid once per
    cluster) are not in the timed fit: the figures are a warm cluster's."""
    import numpy as np

    from randsvm_dist.estimators import RandSVMClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    RandSVMClassifier(random_state=0, client=client).fit(X, (X[:, 0] > 0).astype(int))


def run_randsvm(train: Path, test: Path, C: float, gamma: float, opts: dict) -> dict:
    """RandSVMClassifier fitted from Parquet on a LocalCluster (cluster start excluded).

    opts: gap_tol, workers, k ('none' or 'auto'), seed (None, 'bsgd', 'ramp'), cache
    ('auto', 'true', 'false'), memory_limit (per worker, e.g. '400MB', or None).
    """
    import numpy as np
    from distributed import Client

    from randsvm_dist.data import Dataset
    from randsvm_dist.engine.launcher import launch, wait_for_workers
    from randsvm_dist.estimators import RandSVMClassifier

    cache = {"auto": "auto", "true": True, "false": False}[opts["cache"]]
    # scheduler and workers in their own processes: this one's peak RSS is the driver's
    procs = launch(opts["workers"], memory_limit=opts["memory_limit"] or "auto",
                   log_path=opts.get("cluster_log"))
    try:
        with Client(procs.address) as client:
            wait_for_workers(client, opts["workers"])
            _warm_up(client)
            est = RandSVMClassifier(C=C, gamma=gamma, gap_tol=opts["gap_tol"], random_state=0,
                                    client=client, k={"none": None}.get(opts["k"], opts["k"]),
                                    seed=opts["seed"], cache=cache,
                                    max_iter=opts.get("max_iter") or 50,
                                    cache_size=opts.get("cache_size") or 200.0)
            w0, t0, c0 = client.run(_cpu_seconds), time.perf_counter(), _cpu_seconds()
            est.fit(str(train))
            seconds, w1 = time.perf_counter() - t0, client.run(_cpu_seconds)
            cpu = _cpu_seconds() - c0 + sum(w1[w] - w0.get(w, 0.0) for w in w1)
            worker_rss = client.run(_worker_peak_rss_mb)
            ds = Dataset.open(test)
            Xt, yt = ds.to_arrays()
            acc = float(np.mean(est.predict(Xt) == yt))
    finally:
        procs.close()
    h = est.history_
    rates = [r["kernel_evals_per_second"] for r in h if r["kernel_evals"] > 1e8]
    core_rates = [r["kernel_evals_per_core_second"] for r in h if r["kernel_evals"] > 1e8]
    return {"seconds": seconds, "cpu_seconds": cpu, "accuracy": acc,
            "n_support": int(len(est.support_)),
            "iterations": est.n_iter_, "stop": est.stop_reasons_[0], "k": est.k_,
            "relative_gap": est.relative_gap_, "certified": est.certified_,
            "solve_seconds": sum(r["solve_seconds"] for r in h),
            "scan_seconds": sum(r["scan_seconds"] for r in h),
            "seed_seconds": (est.seed_info_ or {}).get("seed_seconds", 0.0),
            "scan_evals_per_second": float(np.median(rates)) if rates else None,
            "scan_evals_per_core_second": float(np.median(core_rates)) if core_rates else None,
            "sample_size": est.sample_size_, "peak_rss_mb": _peak_rss_mb(),
            "worker_peak_rss_mb": max(worker_rss.values()),
            "worker_peak_rss_mb_each": sorted(worker_rss.values()),
            "history": h}


def _variant(r: dict) -> str:
    """A run's variant label: seed, k and cache settings other than the defaults."""
    bits = []
    if r.get("seed"):
        bits.append(f"seed={r['seed']}")
    if r.get("k", "none") not in ("none", None):
        bits.append(f"k={r['k']}")
    if r.get("cache", "auto") != "auto":
        bits.append(f"cache={r['cache']}")
    if r.get("memory_limit"):
        bits.append(f"mem={r['memory_limit']}/worker")
    if r.get("max_iter"):
        bits.append(f"max_iter={r['max_iter']}")
    if r.get("cache_size"):
        bits.append(f"-m {r['cache_size']:g}")
    return ", ".join(bits)


def extrapolate(rows: dict, name: str, n: int) -> float | None:
    """LIBSVM seconds at n from its two largest sizes of the set measured on this machine
    (reference figures of other machines left out), t = a n^b fitted through them."""
    import math

    pts = sorted((m, r["libsvm"]["seconds"]) for (s, m, v), r in rows.items()
                 if s == name and not v and m < n and r["libsvm"].get("seconds")
                 and r["libsvm"].get("source", "run") == "run")
    if len(pts) < 2:
        return None
    (n1, t1), (n2, t2) = pts[-2], pts[-1]
    b = math.log(t2 / t1) / math.log(n2 / n1)
    return t2 * (n / n2) ** b


def markdown_table(path: str) -> str:
    """The results recorded in a JSON-lines file as a Markdown table (last run per row)."""
    rows: dict = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if not r["randsvm"] or "relative_gap" not in r["randsvm"]:
            continue  # LIBSVM alone, or a run of the earlier, uncertified defaults
        rows[(r["set"], r["n"], _variant(r))] = r
    out = ["| set | n | LIBSVM s | LIBSVM acc | LIBSVM #SV | RandSVM s | RandSVM acc | "
           "RandSVM #SV | iters | certified gap | solve s | scan s | seed s | "
           "scan G evals/s | driver MB | worker MB | speed-up | acc diff (pts) |",
           "|" + "---|" * 18]
    for (name, n, variant), r in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        lib, rnd = dict(r["libsvm"]), r["randsvm"]
        mark = {"run": "", "skipped": " (extrap.)"}.get(lib.get("source", "run"), " (ref.)")
        if lib.get("source") == "skipped":
            lib["seconds"] = extrapolate(rows, name, n)
        lsec = "-" if lib.get("seconds") is None else f"{lib['seconds']:.1f}{mark}"
        lacc = f"{100 * lib['accuracy']:.2f}" if lib.get("accuracy") else "-"
        lsv = f"{lib['n_support']:,}" if lib.get("n_support") else "-"
        ratio = f"{lib['seconds'] / rnd['seconds']:.1f}x" if lib.get("seconds") else "-"
        dacc = (f"{100 * (rnd['accuracy'] - lib['accuracy']):+.2f}" if lib.get("accuracy")
                else "-")
        rate = rnd.get("scan_evals_per_second")
        gap = f"{rnd['relative_gap']:.1e}" + ("" if rnd["certified"] else " (not cert.)")
        out.append(
            f"| {name}{' (' + variant + ')' if variant else ''} | {n:,} | {lsec} | {lacc} | "
            f"{lsv} | {rnd['seconds']:.1f} | {100 * rnd['accuracy']:.2f} | "
            f"{rnd['n_support']:,} | {rnd['iterations']} | {gap} | "
            f"{rnd['solve_seconds']:.1f} | {rnd['scan_seconds']:.1f} | "
            f"{rnd.get('seed_seconds', 0.0):.1f} | "
            f"{'-' if rate is None else f'{rate / 1e9:.2f}'} | {rnd['peak_rss_mb']:.0f} | "
            f"{rnd['worker_peak_rss_mb']:.0f} | {ratio} | {dacc} |")
    return "\n".join(out)


def _earlier_libsvm(path: str | None, name: str, n: int, C: float, gamma: float):
    """The last LIBSVM figure measured on these rows and parameters in a results file."""
    if not path or not Path(path).exists():
        return None
    found = None
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if (r["set"], r["n"], r["C"], r["gamma"]) == (name, n, C, gamma) and \
                r["libsvm"].get("source") == "run":
            found = {**r["libsvm"], "measured": r["date"]}
    return found


def _subprocess(args: list[str], env: dict | None = None) -> dict:
    """Run one measurement in a fresh process; its log lines (one per RandSVM iteration)
    go to SCRATCH/progress.log as they come."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    log = SCRATCH / "progress.log"
    with open(log, "a") as err:
        err.write(f"--- {time.strftime('%F %T')} {args}\n")
        err.flush()
        out = subprocess.run([sys.executable, __file__, "_one", *args], stdout=subprocess.PIPE,
                             stderr=err, text=True, check=False,
                             env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"benchmark step {args} failed: see {log}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["checkerboard", "ringnorm", "ijcnn1", "a9a",
                                                  "skin_nonskin"])
    p.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000])
    p.add_argument("--gap-tol", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--k", default="none", help="'none' (the default: certified stop) or "
                                               "'auto' (the paper's bound)")
    p.add_argument("--seed", default=None, help="RandSVM's seed: 'bsgd' or 'ramp'")
    p.add_argument("--cache", default="auto", choices=["auto", "true", "false"])
    p.add_argument("--memory-limit", default=None, help="per worker, e.g. 400MB")
    p.add_argument("--cluster-log", default=None,
                   help="keep the scheduler's and workers' log here (memory warnings, "
                        "restarts)")
    p.add_argument("--cache-size", type=float, default=None,
                   help="RandSVM's LIBSVM kernel cache per solve in MB (default its own, "
                        "200; the LIBSVM baseline runs with -m 1000)")
    p.add_argument("--max-iter", type=int, default=None,
                   help="RandSVM's max_iter (default its own, 50): a time budget for runs "
                        "too long to certify here (the table then says 'not cert.')")
    p.add_argument("--libsvm-max-rows", type=int, default=300_000,
                   help="above this, LIBSVM is not run: the reference figure of "
                        "LIBSVM_REFERENCE, or extrapolated in the table")
    p.add_argument("--libsvm-threads", type=int, default=None,
                   help="OMP_NUM_THREADS for LIBSVM (default: its own, as a user runs it)")
    p.add_argument("--libsvm-only", action="store_true",
                   help="measure LIBSVM only (recorded with an empty RandSVM entry)")
    p.add_argument("--reuse-libsvm", action="store_true",
                   help="take LIBSVM's figure from an earlier --libsvm-only run in --out on "
                        "the same rows and parameters instead of training it again")
    p.add_argument("--out", default=None, help="append JSON lines of results here")
    p.add_argument("--report", default=None,
                   help="print a Markdown table of a results file and exit")
    args = p.parse_args(argv)
    if args.report:
        print(markdown_table(args.report))
        return 0
    opts = {"gap_tol": args.gap_tol, "workers": args.workers, "k": args.k, "seed": args.seed,
            "cache": args.cache, "memory_limit": args.memory_limit, "max_iter": args.max_iter,
            "cache_size": args.cache_size, "cluster_log": args.cluster_log}
    print(f"{'set':14s} {'n':>9s} | {'LIBSVM s':>9s} {'acc':>7s} {'#SV':>7s} | "
          f"{'RandSVM s':>9s} {'acc':>7s} {'#SV':>7s} {'it':>3s} {'gap':>8s} "
          f"{'solve':>7s} {'scan':>7s} {'wRSS MB':>7s} | {'speed-up':>8s} {'d-acc':>6s}",
          flush=True)
    for name in args.sets:
        sizes = args.sizes if name in SYNTHETIC else [None]
        for n in sizes:
            train, test, C, gamma = prepare(name, n)
            from randsvm_dist.data import Dataset

            rows = Dataset.open(train).n_rows
            common = [str(train), str(test), str(C), str(gamma)]
            earlier = _earlier_libsvm(args.out, name, rows, C, gamma) \
                if args.reuse_libsvm else None
            if earlier is not None:
                lib = earlier
            elif rows <= args.libsvm_max_rows:
                env = ({"OMP_NUM_THREADS": str(args.libsvm_threads)} if args.libsvm_threads
                       else None)
                lib = _subprocess(["libsvm", *common], env)
                lib["source"] = "run"
            elif (name, rows) in LIBSVM_REFERENCE:
                lib = {**LIBSVM_REFERENCE[(name, rows)], "source": "reference"}
            else:
                lib = {"source": "skipped"}
            if args.libsvm_only:
                print(f"{name:14s} {rows:9d} | {lib['seconds']:8.1f} {lib['accuracy']:7.4f} "
                      f"{lib['n_support']:7d}", flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps({"set": name, "n": rows, "C": C, "gamma": gamma,
                                            "libsvm": lib, "randsvm": None,
                                            "load_average": os.getloadavg(),
                                            "date": time.strftime("%F %T")}) + "\n")
                continue
            rnd = _subprocess(["randsvm", *common, json.dumps(opts)])
            ratio = lib["seconds"] / rnd["seconds"] if lib.get("seconds") else float("nan")
            print(f"{name:14s} {rows:9d} | {lib.get('seconds', float('nan')):8.1f} "
                  f"{lib.get('accuracy', float('nan')):7.4f} {lib.get('n_support', 0):7d} | "
                  f"{rnd['seconds']:9.1f} {rnd['accuracy']:7.4f} {rnd['n_support']:7d} "
                  f"{rnd['iterations']:3d} {rnd['relative_gap']:8.1e} "
                  f"{rnd['solve_seconds']:7.1f} {rnd['scan_seconds']:7.1f} "
                  f"{rnd['worker_peak_rss_mb']:7.0f} | {ratio:7.1f}x "
                  f"{100 * (rnd['accuracy'] - lib.get('accuracy', float('nan'))):+6.2f}",
                  flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps({"set": name, "n": rows, "C": C, "gamma": gamma,
                                        **opts, "libsvm": lib, "randsvm": rnd,
                                        "load_average": os.getloadavg(),
                                        "date": time.strftime("%F %T")}) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("distributed").setLevel(logging.WARNING)
        engine, train, test, C, gamma, *rest = sys.argv[2:]
        if engine == "libsvm":
            res = run_libsvm(Path(train), Path(test), float(C), float(gamma))
        else:
            res = run_randsvm(Path(train), Path(test), float(C), float(gamma),
                              json.loads(rest[0]))
        print(json.dumps(res))
        sys.exit(0)
    sys.exit(main())
