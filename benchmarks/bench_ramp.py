"""OnlineSVMR / OnlineASVMR vs full LIBSVM (same C, gamma), one run, one process.

Data sets (10,000 training rows each by default): checkerboard and noisy checkerboard (15%
flipped labels, tested on clean checkerboard rows of another seed), gauss, waveform (binary:
class 0 vs the rest), all from ``randsvm_dist.data.make_arrays`` and standardized with the
training mean/std as in the paper; and the first 10,000 rows of a9a (read in place from
../shared/datasets with ``load_svmlight_file``, tested on a9a.test, kept raw and sparse).

For each set: LIBSVM (libsvm-official, RBF, ``-c C -g gamma``), OnlineSVMR with the removal
step off and with m in {0, 100, 1000}, and OnlineASVMR; test accuracy, #SV, kernel
evaluations, labels used, time. OnlineASVMR's and OnlineSVMR's (QueryAll) accuracy against
labels used are recorded every ``--every`` rows and plotted to a PNG.

Usage::

    python benchmarks/bench_ramp.py --out /tmp/ramp.jsonl --plot benchmarks/ramp_active_learning.png
    python benchmarks/bench_ramp.py --rows 2000 --datasets gauss   # quick look
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

# (C, gamma) from the paper's grids: C in {0.1, 1, 5, 10, 50, 100, 500},
# gamma = 1 / (2 delta^2) with delta^2 in M * {2, 1, 1/2, 1/4, 1/16, 1/64}.
SETTINGS = {
    "checkerboard": (10.0, 4.0),         # M=2, delta^2 = M/16
    "noisy_checkerboard": (10.0, 4.0),   # M=2, delta^2 = M/16
    "gauss": (1.0, 0.5),                 # M=2, delta^2 = M/2
    "waveform_binary": (1.0, 1.0 / 21),  # M=21, delta^2 = M/2
    "a9a": (1.0, 1.0 / 123),             # M=123, delta^2 = M/2 (raw 0/1 features)
}


def load(name: str, rows: int, seed: int):
    """(X_train, y_train, X_test, y_test) for one benchmark set (labels +1/-1)."""
    if name == "a9a":
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(DATASETS / "a9a" / "a9a.train.svm.gz"), n_features=123)
        Xt, yt = load_svmlight_file(str(DATASETS / "a9a" / "a9a.test.svm.gz"), n_features=123)
        return (X[:rows].astype(np.float32), y[:rows], Xt.astype(np.float32), yt)
    from randsvm_dist.data import make_arrays

    X, y = make_arrays(name, rows, seed)
    test_name = "checkerboard" if name == "noisy_checkerboard" else name
    Xt, yt = make_arrays(test_name, 10_000, seed + 1000)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1
    return ((X - mu) / sd).astype(np.float32), y.astype(float), \
        ((Xt - mu) / sd).astype(np.float32), yt.astype(float)


def run_libsvm(X, y, Xt, yt, C, gamma) -> dict:
    """Train and test LIBSVM (RBF) with the same C and gamma."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train

    def rows(A):
        if sp.issparse(A):
            A = A.tocsr()
            return [dict(zip((A.indices[A.indptr[i]:A.indptr[i + 1]] + 1).tolist(),
                             A.data[A.indptr[i]:A.indptr[i + 1]].tolist()))
                    for i in range(A.shape[0])]
        return [dict(enumerate(r.tolist(), 1)) for r in np.asarray(A, dtype=float)]

    t0 = time.perf_counter()
    prob = svm_problem(y.tolist(), rows(X))
    model = svm_train(prob, svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -m 1000 -q"))
    t_train = time.perf_counter() - t0
    _, acc, _ = svm_predict(yt.tolist(), rows(Xt), model, "-q")
    return {"algo": "LIBSVM", "acc": acc[0] / 100, "n_sv": model.get_nr_sv(),
            "train_s": round(t_train, 2)}


def run_ramp(X, y, Xt, yt, C, gamma, every, eval_rows, **kw) -> dict:
    """Stream (X, y) through OnlineRampSVM in blocks of ``every`` rows; record the curve."""
    from randsvm_dist.streaming import OnlineRampSVM

    clf = OnlineRampSVM(C=C, gamma=gamma, **kw)
    Xe, ye = Xt[:eval_rows], yt[:eval_rows]
    curve, t_train = [], 0.0
    for a in range(0, X.shape[0], every):
        t0 = time.perf_counter()
        clf.partial_fit(X[a:a + every], y[a:a + every], classes=[-1.0, 1.0])
        t_train += time.perf_counter() - t0
        curve.append((int(clf.n_seen_), int(clf.n_labels_queried_), clf.score(Xe, ye),
                      clf.n_support_))
    name = ("OnlineASVMR" if kw.get("active") else "OnlineSVMR") + \
        ("" if kw.get("max_non_sv") is None else f" m={kw['max_non_sv']}")
    return {"algo": name, "acc": clf.score(Xt, yt), "n_sv": clf.n_support_,
            "kernel_evals": clf.kernel_evals_, "labels": clf.n_labels_queried_,
            "kept": clf.n_kept_, "smo_steps": clf.smo_steps_,
            "cap_hits": int(sum(lr.cccp_cap_hits for lr in clf.learners_)),
            "train_s": round(t_train, 2), "curve": curve}


def plot(results: list[dict], path: str) -> None:
    """Accuracy vs labels used: OnlineASVMR against OnlineSVMR (QueryAll), one panel/set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["dataset"] for r in results))
    ncol = min(3, len(sets))
    nrow = -(-len(sets) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False)
    for ax in axes.flat[len(sets):]:
        ax.set_visible(False)
    for ax, ds in zip(axes.flat, sets):
        for r in results:
            if r["dataset"] != ds or r["algo"] not in ("OnlineSVMR", "OnlineASVMR"):
                continue
            c = np.array(r["curve"], dtype=float)
            label = "OnlineASVMR" if r["algo"] == "OnlineASVMR" else "OnlineSVMR (QueryAll)"
            ax.plot(c[:, 1], c[:, 2], marker=".", label=label)
        for r in results:
            if r["dataset"] == ds and r["algo"] == "LIBSVM":
                ax.axhline(r["acc"], color="gray", ls="--", lw=1, label="LIBSVM (all labels)")
        ax.set_xscale("log")
        ax.set_title(ds)
        ax.set_xlabel("labels queried (curve: first eval-rows test rows)")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(results: list[dict]) -> str:
    """Markdown table of the runs (accuracy in %, #SV and its ratio to LIBSVM's)."""
    lines = ["| data set (C, gamma) | algorithm | test acc % | #SV | #SV / LIBSVM | labels used "
             "| kept | kernel evals | train s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    ref = {(r["dataset"], r["C"], r["gamma"]): r["n_sv"] for r in results
           if r["algo"] == "LIBSVM"}
    for r in results:
        key = (r["dataset"], r["C"], r["gamma"])
        ratio = r["n_sv"] / ref[key] if key in ref else float("nan")
        lines.append(
            f"| {r['dataset']} ({r['C']:g}, {r['gamma']:.3g}) | {r['algo']} | "
            f"{100 * r['acc']:.2f} | {r['n_sv']:,} | {ratio:.2f} | "
            f"{r.get('labels', r['rows']):,} | {r.get('kept', r['rows']):,} | "
            f"{format(r['kernel_evals'], ',') if 'kernel_evals' in r else '-'} | "
            f"{r['train_s']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    """Run the benchmark; print one JSON line per run; optionally plot."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--datasets", nargs="+", default=list(SETTINGS))
    p.add_argument("--m-values", nargs="*", type=int, default=[0, 100, 1000])
    p.add_argument("--every", type=int, default=500, help="rows between curve points")
    p.add_argument("--eval-rows", type=int, default=2000, help="test rows for the curves")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--C", type=float, help="override C (all listed sets)")
    p.add_argument("--gamma", type=float, help="override gamma (all listed sets)")
    p.add_argument("--no-removal-runs", action="store_true",
                   help="skip the m runs (LIBSVM, OnlineSVMR, OnlineASVMR only)")
    p.add_argument("--out", help="append JSON lines here")
    p.add_argument("--plot", help="PNG path for the accuracy-vs-labels curves")
    p.add_argument("--from-jsonl", help="only plot the runs of this JSON-lines file")
    args = p.parse_args(argv)
    if args.from_jsonl:
        results = [json.loads(line) for line in open(args.from_jsonl)]
        print(table(results))
        if args.plot:
            plot(results, args.plot)
        return
    results = []
    for ds in args.datasets:
        C, gamma = SETTINGS[ds]
        C = args.C if args.C is not None else C
        gamma = args.gamma if args.gamma is not None else gamma
        X, y, Xt, yt = load(ds, args.rows, args.seed)
        common = dict(every=args.every, eval_rows=args.eval_rows)
        m_values = [] if args.no_removal_runs else args.m_values
        configs = [None, {}] + [{"max_non_sv": m} for m in m_values] + [{"active": True}]
        for kw in configs:
            run = run_libsvm(X, y, Xt, yt, C, gamma) if kw is None else \
                run_ramp(X, y, Xt, yt, C, gamma, **common, **kw)
            r = {"dataset": ds, "rows": X.shape[0], "C": C, "gamma": gamma, **run}
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "curve"}), flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
