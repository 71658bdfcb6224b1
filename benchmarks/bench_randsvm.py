"""RandSVM vs LIBSVM on all rows, side by side in one run (issue: RandSVM driver).

Each measurement runs in its own subprocess so its peak memory (ru_maxrss) is its own:
the LIBSVM baseline trains libsvm-official on every training row in one process; RandSVM
runs its driver in the subprocess against a LocalCluster of 2 single-threaded workers and
reads the Parquet partitions there. Reports training time (wall and CPU: driver plus workers
for RandSVM), test accuracy, #SV, iterations, driver peak RSS, and the time ratios.

    python benchmarks/bench_randsvm.py --sets checkerboard ringnorm --sizes 100000 300000 \\
        --out benchmarks/results/randsvm.json
    python benchmarks/bench_randsvm.py --sets ijcnn1 a9a skin_nonskin

LIBSVM above --libsvm-max-rows is not rerun: the table then shows the reference figure
recorded for this machine (../shared/DESIGN.md, measured 2026-11-21), marked as such.
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
# LIBSVM on all rows, recorded on this kind of machine (../shared/DESIGN.md, 2026-11-21)
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
    import numpy as np
    import scipy.sparse as sp
    from libsvm.svmutil import svm_predict, svm_problem, svm_train

    from randsvm_dist.data import Dataset

    X, y = Dataset.open(train).to_arrays(max_bytes=8 << 30)
    Xt, yt = Dataset.open(test).to_arrays(max_bytes=8 << 30)
    X64 = sp.csr_matrix(X, dtype=np.float64)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    model = svm_train(svm_problem(np.asarray(y, float), X64),
                      f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q")
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    pred, _, _ = svm_predict(np.asarray(yt, float), sp.csr_matrix(Xt, dtype=np.float64),
                             model, "-q")
    return {"seconds": seconds, "cpu_seconds": cpu,
            "accuracy": float(np.mean(np.asarray(pred) == yt)),
            "n_support": int(model.get_nr_sv()), "peak_rss_mb": _peak_rss_mb()}


def run_randsvm(train: Path, test: Path, C: float, gamma: float, gap_tol: float,
                workers: int, k="auto") -> dict:
    """RandSVMClassifier fitted from Parquet on a LocalCluster (cluster start excluded)."""
    import numpy as np
    from distributed import Client, LocalCluster

    from randsvm_dist.data import Dataset
    from randsvm_dist.estimators import RandSVMClassifier

    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0") as lc, \
            Client(lc) as client:
        client.run(lambda: __import__("libsvm.svmutil"))  # worker imports, as a warm cluster
        est = RandSVMClassifier(C=C, gamma=gamma, gap_tol=gap_tol, random_state=0,
                                client=client, k=k)
        w0, t0, c0 = client.run(_cpu_seconds), time.perf_counter(), _cpu_seconds()
        est.fit(str(train))
        seconds, w1 = time.perf_counter() - t0, client.run(_cpu_seconds)
        cpu = _cpu_seconds() - c0 + sum(w1[w] - w0.get(w, 0.0) for w in w1)
        Xt, yt = Dataset.open(test).to_arrays()
        acc = float(np.mean(est.predict(Xt) == yt))
    return {"seconds": seconds, "cpu_seconds": cpu, "accuracy": acc,
            "n_support": int(len(est.support_)),
            "iterations": est.n_iter_, "stop": est.stop_reasons_[0], "k": est.k_,
            "sample_size": est.sample_size_, "peak_rss_mb": _peak_rss_mb(),
            "history": est.history_}


def markdown_table(path: str) -> str:
    """The results recorded in a JSON-lines file as a Markdown table (last run per row)."""
    rows: dict = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        rows[(r["set"], r["n"], r.get("k", "auto"))] = r
    out = ["| set | n | LIBSVM s | LIBSVM CPU s | LIBSVM acc | LIBSVM #SV | RandSVM s | "
           "RandSVM CPU s | RandSVM acc | RandSVM #SV | iters | stop | driver RSS MB | "
           "wall ratio | CPU ratio | acc diff (pts) |",
           "|" + "---|" * 16]
    for (name, n, k), r in rows.items():
        lib, rnd = r["libsvm"], r["randsvm"]
        ref = "" if lib.get("source", "run") == "run" else " (ref.)"
        lcpu, rcpu = lib.get("cpu_seconds"), rnd.get("cpu_seconds")
        cpu_ratio = f"{lcpu / rcpu:.1f}x" if lcpu and rcpu else "-"
        out.append(
            f"| {name}{'' if k == 'auto' else ' (k=' + k + ')'} | {n:,} | "
            f"{lib['seconds']:.1f}{ref} | "
            f"{'-' if lcpu is None else round(lcpu, 1)} | {100 * lib['accuracy']:.2f} | "
            f"{lib['n_support']:,} | {rnd['seconds']:.1f} | "
            f"{'-' if rcpu is None else round(rcpu, 1)} | {100 * rnd['accuracy']:.2f} | "
            f"{rnd['n_support']:,} | {rnd['iterations']} | {rnd['stop']} | "
            f"{rnd['peak_rss_mb']:.0f} | {lib['seconds'] / rnd['seconds']:.1f}x | "
            f"{cpu_ratio} | {100 * (rnd['accuracy'] - lib['accuracy']):+.2f} |")
    return "\n".join(out)


def _subprocess(args: list[str], env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, "_one", *args], capture_output=True,
                         text=True, check=False, env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"benchmark step {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["checkerboard", "ringnorm", "ijcnn1", "a9a",
                                                  "skin_nonskin"])
    p.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000])
    p.add_argument("--gap-tol", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--k", default="auto", help="'auto' (the paper's bound) or 'none'")
    p.add_argument("--libsvm-max-rows", type=int, default=300_000)
    p.add_argument("--libsvm-threads", type=int, default=None,
                   help="OMP_NUM_THREADS for LIBSVM (default: its own, 2 here); use 1 when "
                        "the machine is busy: its OpenMP threads then slow it down ~3x")
    p.add_argument("--out", default=None, help="append JSON lines of results here")
    p.add_argument("--report", default=None,
                   help="print a Markdown table of a results file and exit")
    args = p.parse_args(argv)
    if args.report:
        print(markdown_table(args.report))
        return 0
    print(f"{'set':14s} {'n':>9s} | {'LIBSVM s':>9s} {'acc':>7s} {'#SV':>7s} | "
          f"{'RandSVM s':>9s} {'acc':>7s} {'#SV':>7s} {'it':>3s} {'stop':>9s} "
          f"{'RSS MB':>7s} | {'speed-up':>8s} {'d-acc':>6s}", flush=True)
    for name in args.sets:
        sizes = args.sizes if name in SYNTHETIC else [None]
        for n in sizes:
            train, test, C, gamma = prepare(name, n)
            from randsvm_dist.data import Dataset

            rows = Dataset.open(train).n_rows
            common = [str(train), str(test), str(C), str(gamma)]
            if rows <= args.libsvm_max_rows or (name, rows) not in LIBSVM_REFERENCE:
                env = ({"OMP_NUM_THREADS": str(args.libsvm_threads)} if args.libsvm_threads
                       else None)
                lib = _subprocess(["libsvm", *common], env)
                lib["source"] = "run"
            else:
                lib = {**LIBSVM_REFERENCE[(name, rows)], "source": "DESIGN.md 2026-11-21"}
            rnd = _subprocess(["randsvm", *common, str(args.gap_tol), str(args.workers),
                               args.k])
            ratio = lib["seconds"] / rnd["seconds"]
            mark = "*" if lib["source"] != "run" else " "
            print(f"{name:14s} {rows:9d} | {lib['seconds']:8.1f}{mark} {lib['accuracy']:7.4f} "
                  f"{lib['n_support']:7d} | {rnd['seconds']:9.1f} {rnd['accuracy']:7.4f} "
                  f"{rnd['n_support']:7d} {rnd['iterations']:3d} {rnd['stop']:>9s} "
                  f"{rnd['peak_rss_mb']:7.0f} | {ratio:7.1f}x "
                  f"{100 * (rnd['accuracy'] - lib['accuracy']):+6.2f}", flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps({"set": name, "n": rows, "C": C, "gamma": gamma,
                                        "gap_tol": args.gap_tol, "k": args.k, "libsvm": lib,
                                        "randsvm": rnd, "date": time.strftime("%F %T")})
                            + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        engine, train, test, C, gamma, *rest = sys.argv[2:]
        if engine == "libsvm":
            res = run_libsvm(Path(train), Path(test), float(C), float(gamma))
        else:
            k = {"auto": "auto", "none": None}[rest[2]] if len(rest) > 2 else "auto"
            res = run_randsvm(Path(train), Path(test), float(C), float(gamma), float(rest[0]),
                              int(rest[1]), k)
        print(json.dumps(res))
        sys.exit(0)
    sys.exit(main())
