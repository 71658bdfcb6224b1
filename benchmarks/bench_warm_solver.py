"""The warm-started SMO (``solvers.warm_smo.solve``) against a cold LIBSVM solve of the same rows.

What RandSVM does on a re-solve: the working set holds the rows of the previous working
set, whose optimum is known, plus fresh rows. Here, per size n: n rows of a generated set
(``data.generators``), the optimum of a random (1 - fresh) share of them (solved by LIBSVM,
not timed) is the starting point, and the whole n rows are solved twice, timed back to
back in this process with the same thread count: cold by libsvm-official
(``libsvm_adapter.solve_libsvm``) and warm from that point (``warm_smo.solve_warm``).
Both times include what the driver pays per solve (copies, the starting gradient, the
dual objective of the result). Printed per size: seconds of each, the speed-up, both dual
objectives and iteration counts (LIBSVM's own ``#iter`` line, read from its stdout); the
JSON lines also hold CPU seconds (``time.process_time``: the fairer ratio on a busy
machine with one thread each) and the warm solve's parts.

    python benchmarks/bench_warm_solver.py --sizes 10000,20000,40000 \
        --sets ringnorm,checkerboard --threads 2 --out benchmarks/results/warm_solver.jsonl

Time it alone on the machine: with other processes on the cores both sides slow down by
different factors (LIBSVM's OpenMP threads suffer most).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from unittest import mock

import numpy as np

from randsvm_dist.data.generators import make_arrays
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.warm_smo.solve import solve_warm_counted

# the sets' usual parameters (as in bench_randsvm.py)
SETS = {
    "ringnorm": dict(C=1.0, gamma=0.05),
    "checkerboard": dict(C=100.0, gamma=1.0),
    "twonorm": dict(C=1.0, gamma=0.05),
}


@contextlib.contextmanager
def captured_stdout_fd():
    """Capture what C code writes to file descriptor 1; yields a list that receives the
    text when the block ends."""
    import ctypes

    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved = os.dup(1)
    out: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield out
        finally:
            sys.stdout.flush()
            libc.fflush(None)  # LIBSVM prints with C's buffered stdout
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode(errors="replace"))


def run_one(name: str, n: int, fresh: float, threads: int, tol: float, cache_mb: float,
            seed: int) -> dict:
    """One size of one set: cold LIBSVM and warm SMO on the same n rows.

    Returns:
        a dict with the timings, objectives, iteration and support-vector counts.
    """
    X, y = make_arrays(name, n, seed=seed)
    y = np.where(y > 0, 1.0, -1.0)
    p = SETS[name]
    params = SolverParams(C=p["C"], kernel=Kernel("rbf", p["gamma"]), tol=tol,
                          cache_size=cache_mb)
    rng = np.random.default_rng(seed)
    old = np.sort(rng.permutation(n)[: int(round((1 - fresh) * n))])
    with captured_stdout_fd():
        prev = solve_libsvm(X[old], y[old], params, threads)
    alpha0 = np.zeros(n)
    alpha0[old[prev.support]] = np.abs(prev.dual_coef)

    loud = SolverParams.options  # without -q, so that LIBSVM prints its #iter line
    t0, c0 = time.perf_counter(), time.process_time()
    with captured_stdout_fd() as log, mock.patch.object(
            SolverParams, "options", lambda self: loud(self).replace(" -q", "")):
        cold = solve_libsvm(X, y, params, threads)
    t_cold, c_cold = time.perf_counter() - t0, time.process_time() - c0
    m = re.findall(r"#iter = (\d+)", log[0] if log else "")
    it_cold = int(m[-1]) if m else None

    stats: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    warm, it_warm = solve_warm_counted(X, y, params, alpha0, threads, stats=stats)
    t_warm, c_warm = time.perf_counter() - t0, time.process_time() - c0
    return dict(set=name, n=n, fresh=fresh, threads=threads, tol=tol, cache_mb=cache_mb,
                seed=seed, cold_s=round(t_cold, 3), warm_s=round(t_warm, 3),
                speedup=round(t_cold / t_warm, 2), cold_cpu_s=round(c_cold, 3),
                warm_cpu_s=round(c_warm, 3), cpu_speedup=round(c_cold / max(c_warm, 1e-9), 2),
                warm_start_s=round(stats.get("start_s", 0.0), 3),
                warm_smo_s=round(stats.get("smo_s", 0.0), 3),
                warm_kernel_evals=stats.get("kernel_evals"), dual_cold=cold.dual_objective,
                dual_warm=warm.dual_objective, iter_cold=it_cold, iter_warm=it_warm,
                sv_start=len(prev.support), sv_cold=len(cold.support),
                sv_warm=len(warm.support), intercept_cold=cold.intercept,
                intercept_warm=warm.intercept,
                time_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run every (set, size), print a table, append JSON lines.

    Returns:
        the exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,20000,40000",
                    help="comma-separated working-set sizes (rows)")
    ap.add_argument("--sets", default="ringnorm,checkerboard",
                    help=f"comma-separated generated sets among {', '.join(SETS)}")
    ap.add_argument("--fresh", type=float, default=0.2,
                    help="share of fresh rows (not in the starting optimum)")
    ap.add_argument("--threads", type=int, default=2, help="threads of both solvers")
    ap.add_argument("--tol", type=float, default=1e-3, help="LIBSVM's -e for both")
    ap.add_argument("--cache-mb", type=float, default=200.0, help="kernel cache (MB)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="append one JSON line per run to this file")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",") if s]
    # compile (or load) the solver's numba code before anything is timed
    Xw, yw = make_arrays("twonorm", 200, seed=0)
    solve_warm_counted(Xw, np.where(yw > 0, 1.0, -1.0), SolverParams(), None, a.threads)
    print(f"{'set':<13}{'n':>8}{'cold s':>9}{'warm s':>9}{'speedup':>9}{'cpu x':>7}"
          f"{'dual cold':>16}{'dual warm':>16}{'it cold':>9}{'it warm':>9}", flush=True)
    for name in [s for s in a.sets.split(",") if s]:
        if name not in SETS:
            raise SystemExit(f"unknown set {name!r}; choose among {', '.join(SETS)}")
        for n in sizes:
            r = run_one(name, n, a.fresh, a.threads, a.tol, a.cache_mb, a.seed)
            print(f"{name:<13}{n:>8}{r['cold_s']:>9.2f}{r['warm_s']:>9.2f}"
                  f"{r['speedup']:>9.2f}{r['cpu_speedup']:>7.2f}{r['dual_cold']:>16.6f}{r['dual_warm']:>16.6f}"
                  f"{r['iter_cold'] or -1:>9}{r['iter_warm']:>9}", flush=True)
            if a.out:
                os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
                with open(a.out, "a") as f:
                    f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
