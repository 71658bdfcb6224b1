"""The same fit on two checkouts of the package: same model, same time (a restructuring's
before/after check, issue 25).

For each tree given, a fresh process with that tree first on ``sys.path`` generates the
rows (``randsvm_dist.data.make_arrays``: the same rows for the same seed), starts a
LocalCluster of 2 single-threaded workers, fits ``RandSVMClassifier`` with the given
parameters and prints one JSON line: wall seconds of the fit, test accuracy, #SV, the
certified gap, and SHA-256 digests of ``support_``, ``dual_coef_`` and ``intercept_``. Only
the public API is used, so any version of the package runs it.

    python benchmarks/bench_same_model.py TREE_BEFORE TREE_AFTER --rows 1000000 \\
        --out benchmarks/results/restructure_same_model.jsonl

Time only on a quiet machine (the load average is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import hashlib, json, os, sys, time
import numpy as np
from distributed import Client, LocalCluster
from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays

def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]

if __name__ == "__main__":
    name, rows, C, gamma, solver = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
        float(sys.argv[4]), sys.argv[5]
    X, y = make_arrays(name, rows, seed=0)
    Xt, yt = make_arrays(name, 100_000, seed=1)
    with LocalCluster(n_workers=2, threads_per_worker=1) as lc, Client(lc) as client:
        est = RandSVMClassifier(C=C, gamma=gamma, solver=solver, random_state=0,
                                client=client)
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": round(seconds, 2), "accuracy": float(est.score(Xt, yt)),
                      "n_support": int(len(est.support_)),
                      "relative_gap": float(est.relative_gap_),
                      "iterations": int(est.n_iter_),
                      "support": digest(est.support_), "dual_coef": digest(est.dual_coef_),
                      "intercept": digest(est.intercept_)}))
"""


def main(argv: list[str] | None = None) -> None:
    """Run the fit once per tree, one after the other, and append a line per tree."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", help="checkouts of the repository")
    p.add_argument("--set", default="checkerboard")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--C", type=float, default=100.0)
    p.add_argument("--gamma", type=float, default=1.0)
    p.add_argument("--solver", default="libsvm")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    for tree in a.trees:
        env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
        load = os.getloadavg()[0]
        done = subprocess.run([sys.executable, "-c", CHILD, a.set, str(a.rows), str(a.C),
                               str(a.gamma), a.solver], env=env, capture_output=True,
                              text=True, check=True)
        rev = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        row = {"bench": "same_model", "set": a.set, "rows": a.rows, "C": a.C,
               "gamma": a.gamma, "solver": a.solver, "commit": rev,
               "load_average": round(load, 2),
               **json.loads(done.stdout.strip().splitlines()[-1])}
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
