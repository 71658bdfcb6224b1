"""Every learner with its default parameters against the majority class, on every shared
real data set (accuracy, not time).

Data sets (read in place from ../shared/datasets with ``load_svmlight_file``): a9a and
ijcnn1 are tested on their own test files; w8a, skin_nonskin, german.numer_scale,
heart_scale and the two binary mnist subsets (0-vs-1, 8-vs-9) on a stratified 30% hold-out
(seed 0). Training sets larger than ``--max-train`` rows and test sets larger than
``--max-test`` rows are subsampled uniformly (seed 0); the table says so. Features are used
as the files give them (no scaling by this script): the defaults must cope.

The majority rate is the test-set frequency of the training set's most frequent class.

Usage::

    python benchmarks/bench_defaults.py --out /tmp/defaults.jsonl      # the table
    python benchmarks/bench_defaults.py --datasets heart_scale --learners StreamSVM
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))

# name -> (train file, test file or None for a hold-out, n_features)
FILES = {
    "a9a": ("a9a/a9a.train.svm.gz", "a9a/a9a.test.svm.gz", 123),
    "ijcnn1": ("ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz", 22),
    "w8a": ("w8a/w8a.train.svm.gz", None, 300),
    "skin_nonskin": ("skin_nonskin/skin_nonskin.svm.gz", None, 3),
    "german.numer_scale": ("german.numer_scale/german.numer_scale.svm.gz", None, 24),
    "heart_scale": ("heart_scale/heart_scale.svm.gz", None, 13),
    "mnist01": ("mnist/mnist01.scale.test.svm.gz", None, 780),
    "mnist89": ("mnist/mnist89.scale.test.svm.gz", None, 780),
}


def learners() -> dict:
    """name -> a factory of the learner with its default parameters."""
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.streaming import BlurredBallSVM, BudgetedSGD, OnlineRampSVM, StreamSVM

    return {
        "StreamSVM": StreamSVM,
        "BlurredBallSVM": BlurredBallSVM,
        "BudgetedSGD": BudgetedSGD,
        "OnlineRampSVM": OnlineRampSVM,
        "OnlineRampSVM(active)": lambda: OnlineRampSVM(active=True),
        "RandSVMClassifier": RandSVMClassifier,
    }


def _subsample(X, y, m: int, rng):
    if X.shape[0] <= m:
        return X, y, False
    keep = np.sort(rng.choice(X.shape[0], m, replace=False))
    return X[keep], y[keep], True


def load(name: str, max_train: int, max_test: int):
    """(X_train, y_train, X_test, y_test, note) as float32 CSR, train rows in file order."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.model_selection import train_test_split

    train, test, d = FILES[name]
    X, y = load_svmlight_file(str(DATASETS / train), n_features=d)
    if test:
        Xt, yt = load_svmlight_file(str(DATASETS / test), n_features=d)
    else:
        X, Xt, y, yt = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    rng = np.random.default_rng(0)
    n, nt = X.shape[0], Xt.shape[0]
    X, y, cut = _subsample(X, y, max_train, rng)
    Xt, yt, cut_t = _subsample(Xt, yt, max_test, rng)
    note = (f"train {X.shape[0]:,}" + (f" of {n:,}" if cut else "")
            + f", test {Xt.shape[0]:,}" + (f" of {nt:,}" if cut_t else ""))
    return X.astype(np.float32), y, Xt.astype(np.float32), yt, note


def run(name: str, learner: str, factory, data, client) -> dict:
    """Fit one default learner; its test accuracy against the majority rate."""
    X, y, Xt, yt, note = data
    values, counts = np.unique(y, return_counts=True)
    majority = float(np.mean(yt == values[np.argmax(counts)]))
    est = factory()
    if learner == "RandSVMClassifier":
        est.set_params(client=client, random_state=0)
    t0 = time.perf_counter()
    est.fit(X, y)
    acc = float(est.score(Xt, yt))
    return {"dataset": name, "learner": learner, "accuracy": acc, "majority": majority,
            "beats_majority": acc > majority, "rows": note,
            "seconds": time.perf_counter() - t0}


def markdown(rows: list[dict]) -> str:
    """The defaults-vs-majority table (one row per data set, one column per learner)."""
    names = list(dict.fromkeys(r["learner"] for r in rows))
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    head = "| data set | rows used | majority | " + " | ".join(names) + " |"
    out = [head, "|" + "---|" * (3 + len(names))]
    for s in sets:
        got = {r["learner"]: r for r in rows if r["dataset"] == s}
        first = next(iter(got.values()))
        cells = []
        for n in names:
            r = got.get(n)
            cells.append("n/a" if r is None else
                         f"{100 * r['accuracy']:.1f}" + ("" if r["beats_majority"] else " **x**"))
        out.append(f"| {s} | {first['rows']} | {100 * first['majority']:.1f} | "
                   + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    """Run the grid; print the table; return 1 if a default loses to the majority class."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(FILES))
    ap.add_argument("--learners", nargs="*", default=None)
    ap.add_argument("--max-train", type=int, default=10_000)
    ap.add_argument("--max-test", type=int, default=10_000)
    ap.add_argument("--out", help="append one JSON line per run")
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    facts = learners()
    chosen = args.learners or list(facts)
    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cl, \
            Client(cl) as client:
        for name in args.datasets:
            data = load(name, args.max_train, args.max_test)
            for learner in chosen:
                r = run(name, learner, facts[learner], data, client)
                print(json.dumps(r), flush=True)
                rows.append(r)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(r) + "\n")
    print(markdown(rows))
    return 0 if all(r["beats_majority"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
