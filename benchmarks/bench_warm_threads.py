"""The warm SMO's re-solve at 1, 2, ... threads: seconds, steps and kernel work.

The problem is RandSVM's third ringnorm iteration (3e5 rows) in miniature
(``warm_problem``): about 12.5k support vectors of the second solve plus 3.4k fresh
violators, re-solved from the previous alphas and kernel sums; ``--cache`` keeps it in an
.npz file. A problem captured from a fit (X, y, alpha0, sums all NaN when the fit had
none, C, gamma, tol, cache_size) is re-solved with the fit's parameters: a fit's warm
solve after a cold one has no kernel sums (its start then differs), and the estimator's
cache is larger than ``SolverParams``' default. Only the re-solve is timed, per thread
count, in this process; every thread count must give the same bytes (alphas, kernel
sums, rho) and the same steps (printed).

    python benchmarks/bench_warm_threads.py --cache /tmp/warm3.npz --threads 1,2,1,2

Time it alone on the machine (numba's parallel loops wait for their slowest thread).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from randsvm_dist.data.generators import make_arrays
from randsvm_dist.numerics.kernels import Kernel, decision_values
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted


def warm_problem(sample: int, second: int, fresh: int, pool: int, seed: int):
    """(X, y, params, alpha0, start_sums) of a RandSVM-like third iteration on ringnorm:
    ``sample`` rows solved; its support vectors plus the ``second`` rows among ``pool``
    others that violate it most solved; that solution's support vectors plus ``fresh``
    more violators, from its alphas and kernel sums (fresh rows: 0 and unknown)."""
    X, y = make_arrays("ringnorm", sample + pool, seed=seed)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.05), tol=1e-3)
    rows, left = np.arange(sample), np.arange(sample, sample + pool)
    sol, _ = solve_warm_counted(X[rows], y[rows], params)
    sums = None
    for add in (second, fresh):
        rows = rows[sol.support]
        margin = y[left] * decision_values(X[left], X[rows], sol.dual_coef, sol.intercept,
                                           params.kernel)
        order = np.argsort(margin, kind="stable")
        alpha0 = np.zeros(len(rows) + add)
        alpha0[:len(rows)] = np.abs(sol.dual_coef)
        sums = np.full((len(rows) + add, 2), np.nan)
        sums[:len(rows)] = sol.kernel_sums
        rows, left = np.concatenate([rows, left[order[:add]]]), left[order[add:]]
        if add == second:
            sol, _ = solve_warm_counted(X[rows], y[rows], params, alpha0, start_sums=sums)
    return np.ascontiguousarray(X[rows]), y[rows], params, alpha0, sums


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, time the re-solve per thread count, print a JSON line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=22566)
    ap.add_argument("--second", type=int, default=21035)
    ap.add_argument("--fresh", type=int, default=3400)
    ap.add_argument("--pool", type=int, default=150000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cache", default=None, help=".npz file holding the problem")
    args = ap.parse_args(argv)
    params = SolverParams(C=1.0, kernel=Kernel("rbf", 0.05), tol=1e-3)
    if args.cache and os.path.exists(args.cache):
        with np.load(args.cache) as f:
            X, y, alpha0, sums = f["X"], f["y"], f["alpha0"], f["sums"]
            if "C" in f:  # a problem captured from a fit, with the fit's cache when saved
                params = SolverParams(C=float(f["C"]), kernel=Kernel("rbf", float(f["gamma"])),
                                      tol=float(f["tol"]), cache_size=float(
                                          f["cache_size"] if "cache_size" in f else 200.0))
        if np.isnan(sums).all():  # a fit's solve without kernel sums gets None
            sums = None
    else:
        X, y, params, alpha0, sums = warm_problem(args.sample, args.second, args.fresh,
                                                  args.pool, args.seed)
        if args.cache:
            np.savez(args.cache, X=X, y=y, alpha0=alpha0, sums=sums, C=params.C,
                     gamma=params.kernel.gamma, tol=params.tol)
    print(json.dumps(dict(rows=len(y), start_nonzero=int((alpha0 > 0).sum()))))
    ref = None
    for th in [int(t) for t in args.threads.split(",")]:
        for _ in range(args.repeats):
            stats: dict = {}
            t0 = time.perf_counter()
            sol, steps = solve_warm_counted(X, y, params, alpha0, th, stats=stats,
                                            start_sums=sums)
            dt = time.perf_counter() - t0
            key = (steps, sol.support.tobytes(), sol.dual_coef.tobytes(),
                   sol.kernel_sums.tobytes(), sol.intercept)
            ref = key if ref is None else ref
            print(json.dumps(dict(offered=th, seconds=round(dt, 3), steps=steps,
                                  same_bytes=key == ref, load=os.getloadavg()[0],
                                  **{k: (round(v, 3) if isinstance(v, float) else v)
                                     for k, v in stats.items()})), flush=True)


if __name__ == "__main__":
    main()
