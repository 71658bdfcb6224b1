"""probability=True (issue 39): its cost and its probabilities against SVC's and sklearnex's.

Parts (``--parts``, any of):

* ``small``: RandSVMClassifier(probability=True) against scikit-learn's SVC on iris,
  breast_cancer and digits (same random_state: LIBSVM's fold assignment): max |difference|
  of predict_proba, argmax agreement, probA/probB, and how much SVC itself moves across
  random_state (0..4).
* ``sklearnex``: against scikit-learn-intelex's SVC(probability=True) on ``--compare-rows``
  rows of ``--set`` (default twonorm 200,000; test 20,000 rows): max |difference|, argmax
  agreement, seconds of each.
* ``cost``: the seconds a fit of ``--rows`` rows of ``--set`` (a Parquet data set written
  under ``--scratch``, on a LocalCluster of ``--workers`` x 1 thread) takes with and without
  probability=True, their ratio, and ``probability_method_`` ('cv5' or 'holdout').

Every measurement is printed as one JSON line (``--out``: also appended there).

    python benchmarks/bench_probability.py --parts small
    python benchmarks/bench_probability.py --parts sklearnex --compare-rows 200000
    python benchmarks/bench_probability.py --parts cost --rows 1000000
    python benchmarks/bench_probability.py --parts small --quick   # a correctness run
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _emit(record: dict, out: str | None) -> None:
    line = json.dumps(record, default=float)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def _compare(p: np.ndarray, q: np.ndarray) -> dict:
    return {"max_abs_diff": float(np.abs(p - q).max()),
            "argmax_agreement": float((p.argmax(1) == q.argmax(1)).mean())}


def part_small(args) -> None:
    from sklearn import datasets
    from sklearn.svm import SVC

    from randsvm_dist import RandSVMClassifier

    sets = [("iris", datasets.load_iris), ("breast_cancer", datasets.load_breast_cancer),
            ("digits", datasets.load_digits)]
    for name, load in sets[:2] if args.quick else sets:
        X, y = load(return_X_y=True)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = RandSVMClassifier(probability=True, random_state=0).fit(X, y)
        seconds = time.perf_counter() - t
        svc = [SVC(probability=True, random_state=s).fit(X, y) for s in range(5)]
        p = ours.predict_proba(X)
        q = [s.predict_proba(X) for s in svc]
        _emit({"part": "small", "set": name, "rows": len(y), **_compare(p, q[0]),
               "svc_across_random_state": max(float(np.abs(a - q[0]).max()) for a in q[1:]),
               "probA": ours.probA_[:3].tolist(), "svc_probA": svc[0].probA_[:3].tolist(),
               "method": ours.probability_method_, "seconds": seconds}, args.out)


def part_sklearnex(args) -> None:
    from sklearnex.svm import SVC

    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data.generators import make_arrays

    X, y = make_arrays(args.set, args.compare_rows, seed=1)
    Xt, _ = make_arrays(args.set, 20_000, seed=2)
    t = time.perf_counter()
    theirs = SVC(probability=True, random_state=0).fit(X, y)
    t_theirs = time.perf_counter() - t
    t = time.perf_counter()
    ours = RandSVMClassifier(probability=True, random_state=0).fit(X, y)
    t_ours = time.perf_counter() - t
    _emit({"part": "sklearnex", "set": args.set, "rows": args.compare_rows,
           **_compare(ours.predict_proba(Xt), theirs.predict_proba(Xt)),
           "method": ours.probability_method_, "seconds": t_ours,
           "sklearnex_seconds": t_theirs}, args.out)


def part_cost(args) -> None:
    from distributed import Client

    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make
    from randsvm_dist.engine.launcher import launch, wait_for_workers

    data = Path(args.scratch) / f"{args.set}_{args.rows}"
    if not data.exists():
        make(args.set, data, rows=args.rows, seed=1)
    procs = launch(n_workers=args.workers)
    try:
        with Client(procs.address, set_as_default=False) as client:
            wait_for_workers(client, args.workers)
            seconds = {}
            for probability in (False, True):
                est = RandSVMClassifier(probability=probability, random_state=0, client=client)
                t = time.perf_counter()
                est.fit(str(data))
                seconds[probability] = time.perf_counter() - t
            _emit({"part": "cost", "set": args.set, "rows": args.rows,
                   "fit_seconds": seconds[False], "probability_seconds": seconds[True],
                   "ratio": seconds[True] / seconds[False],
                   "method": est.probability_method_}, args.out)
    finally:
        procs.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["small"],
                    choices=["small", "sklearnex", "cost"])
    ap.add_argument("--set", default="twonorm")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--compare-rows", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scratch", default=tempfile.gettempdir())
    ap.add_argument("--quick", action="store_true", help="iris and breast_cancer only")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    for part in args.parts:
        {"small": part_small, "sklearnex": part_sklearnex, "cost": part_cost}[part](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
