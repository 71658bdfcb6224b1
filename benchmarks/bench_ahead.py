"""RandSVM against every exact solver a user could pick instead (issue 21), as users run them.

Every engine gets the same numpy arrays (float32 dense, or CSR when the set is sparse), the
same C and gamma, and runs in its own process, one after the other, in this order:

1. ``libsvm``: libsvm-official's ``svm_train`` on all training rows, its default OpenMP
   threads (``-m 1000``), before any Dask cluster exists;
2. ``sklearnex``: scikit-learn-intelex's ``SVC`` (oneDAL, all cores), also before any
   cluster exists (skipped with the reason when not installed; a silent fallback to
   scikit-learn's SVC is reported as an error, not timed);
3. ``randsvm``: ``RandSVMClassifier(C, gamma, random_state=0).fit(X, y)`` with its
   embedded default (a LocalCluster of one worker per core) — ``--repeats`` fits in one
   process, each on a fresh estimator, for the spread (min / median / max). The cluster is
   started and warmed up (imports, numba's cached compiles) before the first timed fit; its
   start time is reported apart.

Reported per set: seconds, test accuracy, #SV, RandSVM's certified gap, and the ratio to
the faster of LIBSVM and scikit-learn-intelex; per RandSVM iteration (``history_``): rows
scanned and screened out, duplicates collapsed, warm or cold solve, the scan rate.

    python benchmarks/bench_ahead.py --sets ringnorm:300000 checkerboard:1000000 \\
        --repeats 5 --out benchmarks/results/ahead.jsonl
    python benchmarks/bench_ahead.py --sets skin_nonskin ijcnn1 a9a w8a fmnist06 \\
        --out benchmarks/results/ahead.jsonl
    python benchmarks/bench_ahead.py --report benchmarks/results/ahead.jsonl

``--engines`` picks engines; ``--libsvm-reference SECONDS`` records a LIBSVM figure
measured alone earlier instead of running it (stated as such in the table). Time only on a
quiet machine (load average recorded with every row).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_randsvm import SCRATCH, SHARED, _cpu_seconds, libsvm_fit_score  # noqa: E402

# name: (C, gamma, loader); synthetic sets take their size after a colon (ringnorm:300000)
SYNTHETIC = {"checkerboard": (100.0, 1.0), "ringnorm": (1.0, 0.05)}
REAL = {
    "skin_nonskin": (8.0, 0.03),
    "ijcnn1": (32.0, 2.0),
    "a9a": (32.0, 0.008),
    "w8a": (8.0, 0.05),
    "fmnist06": (10.0, None),    # Fashion-MNIST T-shirt (0) vs shirt (6); gamma='scale'
}
ENGINES = ("libsvm", "sklearnex", "randsvm")
CACHE_MB = 1000   # kernel cache of every engine (LIBSVM's -m, SVC's cache_size)


# -- data ------------------------------------------------------------------------------------
def _svmlight(*files: str, n_features: int | None = None):
    from sklearn.datasets import load_svmlight_files

    got = load_svmlight_files([str(SHARED / f) for f in files], n_features=n_features)
    return [g.astype(np.float32) if i % 2 == 0 else g for i, g in enumerate(got)]


def _split(X, y, seed: int = 0):
    perm = np.random.default_rng(seed).permutation(len(y))
    cut = 2 * len(y) // 3
    a, b = np.sort(perm[:cut]), np.sort(perm[cut:])
    return X[a], y[a], X[b], y[b]


def load_set(spec: str):
    """(X, y, X_test, y_test, C, gamma) of a set spec ('ringnorm:300000', 'a9a', ...),
    cached as .npz under SCRATCH."""
    name, _, size = spec.partition(":")
    cache = SCRATCH / f"ahead-{name}-{size or 'all'}.npz"
    if name in SYNTHETIC:
        C, gamma = SYNTHETIC[name]
    else:
        C, gamma = REAL[name]
    if cache.exists():
        got = np.load(cache, allow_pickle=False)
        if "X_data" in got:  # sparse
            import scipy.sparse as sp

            X = sp.csr_matrix((got["X_data"], got["X_indices"], got["X_indptr"]),
                              shape=tuple(got["X_shape"]))
            Xt = sp.csr_matrix((got["Xt_data"], got["Xt_indices"], got["Xt_indptr"]),
                               shape=tuple(got["Xt_shape"]))
        else:
            X, Xt = got["X"], got["Xt"]
        return X, got["y"], Xt, got["yt"], C, float(got["gamma"])
    if name in SYNTHETIC:
        from randsvm_dist.data.generators import make_arrays

        X, y = make_arrays(name, int(size), seed=1)
        Xt, yt = make_arrays(name, 10_000, seed=2)
    elif name == "skin_nonskin":
        X, y = _svmlight("skin_nonskin/skin_nonskin.svm.gz")
        X, y, Xt, yt = _split(X.toarray(), y)
    elif name == "ijcnn1":
        X, y, Xt, yt = _svmlight("ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz")
        X, Xt = X.toarray(), Xt.toarray()
    elif name == "a9a":
        X, y, Xt, yt = _svmlight("a9a/a9a.train.svm.gz", "a9a/a9a.test.svm.gz",
                                 n_features=123)
    elif name == "w8a":
        X, y = _svmlight("w8a/w8a.train.svm.gz", n_features=300)
        X, y, Xt, yt = _split(X, y)
    elif name == "fmnist06":
        from bench_classification import load_fmnist, scale_gamma

        X, y, Xt, yt = load_fmnist()
        keep, tkeep = np.isin(y, (0, 6)), np.isin(yt, (0, 6))
        X, y, Xt, yt = X[keep], y[keep], Xt[tkeep], yt[tkeep]
        gamma = scale_gamma(X)
    else:
        raise SystemExit(f"unknown set {spec!r}: one of {sorted(SYNTHETIC)} (with :rows) "
                         f"or {sorted(REAL)}")
    y, yt = np.asarray(y).astype(np.int64), np.asarray(yt).astype(np.int64)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    if hasattr(X, "tocsr"):
        X, Xt = X.tocsr(), Xt.tocsr()
        np.savez(cache, X_data=X.data, X_indices=X.indices, X_indptr=X.indptr,
                 X_shape=X.shape, Xt_data=Xt.data, Xt_indices=Xt.indices,
                 Xt_indptr=Xt.indptr, Xt_shape=Xt.shape, y=y, yt=yt, gamma=gamma)
    else:
        X, Xt = np.ascontiguousarray(X, np.float32), np.ascontiguousarray(Xt, np.float32)
        np.savez(cache, X=X, Xt=Xt, y=y, yt=yt, gamma=gamma)
    return X, y, Xt, yt, C, float(gamma)


def duplicate_share(X, y) -> float:
    """Share of rows that are exact copies (features and label) of an earlier row."""
    Xd = X.toarray() if hasattr(X, "toarray") else X
    rows = np.concatenate([np.ascontiguousarray(Xd, np.float32).view(np.uint8),
                           y.astype(np.int64)[:, None].view(np.uint8)], axis=1)
    return 1.0 - len(np.unique(rows.view(f"V{rows.shape[1]}").ravel())) / len(y)


# -- engines (each in its own process) -------------------------------------------------------
def engine_libsvm(spec: str) -> dict:
    """libsvm-official on all training rows, its default OpenMP threads, -m 1000."""
    return libsvm_fit_score(*load_set(spec))


def engine_sklearnex(spec: str) -> dict:
    """scikit-learn-intelex's SVC (oneDAL) on all training rows, all cores."""
    try:
        from sklearnex.svm import SVC
    except ImportError as e:
        return {"skipped": f"scikit-learn-intelex not importable: {e}"}
    X, y, Xt, yt, C, gamma = load_set(spec)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    est = SVC(C=C, gamma=gamma, cache_size=CACHE_MB).fit(X, y)
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    if getattr(est, "_onedal_estimator", None) is None:
        return {"error": "scikit-learn-intelex fell back to scikit-learn's SVC"}
    return {"seconds": seconds, "cpu_seconds": cpu,
            "accuracy": float(np.mean(est.predict(Xt) == yt)),
            "n_support": int(est.n_support_.sum())}


def _iteration_summary(h: list[dict]) -> list[dict]:
    keys = ("iteration", "route", "sample_size", "n_fresh", "warm_start", "n_support",
            "n_violators", "rows_evaluated", "rows_screened", "duplicates_collapsed",
            "solve_seconds", "scan_seconds", "kernel_evals_per_second",
            "scan_rate_vs_bench", "relative_gap", "solver")
    return [{k: r[k] for k in keys if k in r} for r in h]


def engine_randsvm(spec: str, repeats: int, solver: str = "libsvm") -> dict:
    """RandSVMClassifier(solver=solver).fit(X, y) on the embedded default cluster,
    ``repeats`` times."""
    from randsvm_dist.engine.embedded import close_embedded, embedded_client
    from randsvm_dist.estimators import RandSVMClassifier

    X, y, Xt, yt, C, gamma = load_set(spec)
    t0 = time.perf_counter()
    embedded_client()  # the default a user gets, started here so its start is timed apart
    small = np.random.default_rng(0).normal(size=(400, X.shape[1])).astype(np.float32)
    RandSVMClassifier(random_state=0).fit(small, (small[:, 0] > 0).astype(int))
    start = time.perf_counter() - t0
    fits = []
    for _ in range(repeats):
        est = RandSVMClassifier(C=C, gamma=gamma, random_state=0, solver=solver,
                                cache_size=CACHE_MB)
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
        fits.append({"seconds": seconds, "accuracy": float(np.mean(est.predict(Xt) == yt)),
                     "n_support": int(len(est.support_)),
                     "relative_gap": float(est.relative_gap_), "certified": est.certified_,
                     "iterations": est.n_iter_,
                     "iterations_detail": _iteration_summary(est.history_)})
    close_embedded()
    secs = sorted(f["seconds"] for f in fits)
    return {**fits[0], "seconds": float(np.median(secs)), "seconds_all": secs,
            "cluster_start_seconds": start, "fits": fits}


def _child(engine: str, spec: str, repeats: int, solver: str = "libsvm") -> dict:
    """Run one engine in a fresh process (stderr -> SCRATCH/ahead-progress.log)."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    log = SCRATCH / "ahead-progress.log"
    with open(log, "a") as err:
        err.write(f"--- {time.strftime('%F %T')} {engine} {spec}\n")
        err.flush()
        out = subprocess.run([sys.executable, __file__, "_one", engine, spec, str(repeats),
                              solver],
                             stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if out.returncode != 0:
        return {"error": f"{engine} failed (exit {out.returncode}): see {log}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- report ----------------------------------------------------------------------------------
def best_peer(r: dict) -> tuple[str, float] | None:
    """(name, seconds) of the faster of LIBSVM and scikit-learn-intelex in a result row."""
    got = [(e, r["engines"][e]["seconds"]) for e in ("libsvm", "sklearnex")
           if "seconds" in r["engines"].get(e, {})]
    return min(got, key=lambda t: t[1]) if got else None


def markdown(path: str) -> str:
    """A markdown table of a results file: the last row per set and solver; a row run
    without the peers takes theirs from the set's last row that has them (stated in the
    load column)."""
    rows, peers = {}, {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        for e in ("libsvm", "sklearnex"):
            if e in r["engines"]:
                peers.setdefault(r["set"], {})[e] = (r["engines"][e], r["load_average"])
        rows[(r["set"], r.get("solver", "libsvm"))] = r
    out = ["| set | rows | dup. share | LIBSVM s | sklearnex s | RandSVM s (min/med/max) | "
           "vs LIBSVM | vs faster peer | acc LIBSVM / sklearnex / RandSVM | #SV | gap | "
           "load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, solver), r in rows.items():
        name = name if solver == "libsvm" else f"{name} (solver={solver})"
        e = dict(r["engines"])
        for peer, (got, _load) in peers.get(r["set"], {}).items():
            e.setdefault(peer, got)
        r = {**r, "engines": e}
        lib, intel, ours = e.get("libsvm", {}), e.get("sklearnex", {}), e.get("randsvm", {})
        if "seconds" not in ours:
            continue
        peer = best_peer(r)
        s = ours.get("seconds_all", [ours["seconds"]])
        lib_s = (f"{lib['seconds']:.1f}" + (" (ref.)" if lib.get("reference") else "")
                 if "seconds" in lib else "-")
        acc = " / ".join(f"{100 * x['accuracy']:.2f}" if "accuracy" in x else "-"
                         for x in (lib, intel, ours))
        out.append(
            f"| {name} | {r['n']:,} | {100 * r['duplicate_share']:.0f}% | {lib_s} | "
            + (f"{intel['seconds']:.1f}" if "seconds" in intel else "-") + " | "
            + f"{s[0]:.1f} / {np.median(s):.1f} / {s[-1]:.1f} | "
            + (f"{lib['seconds'] / ours['seconds']:.2f}x" if "seconds" in lib else "-")
            + " | " + (f"{peer[1] / ours['seconds']:.2f}x ({peer[0]})" if peer else "-")
            + f" | {acc} | {ours['n_support']:,} | {ours['relative_gap']:.1e} | "
            f"{r['load_average'][0]:.2f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["ringnorm:300000"])
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--solver", default="libsvm", choices=("libsvm", "onedal", "auto"),
                   help="RandSVM's solver backend (its working-set solves)")
    p.add_argument("--libsvm-reference", type=float, default=None,
                   help="LIBSVM seconds measured alone earlier (instead of running it)")
    p.add_argument("--out", default=None)
    p.add_argument("--report", default=None)
    args = p.parse_args(argv)
    if args.report:
        print(markdown(args.report))
        return 0
    for spec in args.sets:
        X, y, *_ = load_set(spec)
        row = {"set": spec, "solver": args.solver, "cache_mb": CACHE_MB, "n": int(len(y)),
               "d": int(X.shape[1]),
               "sparse": hasattr(X, "tocsr"), "duplicate_share": duplicate_share(X, y),
               "engines": {}}
        del X, y
        for engine in [e for e in ENGINES if e in args.engines]:  # peers first
            if engine == "libsvm" and args.libsvm_reference is not None:
                row["engines"]["libsvm"] = {"seconds": args.libsvm_reference,
                                            "reference": True}
                continue
            r = row["engines"][engine] = _child(engine, spec, args.repeats, args.solver)
            print(f"{spec:22s} {engine:10s} " + (
                f"{r['seconds']:8.1f} s  acc {r['accuracy']:.4f}  #SV {r['n_support']}"
                + (f"  all {' '.join(f'{s:.1f}' for s in r['seconds_all'])}  gap "
                   f"{r['relative_gap']:.1e}" if engine == "randsvm" else "")
                if "seconds" in r else str(r)), flush=True)
        row.update({"load_average": os.getloadavg(), "date": time.strftime("%F %T")})
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        engine, spec, repeats, solver = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        fn = {"libsvm": engine_libsvm, "sklearnex": engine_sklearnex}.get(engine)
        print(json.dumps(fn(spec) if fn else engine_randsvm(spec, repeats, solver)))
    else:
        sys.exit(main())
