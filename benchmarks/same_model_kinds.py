"""The same model bytes and history on two checkouts for every problem kind and route (a
restructuring's before/after check, issue 37; ``bench_same_model.py`` times the 1e6
checkerboard).

For each tree given, a fresh process with that tree first on ``sys.path`` fits small
synthetic sets on a threaded local cluster (2 workers x 1 thread) and in the client's
process: binary, one-vs-one, one-vs-rest C-SVC, epsilon-SVR and one-class on the sampled
route, the direct route, the in-process route, with duplicates collapsed and with scaling.
It prints, per case, SHA-256 digests of the saved model's LIBSVM section with its support
rows, and of the history without timings. Only the public API is used.

    python benchmarks/same_model_kinds.py TREE_BEFORE TREE_AFTER
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import hashlib, json, os, sys, tempfile, warnings
import numpy as np
from sklearn.datasets import make_classification, make_regression
from distributed import Client
from randsvm_dist import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor

warnings.simplefilter("ignore")
TIMED = ("warm_speedup_estimate", "solve_plan_reason", "scan_worker_rss", "memory_plan")
X2, y2 = make_classification(n_samples=3000, n_features=8, random_state=1)
X3, y3 = make_classification(n_samples=3000, n_features=8, n_classes=3, n_informative=5,
                             random_state=2)
Xr, yr = make_regression(n_samples=3000, n_features=8, noise=5, random_state=3)
X2, X3, Xr = X2.astype(np.float32), X3.astype(np.float32), (Xr / Xr.std()).astype(np.float32)
yr = yr / yr.std()
X2d, y2d = np.vstack([X2, X2[:600]]), np.concatenate([y2, y2[:600]])


def digests(est, path):
    est.save(path)
    body, trailer = open(path, "rb").read().split(b"#randsvm-dist-meta ", 1)
    body += json.dumps(json.loads(trailer.split(b"\n", 1)[0])["support"]).encode()
    hist = [{k: v for k, v in r.items() if "second" not in k and k not in TIMED}
            for r in est.history_]
    return (hashlib.sha256(body).hexdigest()[:16],
            hashlib.sha256(json.dumps(hist, sort_keys=True, default=str).encode()).hexdigest()[:16])


with Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as c, \
        tempfile.TemporaryDirectory() as tmp:
    common = dict(random_state=0, solver="libsvm", gamma=0.2)
    on = dict(client=c, route="sample", sample_size=500, **common)
    cases = {
        "csvc_sample": (RandSVMClassifier(C=1.0, **on), X2, y2),
        "csvc_duplicates_sample": (RandSVMClassifier(C=1.0, **on), X2d, y2d),
        "ovo_sample": (RandSVMClassifier(C=2.0, **on), X3, y3),
        "ovr_sample": (RandSVMClassifier(C=2.0, multi_class="ovr", **on), X3, y3),
        "svr_sample": (RandSVMRegressor(C=1.0, epsilon=0.1, **on), Xr, yr),
        "one_class_sample": (RandSVMOneClass(nu=0.2, **{**on, "sample_size": 800}), X2, None),
        "csvc_scaled_sample": (RandSVMClassifier(C=1.0, scale="minmax", **on), X2, y2),
        "csvc_direct": (RandSVMClassifier(C=1.0, route="direct", client=c, **common), X2, y2),
        "csvc_in_process": (RandSVMClassifier(C=1.0, **common), X2, y2),
        "csvc_duplicates_in_process": (RandSVMClassifier(C=1.0, **common), X2d, y2d),
        "ovo_in_process": (RandSVMClassifier(C=2.0, **common), X3, y3),
        "svr_in_process": (RandSVMRegressor(C=1.0, **common), Xr, yr),
        "one_class_in_process": (RandSVMOneClass(nu=0.2, **common), X2, None),
    }
    for name, (est, X, y) in cases.items():
        est.fit(X, y) if y is not None else est.fit(X)
        print(name, *digests(est, os.path.join(tmp, name)), est.history_[0]["solved_in"],
              est.history_[0]["route"], flush=True)
'''


def main(argv: list[str] | None = None) -> None:
    """Run the fits once per tree and say whether every digest agrees."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", help="checkouts of the repository")
    a = p.parse_args(argv)
    outputs = []
    for tree in a.trees:
        env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
        done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                              text=True, check=True)
        print(f"== {tree}\n{done.stdout}", end="", flush=True)
        outputs.append(done.stdout)
    print("same model bytes and history:", all(o == outputs[0] for o in outputs))


if __name__ == "__main__":
    main()
