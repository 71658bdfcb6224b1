"""BudgetedSGD (multi-merge BSGD) side by side with full LIBSVM on the paper's data sets.

For each data set: LIBSVM (libsvm-official, same C and gamma) once, then BudgetedSGD for one
epoch with budgets B at fractions of LIBSVM's #SV and merge sizes M, reporting training time,
prediction time, test accuracy and the counters. The rows are presented in one fixed random
order per seed (the paper's SGD samples points in random order), identical for every (B, M).

Usage (see benchmarks/README.md for the recorded runs)::

    OMP_NUM_THREADS=1 python benchmarks/bench_bsgd.py --datasets a9a ijcnn1 w8a skin_nonskin \\
        --fractions 0.05 0.15 0.5 --merge-sizes 2 3 5 10 --json /tmp/bsgd_bench.json

LIBSVM results are cached in ``--libsvm-cache`` (JSON) so a rerun does not repeat the long
skin_nonskin solve. Data are read in place from ``shared/datasets`` (never copied).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from randsvm_dist.streaming import BudgetedSGD

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))

# name: (C, gamma, n_features, train file, test file or None -> 2/3-1/3 split)
DATASETS = {
    "a9a": (32.0, 0.008, 123, "a9a/a9a.train.svm.gz", "a9a/a9a.test.svm.gz"),
    "ijcnn1": (32.0, 2.0, 22, "ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz"),
    "w8a": (8.0, 0.03, 300, "w8a/w8a.train.svm.gz", None),
    "skin_nonskin": (8.0, 0.03, 3, "skin_nonskin/skin_nonskin.svm.gz", None),
}
SPLIT_SEED = 0


def load(name: str):
    """Train/test arrays of a data set, labels mapped to -1/+1.

    Returns:
        (X_train, y_train, X_test, y_test); X float64 CSR, or dense when mostly non-zero.
    """
    _, _, d, train, test = DATASETS[name]
    X, y = load_svmlight_file(str(DATA / train), n_features=d)
    if test is None:
        perm = np.random.default_rng(SPLIT_SEED).permutation(X.shape[0])
        cut = (2 * X.shape[0]) // 3
        Xt, yt = X[perm[cut:]], y[perm[cut:]]
        X, y = X[perm[:cut]], y[perm[:cut]]
    else:
        Xt, yt = load_svmlight_file(str(DATA / test), n_features=d)
    labels = np.unique(np.concatenate([y, yt]))
    if len(labels) != 2:
        raise ValueError(f"{name}: expected two labels, got {labels}")
    y = np.where(y == labels[1], 1.0, -1.0)
    yt = np.where(yt == labels[1], 1.0, -1.0)
    if X.nnz > 0.5 * X.shape[0] * X.shape[1]:
        X, Xt = X.toarray(), Xt.toarray()
    return X, y, Xt, yt


def run_libsvm(X, y, Xt, yt, C: float, gamma: float) -> dict:
    """Train and test full LIBSVM (RBF, -m 1000). Returns time, accuracy and #SV."""
    from libsvm.svmutil import svm_predict, svm_train

    Xs, Xts = sp.csr_matrix(X), sp.csr_matrix(Xt)
    t0 = time.perf_counter()
    model = svm_train(y, Xs, f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q")
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, (acc, _, _), _ = svm_predict(yt, Xts, model, "-q")
    return {"train_s": train_s, "predict_s": time.perf_counter() - t0, "accuracy": acc / 100,
            "n_sv": int(model.get_nr_sv())}


def run_bsgd(X, y, Xt, yt, C: float, gamma: float, budget: int, M: int, method: str,
             fit_intercept: bool) -> dict:
    """One epoch of BudgetedSGD in the given row order. Returns time, accuracy, counters."""
    est = BudgetedSGD(C=C, gamma=gamma, budget=budget, merge_size=M, merge_method=method,
                      fit_intercept=fit_intercept)
    t0 = time.perf_counter()
    est.fit(X, y)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    acc = est.score(Xt, yt)
    return {"train_s": train_s, "predict_s": time.perf_counter() - t0, "accuracy": acc,
            "n_sv": int(est.n_support_.sum()), "kernel_evals": est.n_kernel_evals_,
            "maintenance": est.n_maintenance_, "merges": est.n_merges_,
            "violations": est.n_violations_}


def summarize(paths: list[str]) -> str:
    """Markdown tables (one per data set) from result JSON files: means over seeds.

    Args:
        paths: JSON files written by a run (``--json``).

    Returns:
        the markdown text.
    """
    runs, libsvm = [], {}
    for p in paths:
        d = json.loads(Path(p).read_text())
        runs += d["bsgd"]
        libsvm.update(d["libsvm"])
    lines = []
    for name in [n for n in DATASETS if n in libsvm]:
        lib = libsvm[name]
        lines += [f"### {name} (C={DATASETS[name][0]:g}, gamma={DATASETS[name][1]:g})", "",
                  f"LIBSVM: train {lib['train_s']:.1f} s, test accuracy "
                  f"{100 * lib['accuracy']:.2f}%, {lib['n_sv']} SVs.", "",
                  "| B (% of LIBSVM #SV) | M | seeds | train s (mean) | speed-up vs M=2 | "
                  "accuracy % (mean ± sd) | min-max % | maintenance steps | SVs added |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        rs = [r for r in runs if r["dataset"] == name]
        for B in sorted({r["budget"] for r in rs}):
            base = None
            for M in sorted({r["M"] for r in rs if r["budget"] == B}):
                g = [r for r in rs if r["budget"] == B and r["M"] == M]
                t = float(np.mean([r["train_s"] for r in g]))
                acc = 100 * np.array([r["accuracy"] for r in g])
                base = t if M == 2 else base
                speed = f"{base / t:.2f}x" if base else "-"
                lines.append(
                    f"| {B} ({100 * g[0]['fraction']:g}%) | {M} | {len(g)} | {t:.2f} | {speed} | "
                    f"{acc.mean():.2f} ± {acc.std():.2f} | {acc.min():.2f}-{acc.max():.2f} | "
                    f"{np.mean([r['maintenance'] for r in g]):.0f} | "
                    f"{np.mean([r['violations'] for r in g]):.0f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run the benchmark; prints one line per run and writes all results as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.05, 0.15, 0.5])
    ap.add_argument("--merge-sizes", nargs="+", type=int, default=[2, 3, 5, 10])
    ap.add_argument("--method", default="golden", choices=["golden", "gradient"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0],
                    help="row-order seeds (one run of every (B, M) per seed)")
    ap.add_argument("--no-intercept", action="store_true", help="fit_intercept=False")
    ap.add_argument("--libsvm-cache", default="/tmp/bsgd_bench_libsvm.json")
    ap.add_argument("--json", default="/tmp/bsgd_bench.json")
    ap.add_argument("--summarize", nargs="+", metavar="JSON",
                    help="print markdown tables from earlier runs' JSON files and exit")
    args = ap.parse_args(argv)
    if args.summarize:
        print(summarize(args.summarize))
        return 0

    cache_path = Path(args.libsvm_cache)
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "host": platform.node(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
           "args": vars(args), "libsvm": {}, "bsgd": []}
    # compile the numba loops before timing anything
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(50, 3))
    for m in ("golden", "gradient"):
        BudgetedSGD(budget=5, merge_size=3, merge_method=m).fit(Xw, Xw[:, 0] > 0)
        BudgetedSGD(budget=5, merge_size=3, merge_method=m).fit(sp.csr_matrix(Xw), Xw[:, 0] > 0)

    for name in args.datasets:
        C, gamma = DATASETS[name][:2]
        X, y, Xt, yt = load(name)
        print(f"== {name}: train {X.shape}, test {Xt.shape}, C={C}, gamma={gamma}", flush=True)
        if name not in cache:
            lib = run_libsvm(X, y, Xt, yt, C, gamma)
            lib["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            # re-read: another run may have added a data set meanwhile
            cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
            cache[name] = lib
            cache_path.write_text(json.dumps(cache, indent=1))
        lib = cache[name]
        out["libsvm"][name] = lib
        print(f"LIBSVM  train {lib['train_s']:8.2f} s  acc {100 * lib['accuracy']:6.2f}%  "
              f"#SV {lib['n_sv']}", flush=True)
        for frac in args.fractions:
            B = max(2, int(round(frac * lib["n_sv"])))
            for M in args.merge_sizes:
                if M > B + 1:
                    continue
                for seed in args.seeds:
                    perm = np.random.default_rng(seed).permutation(X.shape[0])
                    r = run_bsgd(X[perm], y[perm], Xt, yt, C, gamma, B, M, args.method,
                                 not args.no_intercept)
                    r.update(dataset=name, fraction=frac, budget=B, M=M, seed=seed,
                             method=args.method)
                    out["bsgd"].append(r)
                    print(f"BSGD B={B:5d} ({frac:4.0%}) M={M:2d} seed={seed}  train "
                          f"{r['train_s']:7.2f} s  acc {100 * r['accuracy']:6.2f}%  "
                          f"maint {r['maintenance']:6d}  kev {r['kernel_evals']:.3g}",
                          flush=True)
                Path(args.json).write_text(json.dumps(out, indent=1))
    Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
