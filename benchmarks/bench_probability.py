"""probability=True (issue 39): its cost and its probabilities against SVC's and sklearnex's.

Parts (``--parts``, any of):

* ``small``: RandSVMClassifier(probability=True) against scikit-learn's SVC on iris,
  breast_cancer and digits (same random_state: LIBSVM's fold assignment): max |difference|
  of predict_proba, argmax agreement, probA/probB, and how much SVC itself moves across
  random_state (0..4).
* ``sklearnex``: against scikit-learn-intelex's SVC(probability=True) on ``--compare-rows``
  rows of ``--set`` (default twonorm 200,000; test 20,000 rows): max |difference|, argmax
  agreement, seconds of each. sklearnex runs first, in a process of its own with its
  default threads (no Dask cluster exists yet); ours then on the same rows in memory
  ('libsvm_cv5') and as a Parquet data set on the embedded cluster ('cv5': the folds at
  once).
* ``seeds``: how far our probabilities move across ``random_state`` (0, 1, 2) on the
  'sklearnex' part's rows in memory, beside each seed's difference to sklearnex's.
* ``cost``: the seconds a fit of ``--rows`` rows of ``--set`` (a Parquet data set written
  under ``--scratch``, on the embedded default cluster: one single-threaded worker per
  core) takes with and without probability=True, their ratio, and
  ``probability_method_`` ('cv5' or 'holdout'); with ``--compare-cv5`` also a fit with
  the 5 folds forced, and its probabilities' largest difference to the chosen method's.

Every measurement is printed as one JSON line with the command that made it, and
appended to ``--out`` (default benchmarks/results/probability.jsonl).

    python benchmarks/bench_probability.py --parts small
    python benchmarks/bench_probability.py --parts sklearnex --compare-rows 200000
    python benchmarks/bench_probability.py --parts seeds --compare-rows 200000
    python benchmarks/bench_probability.py --parts cost --rows 1000000
    python benchmarks/bench_probability.py --parts cost --rows 1000000 --set checkerboard \
        --C 100 --gamma 1 --compare-cv5
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


def _sklearnex_probabilities(args) -> None:
    """The child process of part 'sklearnex': scikit-learn-intelex's SVC(probability=True)
    with its default threads, no Dask cluster in this process; its probabilities of the
    test rows to ``--sklearnex-out`` (.npz) with its fit seconds."""
    from sklearnex.svm import SVC

    from randsvm_dist.data.generators import make_arrays

    X, y = make_arrays(args.set, args.compare_rows, seed=1)
    Xt, _ = make_arrays(args.set, 20_000, seed=2)
    t = time.perf_counter()
    theirs = SVC(probability=True, random_state=0).fit(X, y)
    seconds = time.perf_counter() - t
    np.savez(args.sklearnex_out, proba=theirs.predict_proba(Xt), seconds=seconds)


def part_sklearnex(args) -> None:
    """sklearnex's probabilities (its own process, first: before any Dask cluster exists)
    against ours on the same rows: in memory (LIBSVM's 5 folds, 'libsvm_cv5') and as a
    Parquet data set on the embedded cluster (the 5 folds at once, 'cv5')."""
    import subprocess

    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make
    from randsvm_dist.data.generators import make_arrays

    out = Path(args.scratch) / f"sklearnex_{args.set}_{args.compare_rows}.npz"
    subprocess.run([sys.executable, __file__, "--sklearnex-child", "--set", args.set,
                    "--compare-rows", str(args.compare_rows), "--sklearnex-out", str(out)],
                   check=True)
    got = np.load(out)
    X, y = make_arrays(args.set, args.compare_rows, seed=1)
    Xt, _ = make_arrays(args.set, 20_000, seed=2)
    data = Path(args.scratch) / f"{args.set}_{args.compare_rows}_seed1"
    if not data.exists():
        make(args.set, data, rows=args.compare_rows, seed=1)
    for where, fit_on in (("memory", lambda e: e.fit(X, y)),
                          ("workers", lambda e: e.fit(str(data)))):
        est = RandSVMClassifier(probability=True, random_state=0)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_on(est)
        _emit({"part": "sklearnex", "set": args.set, "rows": args.compare_rows,
               "ours_on": where, **_compare(est.predict_proba(Xt), got["proba"]),
               "method": est.probability_method_, "seconds": time.perf_counter() - t,
               "sklearnex_seconds": float(got["seconds"]), "command": _command()}, args.out)


def part_seeds(args) -> None:
    """How far our own probabilities move across ``random_state`` (0, 1, 2: other folds)
    on ``--compare-rows`` rows of ``--set`` in memory, beside each one's difference to
    scikit-learn-intelex's (the 'sklearnex' part's saved probabilities, made first when
    missing): the scale a difference to sklearnex is read against."""
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data.generators import make_arrays

    saved = Path(args.scratch) / f"sklearnex_{args.set}_{args.compare_rows}.npz"
    if not saved.exists():
        import subprocess

        subprocess.run([sys.executable, __file__, "--sklearnex-child", "--set", args.set,
                        "--compare-rows", str(args.compare_rows), "--sklearnex-out",
                        str(saved)], check=True)
    theirs = np.load(saved)["proba"]
    X, y = make_arrays(args.set, args.compare_rows, seed=1)
    Xt, _ = make_arrays(args.set, 20_000, seed=2)
    proba = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            proba.append(RandSVMClassifier(probability=True, random_state=seed)
                         .fit(X, y).predict_proba(Xt))
    _emit({"part": "seeds", "set": args.set, "rows": args.compare_rows,
           "across_random_state": max(_compare(p, proba[0])["max_abs_diff"]
                                      for p in proba[1:]),
           "vs_sklearnex": [_compare(p, theirs) for p in proba], "command": _command()},
          args.out)


def part_cost(args) -> None:
    """A fit of ``--rows`` rows (a Parquet data set) on the embedded default cluster (one
    single-threaded worker per core: 2 x 1 here) without and with probability=True; with
    ``--compare-cv5`` also with the 5 folds forced, and the largest difference of its
    probabilities to the chosen method's on 20,000 test rows. The fold runs' iteration
    lines go to stderr."""
    import functools
    import logging

    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make
    from randsvm_dist.data.generators import make_arrays
    from randsvm_dist.estimators import calibration

    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    logging.getLogger("randsvm_dist").setLevel(logging.INFO)
    data = Path(args.scratch) / f"{args.set}_{args.rows}"
    if not data.exists():
        make(args.set, data, rows=args.rows, seed=1)
    Xt, _ = make_arrays(args.set, 20_000, seed=2)
    runs = [("without", False, None), ("with", True, None)]
    if args.compare_cv5:
        runs.append(("cv5", True, "cv5"))
    seconds, phases, fitted = {}, {}, {}
    fit_sigmoids = calibration.fit_sigmoids
    for name, probability, method in runs:
        print(f"--- {name}", file=sys.stderr, flush=True)
        calibration.fit_sigmoids = functools.partial(fit_sigmoids, method=method)
        est = RandSVMClassifier(probability=probability, random_state=0, C=args.C,
                                gamma=args.gamma)  # embedded cluster
        t = time.perf_counter()
        est.fit(str(data))
        seconds[name] = time.perf_counter() - t
        phases[name] = {k: round(v, 2) for k, v in est.phases_.items()}
        fitted[name] = est
    calibration.fit_sigmoids = fit_sigmoids
    record = {"part": "cost", "set": args.set, "rows": args.rows, "C": args.C,
              "gamma": args.gamma, "fit_seconds": seconds["without"],
              "probability_seconds": seconds["with"],
              "ratio": seconds["with"] / seconds["without"],
              "method": fitted["with"].probability_method_,
              "n_support": int(len(fitted["with"].support_)),
              "phases_without": phases["without"], "phases_with": phases["with"]}
    if args.compare_cv5:
        record.update({"cv5_seconds": seconds["cv5"], "phases_cv5": phases["cv5"],
                       "vs_cv5": _compare(fitted["with"].predict_proba(Xt),
                                          fitted["cv5"].predict_proba(Xt))})
    _emit({**record, "command": _command()}, args.out)


def _gamma(text: str):
    return text if text in ("scale", "auto") else float(text)


def _command() -> str:
    return " ".join([Path(sys.executable).name, *sys.argv])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["small"],
                    choices=["small", "sklearnex", "seeds", "cost"])
    ap.add_argument("--set", default="twonorm")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--compare-rows", type=int, default=200_000)
    ap.add_argument("--C", type=float, default=1.0, help="C of the cost part's fits")
    ap.add_argument("--gamma", type=_gamma, default="scale",
                    help="gamma of the cost part's fits (a number or 'scale')")
    ap.add_argument("--compare-cv5", action="store_true",
                    help="cost part: also fit with the 5 folds forced and compare")
    ap.add_argument("--scratch", default=tempfile.gettempdir())
    ap.add_argument("--quick", action="store_true", help="iris and breast_cancer only")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                          "probability.jsonl"))
    ap.add_argument("--sklearnex-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sklearnex-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sklearnex_child:
        _sklearnex_probabilities(args)
        return 0
    for part in args.parts:
        {"small": part_small, "sklearnex": part_sklearnex, "seeds": part_seeds,
         "cost": part_cost}[part](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
