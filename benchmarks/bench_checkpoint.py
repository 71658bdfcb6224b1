"""Checkpoint overhead of the RandSVM driver, and what a resume saves over a restart.

    python benchmarks/bench_checkpoint.py --rows 1000000

On a checkerboard of ``--rows`` rows (Parquet, 8 partitions) with a fixed number of
iterations (``--iters``, route 'sample'):

1. a fit without checkpoint and one with ``checkpoint=``: per-iteration checkpoint bytes
   and seconds (measured inside ``Checkpoint.save``) and the difference in fit time;
2. the same fit "killed" right after iteration ``--iters - 1`` was saved, then resumed
   (``resume=True``): the resumed run's time against a full restart (the plain fit).

Prints one JSON record.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from randsvm_dist.data import make
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.checkpoint import Checkpoint


class Killed(Exception):
    pass


def main() -> None:
    """Run the measurements and print them as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--sample-size", type=int, default=2000)
    a = ap.parse_args()
    from distributed import Client, LocalCluster

    tmp = tempfile.mkdtemp()
    data = make("checkerboard", f"{tmp}/train", rows=a.rows, partitions=8, seed=1)
    params = {"C": 10.0, "gamma": 1.0, "sample_size": a.sample_size, "max_iter": a.iters,
              "gap_tol": 0.0, "route": "sample", "random_state": 0}
    saves = []
    save = Checkpoint.save

    def measured_save(self, state):
        save(self, state)
        saves.append({"iteration": state.iteration, "bytes": self.last_bytes,
                      "seconds": self.last_seconds})
        if kill_after is not None and state.iteration == kill_after:
            raise Killed

    Checkpoint.save = measured_save
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        kill_after = None
        RandSVMClassifier(**{**params, "max_iter": 1}, client=client).fit(data)  # warm-up
        t0 = time.perf_counter()
        plain = RandSVMClassifier(**params, client=client).fit(data)
        t_plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        RandSVMClassifier(**params, client=client).fit(data, checkpoint=f"{tmp}/ck1")
        t_ckpt = time.perf_counter() - t0
        per_iter = list(saves)
        kill_after = a.iters - 1
        try:
            RandSVMClassifier(**params, client=client).fit(data, checkpoint=f"{tmp}/ck2")
        except Killed:
            pass
        kill_after = None
        t0 = time.perf_counter()
        resumed = RandSVMClassifier(**params, client=client).fit(
            data, checkpoint=f"{tmp}/ck2", resume=True)
        t_resumed = time.perf_counter() - t0
    same = (plain.support_.tolist() == resumed.support_.tolist()
            and plain.dual_coef_.tolist() == resumed.dual_coef_.tolist())
    print(json.dumps({
        "rows": a.rows, "iterations": plain.n_iter_, "sample_size": a.sample_size,
        "n_support": int(len(plain.support_)),
        "checkpoint_per_iteration": per_iter,
        "fit_seconds_plain": round(t_plain, 2), "fit_seconds_checkpointed": round(t_ckpt, 2),
        "resumed_after_iteration": a.iters - 1, "resume_seconds": round(t_resumed, 2),
        "restart_seconds": round(t_plain, 2), "resumed_equals_uninterrupted": same,
    }, indent=1))


if __name__ == "__main__":
    main()
