"""LIBSVM's practical guide with randsvm-dist beside LIBSVM's own tools (issue: the guide).

Three parts, each its own sub-command, one JSON line per result in --out:

``steps``: the guide's three steps on the shared real sets, test accuracy of each:
unscaled with LIBSVM's defaults (C=1, gamma=1/#features) -> scaled the same -> scaled and
tuned (5-fold CV over the guide's coarse grid, best pair trained on all training rows).
LIBSVM's side runs the Debian ``libsvm-tools`` programs the guide's way (``svm-scale -s``/
``-r``, ``svm-grid``, ``svm-train``, ``svm-predict``); ours runs ``FeatureScaler``,
``GridSearch`` and ``RandSVMClassifier`` on a LocalCluster of 2 single-threaded workers.

``speedup``: wall time of one grid on the LocalCluster (GridSearch, cluster start
included) against the same (fold, C, gamma) LIBSVM runs in a serial loop in one process.

``large``: per-(fold, C, gamma) cost of the RandSVM path on a generated data set of
--rows rows (2 folds, one (C, gamma)), for the arithmetic of a full grid at that size.

    python benchmarks/bench_guide.py steps --sets heart_scale german skin ijcnn1
    python benchmarks/bench_guide.py speedup --set german --which cluster
    python benchmarks/bench_guide.py speedup --set german --which serial
    python benchmarks/bench_guide.py large --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
SCRATCH = Path(os.environ.get("RANDSVM_SCRATCH", "/tmp/randsvm-bench-guide"))

# name: (train file, test file or None for a seeded 2/3 split, training rows kept or None)
SETS = {
    "heart_scale": ("heart_scale/heart_scale.svm.gz", None, None),
    "german": ("german.numer_scale/german.numer_scale.svm.gz", None, None),
    "skin": ("skin_nonskin/skin_nonskin.svm.gz", None, 4000),
    "ijcnn1": ("ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz", 4000),
}
TEST_ROWS = 20000


def load_split(name: str):
    """Dense float32 (Xtr, ytr, Xte, yte) of a set: seeded subsets / 2/3 split."""
    from sklearn.datasets import load_svmlight_file

    train, test, keep = SETS[name]
    X, y = load_svmlight_file(str(SHARED / train))
    rng = np.random.default_rng(0)
    if test is None:
        rows = rng.permutation(X.shape[0])
        n_tr = keep or (2 * X.shape[0]) // 3
        tr, te = rows[:n_tr], rows[n_tr:n_tr + TEST_ROWS]
        Xt, yt = X[te], y[te]
        X, y = X[tr], y[tr]
    else:
        Xt, yt = load_svmlight_file(str(SHARED / test), n_features=X.shape[1])
        if keep:
            tr = rng.permutation(X.shape[0])[:keep]
            X, y = X[tr], y[tr]
        te = rng.permutation(Xt.shape[0])[:TEST_ROWS]
        Xt, yt = Xt[te], yt[te]
    return (X.toarray().astype(np.float32), y.astype(int), Xt.toarray().astype(np.float32),
            yt.astype(int))


def _run(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def libsvm_tools_steps(Xtr, ytr, Xte, yte, work: Path) -> dict:
    """The guide with svm-scale, svm-grid, svm-train and svm-predict."""
    from sklearn.datasets import dump_svmlight_file

    env = dict(os.environ, OMP_NUM_THREADS="1")
    dump_svmlight_file(Xtr, ytr, str(work / "train"), zero_based=False)
    dump_svmlight_file(Xte, yte, str(work / "test"), zero_based=False)
    g = 1.0 / Xtr.shape[1]

    def train_test(train: str, test: str, c: float, gamma: float) -> float:
        _run(["svm-train", "-q", "-c", repr(c), "-g", repr(gamma), str(work / train),
              str(work / "model")], env=env)
        out = _run(["svm-predict", str(work / test), str(work / "model"), str(work / "pred")],
                   env=env)
        return float(out.split("=")[1].split("%")[0]) / 100  # "Accuracy = 87.5% (..)"

    res = {"unscaled_default": train_test("train", "test", 1.0, g)}
    (work / "train.scale").write_text(_run(["svm-scale", "-s", str(work / "range"),
                                            str(work / "train")]))
    (work / "test.scale").write_text(_run(["svm-scale", "-r", str(work / "range"),
                                           str(work / "test")]))
    res["scaled_default"] = train_test("train.scale", "test.scale", 1.0, g)
    t0 = time.perf_counter()
    last = _run(["svm-grid", "-svmtrain", "/usr/bin/svm-train", "-gnuplot", "null", "-out", "null",
                 str(work / "train.scale")],
                env=env).strip().splitlines()[-1].split()
    res["grid_seconds"] = time.perf_counter() - t0
    c, gamma, rate = float(last[0]), float(last[1]), float(last[2]) / 100
    res.update(best_C=c, best_gamma=gamma, cv_accuracy=rate,
               scaled_tuned=train_test("train.scale", "test.scale", c, gamma))
    return res


def our_steps(Xtr, ytr, Xte, yte, client) -> dict:
    """The same steps with FeatureScaler/GridSearch/RandSVMClassifier on the cluster."""
    from randsvm_dist.app.grid_search import GridSearch
    from randsvm_dist.estimators import RandSVMClassifier

    def fit_score(**kw) -> float:
        est = RandSVMClassifier(C=1.0, gamma="auto", k=None, random_state=0, client=client,
                                **kw).fit(Xtr, ytr)
        return float(est.score(Xte, yte))

    res = {"unscaled_default": fit_score(), "scaled_default": fit_score(scale="minmax")}
    gs = GridSearch(n_folds=5, refine=False, scale="minmax", random_state=0, client=client)
    gs.fit(Xtr, ytr)
    est = gs.refit(Xtr, ytr)
    res.update(grid_seconds=gs.search_seconds_, best_C=gs.best_params_["C"],
               best_gamma=gs.best_params_["gamma"], cv_accuracy=gs.best_score_,
               scaled_tuned=float(est.score(Xte, yte)))
    return res


def cmd_steps(args) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        for name in args.sets:
            Xtr, ytr, Xte, yte = load_split(name)
            with tempfile.TemporaryDirectory() as tmp:
                lib = libsvm_tools_steps(Xtr, ytr, Xte, yte, Path(tmp))
            ours = our_steps(Xtr, ytr, Xte, yte, client)
            rec = {"bench": "steps", "set": name, "train_rows": len(ytr), "test_rows": len(yte),
                   "features": Xtr.shape[1], "libsvm_tools": lib, "randsvm_dist": ours}
            _emit(args.out, rec)


def _german_grid():
    from randsvm_dist.app.grid_space import GUIDE_LOG2C, GUIDE_LOG2GAMMA, exponent_range

    return exponent_range(*GUIDE_LOG2C), exponent_range(*GUIDE_LOG2GAMMA)


def cmd_speedup(args) -> None:
    from randsvm_dist.app.grid_search import GridSearch
    from randsvm_dist.app.grid_space import GUIDE_LOG2C, GUIDE_LOG2GAMMA
    from randsvm_dist.distributed.scaling import FeatureScaler

    if args.which == "serial":  # one core, like one worker (libsvm-official uses OpenMP)
        os.environ["OMP_NUM_THREADS"] = "1"
    Xtr, ytr, _, _ = load_split(args.set)
    X = FeatureScaler().fit(Xtr).transform(Xtr)  # the guide's order: scale, then search
    n_points = len(_german_grid()[0]) * len(_german_grid()[1]) * args.folds
    t0 = time.perf_counter()
    if args.which == "cluster":
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            gs = GridSearch(GUIDE_LOG2C, GUIDE_LOG2GAMMA, n_folds=args.folds, refine=False,
                            random_state=0, client=client).fit(X, ytr)
            best = gs.best_score_
    else:
        best = serial_grid(X, ytr, args.folds)
    rec = {"bench": "speedup", "which": args.which, "set": args.set, "rows": len(ytr),
           "omp_threads": os.environ.get("OMP_NUM_THREADS"),
           "fold_points": n_points, "seconds": time.perf_counter() - t0, "best_cv": best}
    _emit(args.out, rec)


def serial_grid(X, y, k: int) -> float:
    """The same (fold, C, gamma) LIBSVM runs one after the other in this process."""
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train
    from scipy import sparse

    from randsvm_dist.app.grid_folds import assign_folds, libsvm_options

    classes = np.unique(y)
    cls = np.searchsorted(classes, y).astype(float)
    folds = assign_folds(cls.astype(int), k, 0)
    Xc = sparse.csr_matrix(X, dtype=np.float64)
    best = 0.0
    cs, gs = _german_grid()
    for c in cs:
        for g in gs:
            correct = 0
            for f in range(k):
                tr, te = folds != f, folds == f
                m = svm_train(svm_problem(cls[tr], Xc[tr]),
                              svm_parameter(libsvm_options(2.0 ** c, 2.0 ** g, 1e-3, 200.0)))
                pred, _, _ = svm_predict(cls[te], Xc[te], m, "-q")
                correct += int((np.asarray(pred) == cls[te]).sum())
            best = max(best, correct / len(y))
    return best


def cmd_large(args) -> None:
    from distributed import Client, LocalCluster

    from randsvm_dist.app.grid_search import GridSearch
    from randsvm_dist.data import make

    path = SCRATCH / f"checkerboard-{args.rows}"
    if not path.exists():
        make("checkerboard", path, rows=args.rows, partitions=16, seed=1)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        t0 = time.perf_counter()
        gs = GridSearch((args.log2C, args.log2C, 1), (args.log2gamma, args.log2gamma, -1),
                        n_folds=args.folds, refine=False, solver="randsvm", gap_tol=1e-3,
                        random_state=0, client=client).fit(str(path))
        wall = time.perf_counter() - t0
    p = gs.points_[0]
    rec = {"bench": "large", "rows": args.rows, "folds": args.folds, "C": p["C"],
           "gamma": p["gamma"], "cv_accuracy": p["mean_accuracy"], "wall_seconds": wall,
           "fold_point_seconds": p["seconds"] / args.folds,
           "train_rows_per_fold": int(args.rows * (args.folds - 1) / args.folds)}
    _emit(args.out, rec)


def cmd_table(args) -> None:
    """Print the steps table (markdown) from the results file."""
    print("| set | train / test rows | tool | unscaled default | scaled default | "
          "best C, gamma (5-fold CV %) | scaled and tuned | grid s |")
    print("|---|---|---|---|---|---|---|---|")
    for line in open(args.out):
        r = json.loads(line)
        if r["bench"] != "steps":
            continue
        for tool in ("libsvm_tools", "randsvm_dist"):
            t = r[tool]
            print(f"| {r['set']} | {r['train_rows']:,} / {r['test_rows']:,} | "
                  f"{tool.replace('_', '-')} | {100 * t['unscaled_default']:.2f} | "
                  f"{100 * t['scaled_default']:.2f} | 2^{np.log2(t['best_C']):g}, "
                  f"2^{np.log2(t['best_gamma']):g} ({100 * t['cv_accuracy']:.2f}) | "
                  f"{100 * t['scaled_tuned']:.2f} | {t['grid_seconds']:.0f} |")


def _emit(out: str, rec: dict) -> None:
    line = json.dumps(rec)
    print(line, flush=True)
    with open(out, "a") as fh:
        fh.write(line + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "guide.jsonl"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("steps")
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.set_defaults(func=cmd_steps)
    p = sub.add_parser("speedup")
    p.add_argument("--set", default="german", choices=list(SETS))
    p.add_argument("--which", choices=["cluster", "serial"], required=True)
    p.add_argument("--folds", type=int, default=5)
    p.set_defaults(func=cmd_speedup)
    p = sub.add_parser("large")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--folds", type=int, default=2)
    p.add_argument("--log2C", type=float, default=6.0)
    p.add_argument("--log2gamma", type=float, default=0.0)
    p.set_defaults(func=cmd_large)
    p = sub.add_parser("table")
    p.set_defaults(func=cmd_table)
    args = ap.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    args.func(args)


if __name__ == "__main__":
    main()
