"""Byte-for-byte comparison of StreamSVM and Blurred Ball SVM between two source trees.

Fits the same configurations in each tree (a fresh process each, with ``PYTHONPATH`` set
to the tree): RBF, linear, poly and sigmoid kernels, lookaheads 1 to 60, one ball or a
cover, Blurred Ball's covers and rules, with and without intercept and normalisation,
binary and 3-class, dense and CSR rows, with and without sample weights, fitted in two
``partial_fit`` batches; then records every learner's state arrays, the decision values
and, for binary problems, the merge of two covers. Prints how many arrays differ (0 when
a change to the compiled kernels kept their arithmetic)::

    python benchmarks/compare_ball_covers.py --reference /work/main
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STATE = ("st", "bb", "Q", "ee", "rr", "BX", "By", "Bf", "Bn", "Biw", "S", "Sn", "Siw", "A",
         "Ks", "W")


def configurations() -> list[tuple[str, dict]]:
    """(learner, parameters) pairs: 's' StreamSVM, 'b' BlurredBallSVM."""
    out = [(cls, dict(kernel=kernel, lookahead=L, C=2.0)) for cls in ("s", "b")
           for kernel in ("rbf", "linear", "poly") for L in (1, 7, 60)]
    return out + [("b", dict(cover="balls", lookahead=9)),
                  ("b", dict(cover="balls", kernel="linear", lookahead=9)),
                  ("b", dict(rule="support", lookahead=9, max_balls=3)),
                  ("b", dict(rule="largest", epsilon=0.0, lookahead=5)),
                  ("s", dict(fit_intercept=False, lookahead=11)),
                  ("s", dict(kernel="sigmoid", lookahead=11, gamma=0.1)),
                  ("s", dict(normalize=True, lookahead=20)),
                  ("b", dict(normalize=False, kernel="linear", lookahead=20))]


def _record(out: dict, key: str, learner) -> None:
    for name in STATE:
        if hasattr(learner, name):
            out[f"{key}_{name}"] = getattr(learner, name)


def _fit_one(out: dict, ci: int, cls: str, kw: dict, classes: int) -> None:
    import scipy.sparse as sp
    from sklearn.datasets import make_classification

    from randsvm_dist.streaming import BlurredBallSVM, StreamSVM

    X, y = make_classification(400, 12, n_informative=6, n_classes=classes, random_state=ci)
    X[np.abs(X) < 0.6] = 0.0
    est_cls = StreamSVM if cls == "s" else BlurredBallSVM
    weights = (None, np.random.default_rng(ci).uniform(0.3, 3.0, len(y)))
    for fmt, Xf in (("dense", X), ("csr", sp.csr_matrix(X))):
        for wi, w in enumerate(weights):
            key = f"{ci}_{classes}_{fmt}_{wi}"
            est = est_cls(random_state=0, **kw)
            est.partial_fit(Xf[:150], y[:150], classes=np.unique(y),
                            sample_weight=None if w is None else w[:150])
            est.partial_fit(Xf[150:], y[150:], sample_weight=None if w is None else w[150:])
            out[key + "_dec"] = est.decision_function(X)
            for li, learner in enumerate(est.learners_):
                _record(out, f"{key}_{li}", learner)
            if classes == 2 and w is None:
                a = est_cls(random_state=0, **kw).fit(Xf[:200], y[:200]).learners_[0]
                b = est_cls(random_state=0, **kw).fit(Xf[200:], y[200:]).learners_[0]
                merged = a.merge(b)
                out[key + "_merge"] = merged.decision_function(X.astype(np.float32))
                _record(out, key + "_merge", merged)


def dump(path: str) -> None:
    """Fit every configuration in this process's tree; save the arrays to ``path``."""
    out: dict[str, np.ndarray] = {}
    for ci, (cls, kw) in enumerate(configurations()):
        for classes in (2, 3):
            _fit_one(out, ci, cls, kw, classes)
    np.savez(path, **out)


def _dump_in(tree: Path, path: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, __file__, "--dump", path], env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    """Compare this tree with ``--reference``; returns 1 if any array differs."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", type=Path, help="the other source tree (e.g. /work/main)")
    p.add_argument("--dump", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.dump:
        dump(args.dump)
        return 0
    if args.reference is None:
        p.error("--reference is required")
    with tempfile.TemporaryDirectory() as tmp:
        ref, new = os.path.join(tmp, "ref.npz"), os.path.join(tmp, "new.npz")
        _dump_in(args.reference, ref)
        _dump_in(ROOT, new)
        a, b = np.load(ref), np.load(new)
        names = set(a.files) | set(b.files)
        differ = sorted(k for k in names if k not in a.files or k not in b.files
                        or a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes())
    print(f"{len(names)} arrays, {len(differ)} differ" + (f": {differ[:20]}" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
