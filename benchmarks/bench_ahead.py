"""RandSVM with its defaults against every exact solver a user could pick instead (issues
21, 27), as users run them: numpy arrays into the estimator.

Every engine gets the same arrays and parameters (``bench_engines.py``: the sets, their C,
gamma, epsilon or nu) and runs in its own process, one after the other, in this order:

1. ``libsvm``: libsvm-official on all training rows (``-s 0`` one-vs-one, ``-s 3``
   epsilon-SVR or ``-s 2`` one-class), its default OpenMP threads, ``-m 1000``, before any
   Dask cluster exists;
2. ``sklearnex``: scikit-learn-intelex's ``SVC`` (one-vs-one) / ``SVR`` (oneDAL, all
   cores, ``cache_size=1000``), also before any cluster exists (skipped with the reason
   when not installed; a silent fallback to scikit-learn is an error, not a time);
3. ``sklearn``: scikit-learn's ``OneClassSVM``, the one-class sets' second peer;
4. ``randsvm``: the estimator of the set's kind (``RandSVMClassifier``,
   ``RandSVMRegressor``, ``RandSVMOneClass``) with the set's parameters,
   ``random_state=0`` and every other setting its default (``--solver`` overrides the
   solver; the row then is not a defaults run). A fit on 1,000 of the set's rows warms it
   up (imports, numba's cached compiles) before the ``--repeats`` timed fits, each on a
   fresh estimator. The embedded default cluster runs only when the fit's route needs it,
   as in a user's fit of arrays: a fit that started it is not timed (recorded apart).

Every engine run makes ``--repeats`` timed fits in its process, each on a fresh estimator,
and its median is the engine's time (all of them recorded as ``seconds_all``).

An engine that does not apply to the set's kind is not run. ``--timeout S`` kills an
engine's process group after S seconds; its row reads "timed out after S s" (a lower bound
on its time). ``--reuse-peers FILE...`` takes a peer's figures from the last earlier record
of the same set in those results files (bench_ahead's, or bench_svm_family's friedman and
oneclass parts) instead of running it, recorded with where they came from (only the peers
named by ``--reuse-engines``, when given);
``--libsvm-reference SECONDS`` records a LIBSVM time measured alone earlier.

Recorded per set and engine: seconds, test accuracy / R^2 / ROC AUC, #SV; for RandSVM the
certified gap, ``phases_`` (placement, duplicates, setup, iterations, assembly, attributes,
total), each iteration's summary from ``history_``, and for one-class sets the largest
|decision value difference| against each peer on the test rows. ``make_readme.py`` turns
the records into benchmarks/README.md's tables.

    python benchmarks/bench_ahead.py --sets ijcnn1 a9a w8a fmnist06 skin_nonskin \\
        --reuse-peers benchmarks/results/ahead.jsonl --out benchmarks/results/ahead.jsonl
    python benchmarks/bench_ahead.py --sets friedman1:300000 fmnist10 oneclass:100000 \\
        --timeout 600 --out benchmarks/results/ahead.jsonl

Time only on a quiet machine (the load average is recorded with every row).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engines import (  # noqa: E402
    SCRATCH,
    duplicate_share,
    fit_and_score,
    fit_libsvm,
    fit_sklearn_ocsvm,
    fit_sklearnex,
    load_problem,
    randsvm_estimator,
    run_child,
    set_kind,
    settled,
)

ENGINES = ("libsvm", "sklearnex", "sklearn", "randsvm")
PEERS = {"classification": ("libsvm", "sklearnex"), "regression": ("libsvm", "sklearnex"),
         "one_class": ("libsvm", "sklearn")}
PEERS_ALL = ("libsvm", "sklearnex", "sklearn")
WARM_UP_ROWS = 1000
ITERATION_KEYS = ("iteration", "route", "sample_size", "n_fresh", "warm_start", "n_support",
                  "n_violators", "rows_evaluated", "rows_screened", "duplicates_collapsed",
                  "solve_seconds", "scan_seconds", "kernel_evals_per_second", "relative_gap",
                  "solver")


# -- RandSVM (in its own process) ------------------------------------------------------------
def engine_randsvm(spec: str, repeats: int, solver: str | None) -> dict:
    """The estimator's defaults (``solver`` if given) as a user's fit runs them: the
    embedded default cluster only when the fit's route needs it. ``repeats`` timed fits
    after a warm-up fit on 1,000 of the set's rows; a fit that started the cluster is not
    timed (its time is reported apart) and another one is."""
    from randsvm_dist.engine.embedded import close_embedded, embedded_client, embedded_running

    p = load_problem(spec)
    settings = {"random_state": 0, **({"solver": solver} if solver else {})}
    few = np.sort(np.random.default_rng(0).permutation(len(p["y"]))[:WARM_UP_ROWS])
    fit_and_score(randsvm_estimator(p, **settings), p, p["X"][few], p["y"][few])
    if embedded_running():
        settled(embedded_client())
    start = None
    fits = []
    while len(fits) < repeats:
        running = embedded_running()
        est = randsvm_estimator(p, **settings)
        seconds, scores = fit_and_score(est, p)
        if not running and embedded_running():
            settled(embedded_client())
            start = seconds
            continue
        fits.append({"seconds": seconds, **scores, "n_support": int(len(est.support_)),
                     "relative_gap": float(est.relative_gap_),
                     "certified": bool(est.certified_), "iterations": int(est.n_iter_),
                     "solver": est.solver, "phases": dict(est.phases_),
                     "iterations_detail": [{k: r[k] for k in ITERATION_KEYS if k in r}
                                           for r in est.history_]})
    close_embedded()
    secs = sorted(f["seconds"] for f in fits)
    return {**fits[0], "seconds": float(np.median(secs)), "seconds_all": secs,
            "cluster_started": start is not None, "cluster_start_fit_seconds": start,
            "fits": [{k: v for k, v in f.items() if k != "decision"} for f in fits]}


def _one(engine: str, spec: str, repeats: int, solver: str | None) -> dict:
    """One engine on one set, in this (fresh) process."""
    if engine == "randsvm":
        return engine_randsvm(spec, repeats, solver)
    fit = {"libsvm": fit_libsvm, "sklearnex": fit_sklearnex, "sklearn": fit_sklearn_ocsvm}
    p = load_problem(spec)
    runs = [fit[engine](p) for _ in range(repeats)]
    if len(runs) == 1 or not all("seconds" in r for r in runs):
        return runs[0]
    secs = [r["seconds"] for r in runs]
    return {**runs[0], "seconds": float(np.median(secs)), "seconds_all": secs}


# -- earlier peer figures --------------------------------------------------------------------
def _as_ahead_rows(r: dict) -> list[tuple[str, str, dict]]:
    """(set spec, engine, figures) of an earlier record: bench_ahead's or bench_svm_family's
    (friedman: LIBSVM -s 3; oneclass: LIBSVM -s 2 or scikit-learn's OneClassSVM)."""
    if "engines" in r:
        return [(r["set"], e, x) for e, x in r["engines"].items() if e != "randsvm"]
    if r.get("part") not in ("friedman", "oneclass"):
        return []
    spec = f"{'friedman1' if r['part'] == 'friedman' else 'oneclass'}:{r['n']}"
    return [(spec, r["baseline"], r[r["baseline"]])]


def earlier_peers(files: list[str], spec: str) -> dict:
    """{engine: figures} of the last earlier timed record of ``spec`` per peer, each
    marked {"reused": {"file", "date"}}."""
    found = {}
    for path in files:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            for s, engine, x in _as_ahead_rows(r):
                if s == spec and "seconds" in x and not x.get("reference"):
                    source = x.get("reused") or {"file": Path(path).name, "date": r.get("date")}
                    found[engine] = {k: v for k, v in x.items() if k != "decision"} | {
                        "reused": source}
    return found


# -- the run ---------------------------------------------------------------------------------
def _decision_differences(engines: dict) -> None:
    """One-class: RandSVM's largest |decision difference| from each peer run now; the
    decision values themselves are not kept."""
    ours = engines.get("randsvm", {}).get("decision")
    for name, x in engines.items():
        d = x.pop("decision", None)
        if ours is not None and d is not None and name != "randsvm":
            engines["randsvm"][f"max_abs_decision_diff_vs_{name}"] = float(
                np.max(np.abs(np.asarray(ours) - np.asarray(d))))


def _line(spec: str, engine: str, r: dict) -> str:
    if "seconds" not in r:
        return f"{spec:22s} {engine:10s} " + (
            f"timed out after {r['timed_out']:g} s" if "timed_out" in r else str(r))
    quality = "  ".join(f"{k} {r[k]:.4f}" for k in ("accuracy", "r2", "roc_auc") if k in r)
    extra = (f"  all {' '.join(f'{s:.1f}' for s in r['seconds_all'])}  gap "
             f"{r['relative_gap']:.1e}" if engine == "randsvm" else "")
    return (f"{spec:22s} {engine:10s} {r['seconds']:8.1f} s  {quality}  #SV {r['n_support']}"
            + extra + (" (earlier run)" if "reused" in r else ""))


def run_set(spec: str, args) -> dict:
    """Every asked-for engine on one set, peers first; returns the record."""
    kind = set_kind(spec)
    p = load_problem(spec)
    row = {"set": spec, "kind": kind, "solver": args.solver or "auto",
           "defaults": args.solver is None, "params": p["params"], "n": int(len(p["y"])),
           "d": int(p["X"].shape[1]), "sparse": hasattr(p["X"], "tocsr"),
           "duplicate_share": duplicate_share(p["X"], p["y"]), "engines": {}}
    del p
    reused = {e: x for e, x in (earlier_peers(args.reuse_peers, spec) if args.reuse_peers
                                else {}).items() if e in args.reuse_engines}
    log = SCRATCH / "ahead-progress.log"
    for engine in [e for e in ENGINES if e in args.engines and e in (*PEERS[kind], "randsvm")]:
        if engine == "libsvm" and args.libsvm_reference is not None:
            r = {"seconds": args.libsvm_reference, "reference": True}
        elif engine in reused:
            r = reused[engine]
        else:
            r = run_child([sys.executable, __file__, "_one", engine, spec, str(args.repeats),
                           args.solver or ""], log, args.timeout)
        row["engines"][engine] = r
        print(_line(spec, engine, r), flush=True)
    _decision_differences(row["engines"])
    return row | {"load_average": os.getloadavg(), "date": time.strftime("%F %T")}


def main(argv=None) -> int:
    """Run the asked-for sets and engines; append one JSON record per set to --out."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["ringnorm:300000"],
                   help="set specs (bench_engines.py): e.g. ijcnn1 fmnist10 friedman1:300000 "
                        "oneclass:100000 nyc_airtime nyc_delayed:50000")
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--repeats", type=int, default=1,
                   help="timed fits of every engine run (median reported)")
    p.add_argument("--solver", default=None, choices=("libsvm", "onedal", "auto"),
                   help="RandSVM's solver (default: the estimator's own, a defaults run)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="kill an engine after SECONDS (recorded as timed out)")
    p.add_argument("--reuse-peers", nargs="+", default=None, metavar="FILE",
                   help="take peers' figures from earlier records of the same set here")
    p.add_argument("--reuse-engines", nargs="+", default=list(PEERS_ALL), choices=PEERS_ALL,
                   help="the peers --reuse-peers may take (default all; the others run)")
    p.add_argument("--libsvm-reference", type=float, default=None,
                   help="LIBSVM seconds measured alone earlier (instead of running it)")
    p.add_argument("--out", default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    for spec in args.sets:
        set_kind(spec)  # an unknown set stops the run before anything is timed
    for spec in args.sets:
        row = run_set(spec, args)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        engine, spec, repeats, solver = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        print(json.dumps(_one(engine, spec, repeats, solver or None),
                         default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    else:
        sys.exit(main())
