"""The streaming learners' seed papers' tables, each with its own protocol, in one runner.

Suites (``--suite``, any of):

- ``streamsvm``: "Streamed Learning: One-Pass SVMs", Table 1. Linear kernel; StreamSVM
  Algorithm 1 (lookahead 1) and Algorithm 2 (lookahead 10) over ``--orders`` random stream
  orders (median, worst, std), LIBSVM linear (``-t 0``, same C) in batch as the reference.
  Sets: ijcnn1 (the first 35,000 training rows, the 91,701 test rows, as the paper), w8a
  (for w3a: 2/3 train, 1/3 test), and two Fashion-MNIST pairs for MNIST's (sandal vs
  sneaker, shirt vs T-shirt: the full training rows of the pair, the test rows; pixels/255).
- ``bsgd``: "Multi-Merge Budget Maintenance", figures 2-3. BudgetedSGD, one epoch,
  lambda = 1/(n C), B at 1/5/10/15/25/50% of LIBSVM's #SV (``--fractions``), M = 2..5,
  ``--seeds`` random row orders; accuracy and train time (time: see below). The LIBSVM
  #SV of each set is the recorded one (benchmarks/README.md), not recomputed. Also the
  issue-19 target row: a9a, B=500, M=2..5, 5 seeds.
- ``ramp``: "Fast Online Training of Ramp Loss SVMs": OnlineSVMR (and OnlineASVMR) against
  LIBSVM (same C and gamma) on the noisy checkerboard (10% flipped labels; 10,000 rows,
  tested on clean rows of another seed, standardized with the training mean/std), #SV
  ratio; a9a (first 10,000 rows, as bench_ramp.py).
- ``orders``: every learner with its **default settings** over ``--orders`` random orders
  of ijcnn1 (first 35,000 rows) and a9a: median, worst, std of the test accuracy, and
  whether the worst is within 2 points of the median (issue 19). The ramp learner keeps
  every point by default, so its runs use the first 10,000 rows of each order.

Every result is one JSON line in ``--out`` (default
``benchmarks/results/streaming_papers.jsonl``); ``--table`` prints the markdown tables of
benchmarks/README.md from that file. Times are printed and stored but are only meaningful on
a quiet machine (``OMP_NUM_THREADS=1``, nothing else running); accuracies do not depend on
the load.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_streaming_papers.py --suite streamsvm orders
    OMP_NUM_THREADS=1 python benchmarks/bench_streaming_papers.py --suite bsgd --timing-only
    python benchmarks/bench_streaming_papers.py --table
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
OUT = ROOT / "benchmarks" / "results" / "streaming_papers.jsonl"
SPLIT_SEED = 0

# LIBSVM #SV with the BSGD paper's (C, gamma) (benchmarks/results/streaming_papers_bsgd.jsonl)
BSGD_SETS = {  # name: (C, gamma, LIBSVM #SV, LIBSVM test accuracy %)
    "a9a": (32.0, 0.008, 11374, 85.11),
    "ijcnn1": (32.0, 2.0, 2478, 98.70),
    "w8a": (8.0, 0.03, 2054, 98.90),
    "skin_nonskin": (8.0, 0.03, 11146, 99.96),
}
# StreamSVM Table 1: the paper's figures (Algo-1, Algo-2, LIBSVM) where it has the set
STREAMSVM_PAPER = {"ijcnn1_35k": (85.32, 87.81, 91.64), "w8a": (89.06, None, None)}
STREAMSVM_C = 1.0
FASHION_PAIRS = {"fmnist_sandal_sneaker": (5, 7), "fmnist_shirt_tshirt": (6, 0)}


# -- data ---------------------------------------------------------------------------------
def _svm(path: str, d: int):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(DATA / path), n_features=d)
    return X.astype(np.float32), y


def _pm1(y, yt, positive=None):
    labels = np.unique(np.concatenate([y, yt]))
    pos = labels[-1] if positive is None else positive
    return np.where(y == pos, 1.0, -1.0), np.where(yt == pos, 1.0, -1.0)


def _split(X, y):
    perm = np.random.default_rng(SPLIT_SEED).permutation(X.shape[0])
    cut = (2 * X.shape[0]) // 3
    return X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(name: str):
    """(X_train, y_train, X_test, y_test) of a benchmark set, labels -1/+1.

    Raises:
        FileNotFoundError: the shared data set is missing.
    """
    if name in ("ijcnn1", "ijcnn1_35k"):
        X, y = _svm("ijcnn1/ijcnn1.train.svm.gz", 22)
        Xt, yt = _svm("ijcnn1/ijcnn1.test.svm.gz", 22)
        if name == "ijcnn1_35k":
            X, y = X[:35_000], y[:35_000]
        y, yt = _pm1(y, yt)
        return X.toarray(), y, Xt.toarray(), yt
    if name == "a9a":
        X, y = _svm("a9a/a9a.train.svm.gz", 123)
        Xt, yt = _svm("a9a/a9a.test.svm.gz", 123)
        y, yt = _pm1(y, yt)
        return X, y, Xt, yt
    if name in ("w8a", "skin_nonskin"):
        path = "w8a/w8a.train.svm.gz" if name == "w8a" else "skin_nonskin/skin_nonskin.svm.gz"
        X, y = _svm(path, 300 if name == "w8a" else 3)
        X, y, Xt, yt = _split(X, y)
        y, yt = _pm1(y, yt, positive=1.0)
        if name == "skin_nonskin":
            X, Xt = X.toarray(), Xt.toarray()
        return X, y, Xt, yt
    if name in FASHION_PAIRS:
        a, b = FASHION_PAIRS[name]
        fm = DATA / "fashion-mnist"
        out = []
        for split in ("train", "t10k"):
            imgs = _idx(fm / f"{split}-images-idx3-ubyte.gz").reshape(-1, 784)
            labs = _idx(fm / f"{split}-labels-idx1-ubyte.gz")
            keep = (labs == a) | (labs == b)
            out += [(imgs[keep] / 255.0).astype(np.float32), np.where(labs[keep] == a, 1.0, -1.0)]
        return tuple(out)
    if name == "noisy_checkerboard10":
        from randsvm_dist.data import make_arrays

        X, y = make_arrays("checkerboard", 10_000, 1)
        y = np.asarray(y, dtype=float).copy()
        flip = np.random.default_rng(8).random(len(y)) < 0.10
        y[flip] = -y[flip]
        Xt, yt = make_arrays("checkerboard", 10_000, 1001)
        mu, sd = X.mean(axis=0), X.std(axis=0)
        return (((X - mu) / sd).astype(np.float32), y, ((Xt - mu) / sd).astype(np.float32),
                np.asarray(yt, dtype=float))
    raise ValueError(f"unknown set {name!r}")


# -- helpers ------------------------------------------------------------------------------
def orders(n: int, k: int) -> list[np.ndarray]:
    """k random permutations of n rows (seeds 0..k-1)."""
    return [np.random.default_rng(s).permutation(n) for s in range(k)]


def summary(acc: list[float]) -> dict:
    """Median, worst, best, mean, std (percent) and the issue-19 robustness test."""
    a = 100.0 * np.asarray(acc)
    med = float(np.median(a))
    return {"median": round(med, 2), "worst": round(float(a.min()), 2),
            "best": round(float(a.max()), 2), "mean": round(float(a.mean()), 2),
            "std": round(float(a.std()), 2), "n": len(a),
            "worst_within_2": bool(med - a.min() <= 2.0)}


def libsvm(X, y, Xt, yt, C: float, kernel: str = "linear", gamma: float | None = None) -> dict:
    """LIBSVM (libsvm-official) in batch: accuracy %, #SV, seconds."""
    from libsvm.svmutil import svm_predict, svm_train

    opts = f"-s 0 -c {C} -m 1000 -q " + ("-t 0" if kernel == "linear" else f"-t 2 -g {gamma}")
    t0 = time.perf_counter()
    model = svm_train(y, sp.csr_matrix(X), opts)
    secs = time.perf_counter() - t0
    _, (acc, _, _), _ = svm_predict(yt, sp.csr_matrix(Xt), model, "-q")
    return {"accuracy": round(acc, 2), "n_sv": int(model.get_nr_sv()), "seconds": secs}


def emit(rec: dict, out: Path) -> None:
    rec = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), **rec}
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec), flush=True)


def over_orders(make, X, y, Xt, yt, k: int, rows: int | None = None) -> tuple[dict, list]:
    """Fit make() on k orders of (X, y) (the first ``rows`` of each); test accuracies."""
    accs, secs, cores = [], [], []
    for perm in orders(X.shape[0], k):
        if rows:
            perm = perm[:rows]
        est = make()
        t0 = time.perf_counter()
        est.fit(X[perm], y[perm])
        secs.append(time.perf_counter() - t0)
        accs.append(est.score(Xt, yt))
        cores.append(est.n_core_)
    return {**summary(accs), "seconds_median": float(np.median(secs)),
            "n_core_median": float(np.median(cores))}, accs


# -- suites -------------------------------------------------------------------------------
def suite_streamsvm(args, out: Path) -> None:
    from randsvm_dist.streaming import StreamSVM

    for name in args.streamsvm_sets:
        X, y, Xt, yt = load(name)
        C = STREAMSVM_C
        ref = libsvm(X, y, Xt, yt, C) if not args.no_libsvm else None
        for L in args.lookaheads:
            algo = "algo1" if L == 1 else "algo2" if L == 10 else f"algo2_L{L}"
            res, accs = over_orders(lambda L=L, C=C: StreamSVM(kernel="linear", C=C, lookahead=L,
                                                        random_state=0),
                                    X, y, Xt, yt, args.orders)
            emit({"suite": "streamsvm", "set": name, "algo": algo, "lookahead": L, "C": C,
                  **res, "accuracies": accs, "libsvm_linear": ref,
                  "paper": STREAMSVM_PAPER.get(name)}, out)


def suite_bsgd(args, out: Path) -> None:
    from randsvm_dist.streaming import BudgetedSGD

    for name in args.bsgd_sets:
        C, gamma, nsv, lib_acc = BSGD_SETS[name]
        X, y, Xt, yt = load(name)
        budgets = [500] if args.timing_only else \
            sorted({max(10, round(f * nsv)) for f in args.fractions})
        if name == "a9a" and 500 not in budgets:
            budgets.append(500)
        for B in budgets:
            for M in (2, 3, 4, 5):
                accs, secs = [], []
                seeds = max(5, args.seeds) if (name, B) == ("a9a", 500) else args.seeds
                for s in range(seeds):
                    perm = np.random.default_rng(s).permutation(X.shape[0])
                    est = BudgetedSGD(C=C, gamma=gamma, budget=B, merge_size=M,
                                      random_state=s)
                    Xp, yp = X[perm], y[perm]
                    t0 = time.perf_counter()
                    est.fit(Xp, yp)
                    secs.append(time.perf_counter() - t0)
                    accs.append(est.score(Xt, yt))
                emit({"suite": "bsgd", "set": name, "B": B, "fraction": round(B / nsv, 4),
                      "M": M, "C": C, "gamma": gamma, **summary(accs),
                      "seconds_median": float(np.median(secs)), "seconds": secs,
                      "accuracies": accs, "libsvm_n_sv": nsv, "libsvm_accuracy": lib_acc,
                      "timing_note": "valid only on a quiet machine"}, out)


def suite_ramp(args, out: Path) -> None:
    from randsvm_dist.streaming import OnlineRampSVM

    for name, C, gamma, rows in (("noisy_checkerboard10", 10.0, 4.0, None),
                                 ("a9a", 1.0, 1.0 / 123, 10_000)):
        X, y, Xt, yt = load(name)
        if rows:
            X, y = X[:rows], y[:rows]
        ref = libsvm(X, y, Xt, yt, C, "rbf", gamma)
        for variant, kw in (("OnlineSVMR", {}), ("OnlineASVMR", {"active": True})):
            t0 = time.perf_counter()
            est = OnlineRampSVM(C=C, gamma=gamma, random_state=0, **kw).fit(X, y)
            secs = time.perf_counter() - t0
            acc = 100 * est.score(Xt, yt)
            emit({"suite": "ramp", "set": name, "variant": variant, "C": C, "gamma": gamma,
                  "accuracy": round(acc, 2), "n_sv": int(est.n_support_),
                  "sv_ratio": round(est.n_support_ / ref["n_sv"], 3),
                  "labels_used": int(est.n_labels_queried_), "seconds": secs,
                  "libsvm": ref, "acc_ge_libsvm": bool(acc >= ref["accuracy"]),
                  "ratio_le_0.2": bool(est.n_support_ <= 0.2 * ref["n_sv"])}, out)


def suite_orders(args, out: Path) -> None:
    from randsvm_dist.streaming import LEARNERS

    for name in args.order_sets:
        X, y, Xt, yt = load(name)
        for key, cls in LEARNERS.items():
            if args.learners and key not in args.learners:
                continue
            rows = 10_000 if key == "ramp" else None
            res, accs = over_orders(lambda cls=cls: cls(random_state=0), X, y, Xt, yt,
                                    args.orders, rows)
            emit({"suite": "orders", "set": name, "learner": key, "rows": rows or X.shape[0],
                  **res, "accuracies": accs}, out)


# -- tables -------------------------------------------------------------------------------
def table(path: Path) -> str:
    """Markdown tables of the latest record of each (suite, key) in the JSONL file."""
    recs = [json.loads(line) for line in open(path)]
    latest: dict = {}
    for r in recs:
        key = (r["suite"], r.get("set"), r.get("algo"), r.get("B"), r.get("M"),
               r.get("variant"), r.get("learner"))
        latest[key] = r
    rows = list(latest.values())
    out = []
    s = [r for r in rows if r["suite"] == "streamsvm"]
    if s:
        out += ["| set | algorithm | median % | worst % | std | worst within 2 of median | "
                "LIBSVM linear % | paper (Algo-1 / Algo-2 / LIBSVM) |",
                "|---|---|---:|---:|---:|---|---:|---|"]
        for r in s:
            lib = r.get("libsvm_linear") or {}
            out.append(f"| {r['set']} | {r['algo']} (L={r['lookahead']}) | {r['median']:.2f} | "
                       f"{r['worst']:.2f} | {r['std']:.2f} | {r['worst_within_2']} | "
                       f"{lib.get('accuracy', '-')} | {r.get('paper') or '-'} |")
        out.append("")
    b = [r for r in rows if r["suite"] == "bsgd"]
    if b:
        out += ["| set | B (share of LIBSVM #SV) | M | seeds | median % | worst % | std | "
                "time median s | speed-up vs M=2 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        m2 = {(r["set"], r["B"]): r["seconds_median"] for r in b if r["M"] == 2}
        for r in sorted(b, key=lambda r: (r["set"], r["B"], r["M"])):
            base = m2.get((r["set"], r["B"]))
            speed = f"{base / r['seconds_median']:.2f}x" if base else "-"
            out.append(f"| {r['set']} | {r['B']} ({100 * r['fraction']:.1f}%) | {r['M']} | "
                       f"{r['n']} | {r['median']:.2f} | {r['worst']:.2f} | {r['std']:.2f} | "
                       f"{r['seconds_median']:.2f} | {speed} |")
        out.append("")
    m = [r for r in rows if r["suite"] == "ramp"]
    if m:
        out += ["| set | variant | acc % | #SV | LIBSVM acc % | LIBSVM #SV | #SV ratio | "
                "labels used |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in m:
            out.append(f"| {r['set']} | {r['variant']} | {r['accuracy']:.2f} | {r['n_sv']} | "
                       f"{r['libsvm']['accuracy']:.2f} | {r['libsvm']['n_sv']} | "
                       f"{r['sv_ratio']:.3f} | {r['labels_used']} |")
        out.append("")
    o = [r for r in rows if r["suite"] == "orders"]
    if o:
        out += ["| set | learner (defaults) | rows | median % | worst % | best % | std | "
                "worst within 2 of median |", "|---|---|---:|---:|---:|---:|---:|---|"]
        for r in o:
            out.append(f"| {r['set']} | {r['learner']} | {r['rows']} | {r['median']:.2f} | "
                       f"{r['worst']:.2f} | {r['best']:.2f} | {r['std']:.2f} | "
                       f"{r['worst_within_2']} |")
    return "\n".join(out)


def main(argv=None) -> None:
    """Command line entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", nargs="+", default=[],
                   choices=["streamsvm", "bsgd", "ramp", "orders"])
    p.add_argument("--orders", type=int, default=20)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--fractions", type=float, nargs="+",
                   default=[0.01, 0.05, 0.10, 0.15, 0.25, 0.50])
    p.add_argument("--streamsvm-sets", nargs="+",
                   default=["ijcnn1_35k", "w8a", *FASHION_PAIRS])
    p.add_argument("--bsgd-sets", nargs="+", default=list(BSGD_SETS))
    p.add_argument("--order-sets", nargs="+", default=["ijcnn1_35k", "a9a"])
    p.add_argument("--learners", nargs="+", default=None)
    p.add_argument("--timing-only", action="store_true",
                   help="bsgd: only B=500 (the issue's timing row), to rerun on a quiet machine")
    p.add_argument("--lookaheads", type=int, nargs="+", default=[1, 10],
                   help="streamsvm: lookaheads (1 = Algorithm 1; the paper's Algo-2 is 10)")
    p.add_argument("--no-libsvm", action="store_true")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--table", action="store_true", help="print the tables of --out")
    args = p.parse_args(argv)
    for s in args.suite:
        globals()[f"suite_{s}"](args, args.out)
    if args.table:
        print(table(args.out))


if __name__ == "__main__":
    main()
