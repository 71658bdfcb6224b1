"""The same fit at W = 1, 2, 4, ... workers, beside LIBSVM and scikit-learn-intelex on W
cores (issue 26): wall time, per-iteration phases, parallel efficiency T(1) / (W T(W)).

Per set and W, each engine alone in its own fresh process, one at a time, peers first:

1. ``libsvm``: libsvm-official's ``svm_train`` on all training rows with OMP_NUM_THREADS=W
   (before any Dask cluster exists); skipped, and recorded as skipped, when a run at fewer
   threads already showed it would exceed ``--max-seconds`` even with perfect scaling, and
   stopped at ``--max-seconds`` otherwise;
2. ``sklearnex``: scikit-learn-intelex's SVC / SVR with oneDAL's threads set to W
   (``daal4py.daalinit``), same time limit; skipped when not installed (and for one-class,
   which it does not accelerate);
3. ``randsvm``: the estimator with its defaults on the embedded default cluster of W
   single-threaded workers (started and warmed up first: its start and numba's compiles
   are not in the fit's time; the start is recorded apart).

Before the sets, at each W, the machine's own ceiling (set and engine ``ceiling``): the
same CPU-bound work (RBF kernel blocks, no communication) split over W processes. Its
efficiency is the most any parallel code reaches on this machine.

Sets (``--sets``): ringnorm (3e5 rows, C=1, gamma=0.05), checkerboard (1e6, C=100,
gamma=1), skin_nonskin (``../shared/datasets``; skipped when absent), friedman1
(regression, 3e5 rows, C=10, epsilon=2, gamma=0.5) and oneclass (blobs_with_outliers,
1e5 rows, nu=0.05, gamma=0.5); ``--rows-scale`` scales the synthetic sizes (smoke tests).
Every row appended to ``--out`` holds the machine (cores, CPU model, load average at the
start), the engine, W, the wall time, accuracy (R^2, ROC AUC), and for RandSVM each
iteration's solve / scan / driver seconds, the seconds outside the loop, the certified gap
and the ``history_`` (``cost_model_check.py --local`` fits the cost model to it).
``--plot`` draws time and efficiency against W from a results file.

    python benchmarks/bench_scaleout.py --sets ringnorm checkerboard --workers 1,2 \\
        --out benchmarks/results/scaleout.jsonl
    python benchmarks/bench_scaleout.py --sets skin_nonskin friedman1 oneclass
    python benchmarks/bench_scaleout.py --plot benchmarks/results/scaleout.jsonl
    python benchmarks/bench_scaleout.py --sets ringnorm --rows-scale 0.01 --out /tmp/s.jsonl

Time only on a quiet machine (the load average is recorded with every row).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_engines import (  # noqa: E402
    CACHE_MB,
    SCRATCH,
    SHARED,
    fit_and_score,
    fit_libsvm,
    fit_sklearnex,
    load_problem,
    randsvm_estimator,
    run_child,
    settled,
)

RESULTS = HERE / "results" / "scaleout.jsonl"
PLOT = HERE / "scaleout.png"
# name: (kind, rows at --rows-scale 1 (None: a real set, all rows))
SETS = {"ringnorm": ("classification", 300_000), "checkerboard": ("classification", 1_000_000),
        "skin_nonskin": ("classification", None), "friedman1": ("regression", 300_000),
        "oneclass": ("one_class", 100_000)}
ENGINES = ("libsvm", "sklearnex", "randsvm")
# the ceiling's work: RBF kernel blocks of these shapes, this many in all, split over W
CEILING_BLOCK, CEILING_BLOCKS = (2000, 2000, 20), 240


# -- data and machine ------------------------------------------------------------------------
def dataset(name: str, rows: int | None) -> dict:
    """Training and test arrays of a set and its kind and parameters (``bench_engines``)."""
    return load_problem(name if rows is None else f"{name}:{rows}")


def machine() -> dict:
    """Cores, CPU model and the load average now."""
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "cpu_model": model, "load_average": os.getloadavg()}


# -- engines (each in its own process) -------------------------------------------------------
def _estimator(data: dict, solver: str | None):
    return randsvm_estimator(data, random_state=0, cache_size=CACHE_MB,
                             **({"solver": solver} if solver else {}))


def phases(history: list[dict], fit_seconds: float) -> dict:
    """Per iteration: solve, scan and driver (the rest of the iteration) seconds; and the
    fit's seconds outside the loop (placement, duplicates, final assembly)."""
    its, prev = [], 0.0
    for r in history:
        wall = r["seconds"] - prev
        its.append({"iteration": r["iteration"], "warm_start": r.get("warm_start"),
                    "sample_size": r["sample_size"], "n_support": r["n_support"],
                    "solve": r["solve_seconds"], "scan": r["scan_seconds"],
                    "driver": max(wall - r["solve_seconds"] - r["scan_seconds"], 0.0)})
        prev = r["seconds"]
    return {"iterations": its, "outside_loop_seconds": max(fit_seconds - prev, 0.0)}


def engine_randsvm(data: dict, workers: int, solver: str | None) -> dict:
    """The estimator's defaults on the embedded default cluster of W workers."""
    import numpy as np

    from randsvm_dist.engine.embedded import close_embedded, embedded_client

    t0 = time.perf_counter()
    client = embedded_client(workers)
    small = np.random.default_rng(0).normal(size=(400, data["X"].shape[1])).astype(np.float32)
    warm = _estimator({**data, "kind": "classification", "params": {"C": 1.0, "gamma": 1.0}},
                      solver)
    warm.fit(small, (small[:, 0] > 0).astype(int))  # imports and numba's compiles
    settled(client)
    start = time.perf_counter() - t0
    est = _estimator(data, solver)
    seconds, scores = fit_and_score(est, data)
    scores.pop("decision", None)
    h = est.history_
    close_embedded()
    X = data["X"]
    return {"seconds": seconds, "cluster_start_seconds": start, "n_rows": int(X.shape[0]),
            "n_features": float(X.nnz / X.shape[0] if hasattr(X, "nnz") else X.shape[1]),
            "solver": est.solver,
            "n_support": int(len(est.support_)), "relative_gap": float(est.relative_gap_),
            "certified": bool(est.certified_), "n_iter": int(est.n_iter_),
            **scores, **phases(h, seconds),
            "history": [{k: v for k, v in r.items() if not isinstance(v, (list, dict,
                                                                          np.ndarray))}
                        for r in h]}


def _kernel_blocks(count: int) -> float:
    """``count`` RBF kernel blocks (float32 GEMM and exp) on one BLAS thread."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    m, k, d = CEILING_BLOCK
    x = np.random.default_rng(0).random((m, d), dtype=np.float32)
    s = np.random.default_rng(1).random((k, d), dtype=np.float32)
    total = 0.0
    with threadpool_limits(1):
        for _ in range(count):
            sq = (x * x).sum(1)[:, None] + (s * s).sum(1)[None, :] - 2 * x @ s.T
            total += float(np.exp(-0.05 * sq).sum())
    return total


def engine_ceiling(workers: int) -> dict:
    """The machine's own ceiling at W: the same CPU-bound work (CEILING_BLOCKS kernel
    blocks, no communication) split over W processes; its efficiency is the most any
    parallel code can reach here (shared caches, memory bandwidth, turbo, the host's
    other tenants)."""
    import multiprocessing as mp

    share = [CEILING_BLOCKS // workers] * workers
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(_kernel_blocks, [1] * workers)  # start-up and imports
        t0 = time.perf_counter()
        pool.map(_kernel_blocks, share)
        return {"seconds": time.perf_counter() - t0, "blocks": sum(share)}


def child(engine: str, name: str, rows: int | None, workers: int, solver: str | None) -> dict:
    """One engine on one set at W, in this (fresh) process."""
    if engine == "ceiling":
        return engine_ceiling(workers)
    data = dataset(name, rows)
    if engine == "libsvm":  # its threads: OMP_NUM_THREADS, set by the parent
        out = fit_libsvm(data)
        out.pop("decision", None)
        return out
    if engine == "sklearnex":
        return fit_sklearnex(data, threads=workers)
    return engine_randsvm(data, workers, solver)


def run_engine(engine: str, name: str, rows: int | None, workers: int, solver: str | None,
               timeout: float | None) -> dict:
    """``child`` in a fresh process (OMP_NUM_THREADS=W for the peers), stopped after
    ``timeout`` seconds (recorded as skipped); stderr -> SCRATCH/scaleout-progress.log."""
    env = {**os.environ}
    if engine != "randsvm":
        env["OMP_NUM_THREADS"] = str(workers)
    out = run_child([sys.executable, __file__, "_one", engine, name, str(rows or 0),
                     str(workers), solver or ""], SCRATCH / "scaleout-progress.log",
                    timeout, env)
    if "timed_out" in out:
        return {"skipped": f"stopped at --max-seconds {timeout:g}"}
    return out


def hopeless(done: dict, workers: int, limit: float | None) -> str | None:
    """Why a peer at W need not run: at W' < W it took (or was stopped at) more than
    limit x W / W' seconds, so even perfect scaling would exceed the limit."""
    if limit is None:
        return None
    for w, r in done.items():
        took = r.get("seconds", limit if "stopped at" in r.get("skipped", "") else None)
        if w < workers and took is not None and took >= limit * workers / w:
            return f"would exceed --max-seconds {limit:g}: {took:.0f} s at W={w}"
    return None


# -- report ----------------------------------------------------------------------------------
def with_efficiency(rows: list[dict]) -> list[dict]:
    """Rows with parallel efficiency T(1) / (W T(W)) per (set, rows, engine), where W=1 ran."""
    base = {(r["set"], r["rows"], r["engine"]): r["result"]["seconds"] for r in rows
            if r["workers"] == 1 and "seconds" in r["result"]}
    for r in rows:
        t1 = base.get((r["set"], r["rows"], r["engine"]))
        if t1 is not None and "seconds" in r["result"]:
            r["efficiency"] = t1 / (r["workers"] * r["result"]["seconds"])
    return rows


def plot(path: Path, out: Path) -> None:
    """Time and efficiency against W, one colour per set, a line style per engine."""
    try:
        import matplotlib
    except ImportError:
        print("plot skipped: needs matplotlib (pip install matplotlib)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = {}  # earlier runs stay in the file: the last of each (set, rows, engine, W)
    for r in (json.loads(x) for x in path.read_text().splitlines() if x):
        last[(r["set"], r["rows"], r["engine"], r["workers"])] = r
    rows = with_efficiency(list(last.values()))
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"randsvm": "-s", "libsvm": "--o", "sklearnex": ":^", "ceiling": "-.x"}
    sets = sorted({(r["set"], r["rows"]) for r in rows}, key=str)
    for k, key in enumerate(sets):
        for engine, style in styles.items():
            got = sorted(((r["workers"], r) for r in rows
                          if (r["set"], r["rows"]) == key and r["engine"] == engine
                          and "seconds" in r["result"]), key=lambda t: t[0])
            if not got:
                continue
            ws = [w for w, _ in got]
            label = f"{key[0]} {engine}"
            ax_t.plot(ws, [r["result"]["seconds"] for _, r in got], style, color=f"C{k}",
                      label=label)
            eff = [(w, r["efficiency"]) for w, r in got if "efficiency" in r]
            if eff:
                ax_e.plot(*zip(*eff), style, color=f"C{k}", label=label)
    for ax, title in ((ax_t, "wall seconds"), (ax_e, "parallel efficiency T(1) / (W T(W))")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("W (workers / threads)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    ax_t.set_yscale("log")
    ax_e.axhline(0.5, color="grey", lw=0.8)
    ax_t.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def worker_counts(spec: str | None) -> list[int]:
    """--workers '1,2,4' or, by default, 1, 2, 4, ... up to the machine's cores."""
    if spec:
        try:
            return sorted({int(w) for w in spec.split(",")})
        except ValueError:
            raise SystemExit(f"--workers: expected counts like 1,2,4, got {spec!r}") from None
    cores, out = os.cpu_count() or 1, [1]
    while out[-1] * 2 <= cores:
        out.append(out[-1] * 2)
    return out + ([cores] if out[-1] != cores else [])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--workers", default=None, help="comma-separated W (default 1, 2, 4, "
                   "... up to the cores)")
    p.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                   help="run LIBSVM and scikit-learn-intelex at each W (--no-peers: not)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="a peer run that would take longer is skipped (recorded)")
    p.add_argument("--rows-scale", type=float, default=1.0,
                   help="scale the synthetic sets' rows (e.g. 0.01 for a smoke test)")
    p.add_argument("--solver", default=None, choices=("libsvm", "onedal", "auto"),
                   help="RandSVM's solver (default: the estimator's)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--plot", type=Path, default=None, metavar="RESULTS",
                   help="only draw benchmarks/scaleout.png from a results file")
    p.add_argument("--plot-out", type=Path, default=PLOT)
    args = p.parse_args(argv)
    if args.plot:
        plot(args.plot, args.plot_out)
        return 0
    engines = ENGINES if args.peers else ("randsvm",)
    rows_done = []
    for workers in worker_counts(args.workers):  # the machine's ceiling first
        row = {"set": "ceiling", "kind": "kernel blocks", "rows": 0, "engine": "ceiling",
               "workers": workers, "solver": None, "machine": machine(),
               "date": time.strftime("%F %T"),
               "result": run_engine("ceiling", "ceiling", None, workers, None, None)}
        rows_done.append(row)
        _print(row)
        _append(args.out, row)
    for name in args.sets:
        if name == "skin_nonskin" and not (SHARED / "skin_nonskin").is_dir():
            print(f"skin_nonskin skipped: {SHARED / 'skin_nonskin'} not found")
            continue
        base = SETS[name][1]
        rows = None if base is None else max(1000, int(base * args.rows_scale))
        done: dict = {e: {} for e in engines}
        for workers in worker_counts(args.workers):
            for engine in engines:
                info = machine()
                peer = engine != "randsvm"
                why = hopeless(done[engine], workers, args.max_seconds) if peer else None
                result = {"skipped": why} if why else run_engine(
                    engine, name, rows, workers, args.solver,
                    args.max_seconds if peer else None)
                done[engine][workers] = result
                row = {"set": name, "kind": SETS[name][0], "rows": rows, "engine": engine,
                       "workers": workers, "solver": args.solver, "machine": info,
                       "date": time.strftime("%F %T"), "result": result}
                rows_done.append(row)
                _print(row)
                _append(args.out, row)
    for r in with_efficiency(rows_done):
        if "efficiency" in r:
            print(f"{r['set']:14s} {r['engine']:10s} W={r['workers']:<3d} efficiency "
                  f"{r['efficiency']:.2f}")
    return 0


def _append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def _print(row: dict) -> None:
    r = row["result"]
    what = (f"{r['seconds']:8.2f} s" + "".join(
        f"  {k} {r[k]:.4g}" for k in ("accuracy", "r2", "roc_auc", "relative_gap") if k in r)
        if "seconds" in r else str(r))
    print(f"{row['set']:14s} {row['engine']:10s} W={row['workers']:<3d} {what}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        engine, name, rows, workers, solver = sys.argv[2:7]
        print(json.dumps(child(engine, name, int(rows) or None, int(workers), solver or None),
                         default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    else:
        sys.exit(main())
