"""The first fit after install against a warm one: numba's compilation on a fresh cache.

For each learner, two fresh processes share one new, empty ``NUMBA_CACHE_DIR``: the first
fits with nothing compiled (as right after ``pip install``), the second with the cache the
first filled. A third fresh process fits with another new cache that ``randsvm-dist
compile`` filled first (as after the README's set-up; the command's wall seconds are
recorded as ``compile_command_seconds``). Each process times only the fit (the data are
generated before the clock starts), in wall seconds and in CPU seconds (user + system,
``resource.getrusage``) of the process itself and of its exited children (the embedded
cluster's scheduler and workers, counted once they are stopped after the fit). A RandSVM
fit also records its phases from ``history_`` (every ``*_seconds`` field of each
iteration, and the time outside the loop).

Learners:

- ``randsvm``: ``RandSVMClassifier(C=100, gamma=1)`` (the checkerboard benchmarks' setting;
  every other parameter its default) on ``--rows`` checkerboard rows (numpy arrays, the
  embedded cluster started by the fit, as a user runs it); its ``phases_`` are recorded;
- ``bsgd``: ``BudgetedSGD()`` with defaults on ``--bsgd-rows`` sparse rows (CSR: the two
  checkerboard features and their one-hot bins), in-process;
- ``streamsvm``, ``blurred_ball``, ``ramp``: the other streaming learners
  (``StreamSVM()``, ``BlurredBallSVM()``, ``OnlineRampSVM()``, defaults) on
  ``--stream-rows`` of the same sparse rows, in-process.

Every fit also records ``compiled_kernels``: the numba compilations of this package's
kernels during the fit (one per kernel and signature: a warm fit loads them all from the
cache and compiles none), and ``compile_seconds``, their wall time.

Each child process stops when this one ends, even if killed (``engine.parent_watch``: it
closes its embedded cluster and exits), so no fit and no workers outlive the benchmark.

One JSON line per (learner, phase) is appended to ``--out``: phases ``first``, ``warm`` and
``after_compile``; ``first_over_warm`` is the ratio of the first fit's wall seconds to the
warm one's (issue 27's target: at most 1.5), ``over_warm`` that of the line's own fit. Run
it alone on the machine (other load makes compilation, and so the ratio, meaningless)::

    python benchmarks/bench_first_fit.py --label after
    python benchmarks/bench_first_fit.py --rows 2000 --bsgd-rows 2000 --stream-rows 2000 \
        --out /tmp/smoke.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "first_fit.jsonl"
LEARNERS = ("randsvm", "bsgd", "streamsvm", "blurred_ball", "ramp")
BINS = 20  # one-hot bins per checkerboard feature in the sparse set


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _sparse_rows(n: int):
    """CSR float64 rows: the 2 checkerboard features and a one-hot of each one's bin."""
    import numpy as np
    import scipy.sparse as sp

    from randsvm_dist.data.generators import make_arrays

    X, y = make_arrays("checkerboard", n, seed=1)
    lo, hi = X.min(axis=0), X.max(axis=0)
    bins = np.minimum(((X - lo) / np.maximum(hi - lo, 1e-12) * BINS).astype(np.int64),
                      BINS - 1)
    cols = bins + np.arange(X.shape[1]) * BINS
    onehot = sp.csr_matrix((np.ones(cols.size), cols.ravel(),
                            np.arange(0, cols.size + 1, X.shape[1])),
                           shape=(n, X.shape[1] * BINS))
    return sp.hstack([sp.csr_matrix(X.astype(np.float64)), onehot], format="csr"), y


def _phases(history: list[dict], wall: float) -> dict:
    """Sums of every ``*_seconds`` field over the iterations, and the time outside them."""
    out: dict[str, float] = {}
    for rec in history:
        for key, value in rec.items():
            if key.endswith("_seconds") and isinstance(value, (int, float)):
                out[key] = out.get(key, 0.0) + float(value)
    loop = max((float(r.get("seconds", 0.0)) for r in history), default=0.0)
    out["outside_loop_seconds"] = wall - loop
    out["iterations"] = len({r["iteration"] for r in history})
    return out


def _exit_with_parent(parent: int) -> None:
    """Stop this child (its embedded cluster closed first) once ``parent`` is gone."""
    from randsvm_dist.engine.embedded import close_embedded
    from randsvm_dist.engine.parent_watch import watch_parent

    watch_parent(parent, close_embedded, exit_after=0.0)


def _listen():
    """A ``CompileCounter`` listening from now on (``app.compile_kernels``)."""
    from randsvm_dist.app.compile_kernels import CompileCounter

    count = CompileCounter()
    count.listen()
    return count


def _learner(learner: str, rows: int):
    """(model, X, y) of one benchmark fit (see the module doc)."""
    if learner == "randsvm":
        from randsvm_dist.data.generators import make_arrays
        from randsvm_dist.estimators import RandSVMClassifier

        X, y = make_arrays("checkerboard", rows, seed=1)
        return RandSVMClassifier(C=100.0, gamma=1.0, random_state=0), X, y
    from randsvm_dist.streaming import LEARNERS as STREAMING

    X, y = _sparse_rows(rows)
    return STREAMING[learner](random_state=0), X, y


def child(learner: str, rows: int) -> dict:
    """Fit ``learner`` once in this process; returns its timings (see the module doc)."""
    model, X, y = _learner(learner, rows)
    compiled = _listen()
    cpu0, wall0 = _cpu(resource.RUSAGE_SELF), time.perf_counter()
    model.fit(X, y)
    wall = time.perf_counter() - wall0
    rec = {"fit_wall_seconds": wall, "fit_cpu_seconds": _cpu(resource.RUSAGE_SELF) - cpu0,
           "compiled_kernels": compiled.kernels, "compile_seconds": compiled.seconds}
    if learner == "randsvm":
        rec.update(_phases(model.history_, wall))
        rec["phases"] = {k: float(v) for k, v in model.phases_.items()}
        rec["n_support"] = int(model.support_.shape[0])
        from randsvm_dist.engine.embedded import close_embedded

        close_embedded()
        rec["cluster_cpu_seconds"] = _cpu(resource.RUSAGE_CHILDREN)
    else:
        rec["n_core"] = int(model.n_core_)
    return rec


def _run_child(learner: str, rows: int, cache: str, compile_first: bool = False) -> dict:
    """One fit in a fresh process with numba's cache in ``cache``; with ``compile_first``,
    ``randsvm-dist compile`` fills that cache first (its wall seconds recorded as
    ``compile_command_seconds``)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    done = {}
    if compile_first:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "randsvm_dist.cli", "compile", "--json"],
                              env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"randsvm-dist compile failed:\n{proc.stderr[-3000:]}")
        done = {"compile_command_seconds": time.perf_counter() - t0,
                "compile_command": json.loads(proc.stdout)}
    proc = subprocess.run([sys.executable, __file__, "--child", learner, "--rows", str(rows),
                           "--parent-pid", str(os.getpid())],
                          env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{learner} fit failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), **done}


def main(argv: list[str] | None = None) -> int:
    """Time each learner's first and warm fits; append them to ``--out``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=500_000, help="RandSVM checkerboard rows")
    p.add_argument("--bsgd-rows", type=int, default=100_000, help="BudgetedSGD sparse rows")
    p.add_argument("--stream-rows", type=int, default=20_000,
                   help="sparse rows of the other streaming learners")
    p.add_argument("--learners", nargs="+", choices=LEARNERS, default=list(LEARNERS))
    p.add_argument("--label", default="", help="free text stored with each line")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--child", choices=LEARNERS, help=argparse.SUPPRESS)
    p.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        if args.parent_pid:
            _exit_with_parent(args.parent_pid)
        print(json.dumps(child(args.child, args.rows)))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for learner in args.learners:
        rows = {"randsvm": args.rows, "bsgd": args.bsgd_rows}.get(learner, args.stream_rows)
        with tempfile.TemporaryDirectory(prefix="numba-first-fit-") as cache:
            first = _run_child(learner, rows, cache)
            warm = _run_child(learner, rows, cache)
        with tempfile.TemporaryDirectory(prefix="numba-compiled-") as cache:
            compiled = _run_child(learner, rows, cache, compile_first=True)
        phases = (("first", first), ("warm", warm), ("after_compile", compiled))
        for phase, rec in phases:
            ratio = rec["fit_wall_seconds"] / max(warm["fit_wall_seconds"], 1e-9)
            line = {"learner": learner, "rows": rows, "phase": phase, **rec,
                    "first_over_warm": first["fit_wall_seconds"] / max(
                        warm["fit_wall_seconds"], 1e-9),
                    "over_warm": ratio, "label": args.label,
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            with open(args.out, "a") as fh:
                fh.write(json.dumps(line) + "\n")
            print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
