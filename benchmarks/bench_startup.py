"""Start-up overhead of CLI commands: wall seconds of each command on small inputs.

Each command runs in a fresh process (``python -m randsvm_dist.cli``) with the package
taken from ``--code`` (a source tree, put first on PYTHONPATH), so two trees (e.g. main
before and after a change) are timed the same way. The inputs are small enough that the
work itself takes about a second; what remains is import, cluster start and stop, and
numba compiling. Timed: ``--help``, an argument error, ``data info``, ``evaluate`` of 20,000
rows, and ``train`` of the 3,000-row a9a sample cold (an empty numba cache: every jitted
function compiles) and warm (the cache the cold run filled). Also timed (issue 40): how
soon a bad path is reported (``evaluate``/``predict`` of a missing model file, ``train
--model`` into a missing directory, a second writer of a ``--model`` whose lock a live
process holds), each exiting with 2; ``--only bad-paths`` times just these, on the embedded
default (no cluster is needed to refuse them). Run it alone on the machine:

    git worktree add /tmp/before e3245da      # the tree before issue 18
    python benchmarks/bench_startup.py --code /tmp/before --label before
    python benchmarks/bench_startup.py --code . --label after --shared
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(code: Path, args: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)
         ) -> float:
    """Wall seconds of one command; it must exit with a code in ``ok``."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "randsvm_dist.cli", *args], env=env,
                          capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode not in ok:
        raise SystemExit(f"{args} failed with {code}:\n{proc.stderr[-2000:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    """Time the commands; print one JSON line per command (median of ``--repeat`` runs)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", type=Path, required=True, help="source tree to import")
    p.add_argument("--label", required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shared", action="store_true",
                   help="also time the commands against one 'cluster start' cluster")
    p.add_argument("--only", choices=["bad-paths"], default=None,
                   help="time only the bad-path reports (see the module docstring)")
    args = p.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
    env.pop("RANDSVM_DIST_SCHEDULER", None)
    work = Path(tempfile.mkdtemp(prefix=f"startup-{args.label}-"))
    train, test, model = work / "train", work / "test", work / "cb.model"
    if args.only == "bad-paths":
        return _bad_paths(args, env, work)
    _run(args.code, ["data", "make", "checkerboard", str(train), "--rows", "2000",
                     "--partitions", "2", "--seed", "1", "--no-progress"], env)
    _run(args.code, ["data", "make", "checkerboard", str(test), "--rows", "20000",
                     "--partitions", "2", "--seed", "2", "--no-progress"], env)
    _run(args.code, ["train", str(train), "--C", "10", "--gamma", "1", "--model", str(model)],
         env)
    a9a = work / "a9a"
    _run(args.code, ["data", "convert", str(Path(__file__).resolve().parents[1] / "tests" /
                                            "data" / "a9a_train_3000.svm.gz"), str(a9a),
                     "--partitions", "2", "--no-progress"], env)
    numba_cache = work / "numba-cache"  # empty: the first train compiles everything
    for kind in ("cold", "warm"):
        t = _run(args.code, ["train", str(a9a), "--C", "1", "--gamma", "0.05", "--model",
                             str(work / f"a9a-{kind}.model")],
                 {**env, "NUMBA_CACHE_DIR": str(numba_cache)})
        print(json.dumps({"label": args.label, "mode": "own cluster",
                          "command": f"train a9a 3,000 rows ({kind} numba cache)",
                          "median_s": round(t, 2), "runs_s": [round(t, 2)]}), flush=True)
    commands = {
        "--help": ["--help"],
        "argument error (train without DATA)": ["train"],
        "data info": ["data", "info", str(train)],
        "evaluate (20,000 rows)": ["evaluate", str(model), str(test)],
        # a new model path each run: an existing output is refused without --overwrite
        "train --test (2,000 + 20,000 rows)": ["train", str(train), "--C", "10", "--gamma",
                                               "1", "--model", str(work / "m2-{run}"),
                                               "--test", str(test)],
    }
    modes = [("own cluster", env)]
    if args.shared:
        state = work / "state"
        senv = {**env, "RANDSVM_DIST_STATE_DIR": str(state)}
        out = subprocess.run([sys.executable, "-m", "randsvm_dist.cli", "cluster", "start"],
                             env=senv, capture_output=True, text=True, check=True).stdout
        address = out.strip().split("=", 1)[1]
        modes.append(("cluster start", {**senv, "RANDSVM_DIST_SCHEDULER": address}))
    try:
        for mode, menv in modes:
            for name, cmd in commands.items():
                times = []
                for i in range(args.repeat):
                    run = [a.format(run=f"{mode[:3]}{i}") for a in cmd]
                    times.append(_run(args.code, run, menv,
                                      ok=(2,) if name.startswith("argument") else (0,)))
                print(json.dumps({"label": args.label, "mode": mode, "command": name,
                                  "median_s": round(statistics.median(times), 2),
                                  "runs_s": [round(t, 2) for t in times]}), flush=True)
    finally:
        if args.shared:
            subprocess.run([sys.executable, "-m", "randsvm_dist.cli", "cluster", "stop"],
                           env=modes[-1][1], capture_output=True)
    return 0


def _bad_paths(args, env: dict[str, str], work: Path) -> int:
    """Time the reports of bad paths (each must exit with 2); one JSON line each."""
    data = work / "data"
    _run(args.code, ["data", "make", "checkerboard", str(data), "--rows", "2000",
                     "--partitions", "2", "--seed", "1", "--no-progress"], env)
    busy = work / "busy.model"
    lock = work / ".busy.model.randsvm-lock"  # held by this (live) process
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                "since": time.time()}))
    commands = {
        "evaluate, missing --model file": ["evaluate", str(work / "nope.model"), str(data)],
        "predict, missing model file": ["predict", str(work / "nope.model"), str(data),
                                        str(work / "pred-{run}")],
        "train --model in a missing directory": ["train", str(data), "--model",
                                                 str(work / "no" / "dir" / "m.model")],
        "train, a second writer of a locked --model": ["train", str(data), "--model",
                                                       str(busy), "--overwrite"],
    }
    for name, cmd in commands.items():
        times = [_run(args.code, [a.format(run=i) for a in cmd], env, ok=(2,))
                 for i in range(args.repeat)]
        print(json.dumps({"label": args.label, "mode": "bad path", "command": name,
                          "median_s": round(statistics.median(times), 2),
                          "runs_s": [round(t, 2) for t in times]}), flush=True)
    lock.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
