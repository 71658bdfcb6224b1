"""Grid search: folds, equality with a serial loop of LIBSVM cross-validations, resuming,
the RandSVM path, outputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.app.grid_folds import assign_folds, distributed_folds, libsvm_options
from randsvm_dist.app.grid_search import GridSearch
from randsvm_dist.app.grid_space import exponent_range, fine_grid, parse_exponent_range
from randsvm_dist.data import Dataset, make_arrays, write_arrays
from randsvm_dist.engine.inputs import load_partitions
from randsvm_dist.exceptions import DataFormatError, ParameterError

GRID = dict(log2C=(-1, 5, 3), log2gamma=(1, -5, -3), n_folds=3, refine=False)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    X, y = make_arrays("ringnorm", 240, seed=3)
    y = np.where(y > 0, 7, 2)  # labels other than -1/+1
    y[:30] = 2  # unbalanced classes
    root = tmp_path_factory.mktemp("grid")
    for p in (1, 3, 5):
        write_arrays(X, y, root / f"p{p}", partitions=p)
    return X, y, root


def test_exponent_ranges_follow_grid_py():
    assert exponent_range(-5, 15, 2) == [-5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15]
    assert exponent_range(3, -15, -2)[-1] == -15 and len(exponent_range(3, -15, -2)) == 10
    assert parse_exponent_range("2^-5..2^15") == (-5, 15, 2)
    assert parse_exponent_range("2^3..2^-15") == (3, -15, -2)
    assert parse_exponent_range("2^1..2^5:0.25") == (1, 5, 0.25)
    assert parse_exponent_range("-5,15,2") == (-5, 15, 2)
    with pytest.raises(ParameterError, match="2\\^A..2\\^B"):
        parse_exponent_range("1e-3..10")
    c, g = fine_grid((3.0, -5.0), (2.0, -2.0), 0.25)
    assert c[0] == 1 and c[-1] == 5 and len(c) == 17 and g[0] == -7 and g[-1] == -3


def test_folds_are_stratified_and_seeded():
    cls = np.r_[np.zeros(103, int), np.ones(47, int)]
    f = assign_folds(cls, 5, 0)
    for c in (0, 1):
        counts = np.bincount(f[cls == c], minlength=5)
        assert counts.max() - counts.min() <= 1
    assert not np.array_equal(f, assign_folds(cls, 5, 1))
    np.testing.assert_array_equal(f, assign_folds(cls, 5, 0))
    # not a fixed pattern: the within-block order varies
    assert len({tuple(f[cls == 0][i:i + 5]) for i in range(0, 100, 5)}) > 5


def test_same_folds_whatever_the_partitioning(dask_client, small):
    X, y, root = small
    ref = None
    for p in (1, 3, 5):
        parts, classes = load_partitions(dask_client, Dataset.open(root / f"p{p}"))
        folds, sizes = distributed_folds(dask_client, parts, len(classes), 4, 11)
        got = np.concatenate(dask_client.gather(folds))
        assert sizes.sum() == len(y)
        if ref is None:
            ref = got
            np.testing.assert_array_equal(got, assign_folds(np.searchsorted(classes, y), 4, 11))
        np.testing.assert_array_equal(got, ref)


def _serial_libsvm_cv(X, y, folds, k, C, gamma):
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train

    Xc = sp.csr_matrix(X.astype(np.float32), dtype=np.float64)
    correct = 0
    for f in range(k):
        tr, te = folds != f, folds == f
        m = svm_train(svm_problem(y[tr].astype(float), Xc[tr]),
                      svm_parameter(libsvm_options(C, gamma, 1e-3, 200.0)))
        pred, _, _ = svm_predict(y[te].astype(float), Xc[te], m, "-q")
        correct += int((np.asarray(pred) == y[te]).sum())
    return correct / len(y)


def test_grid_equals_a_serial_loop_of_libsvm_cross_validations(dask_client, small, tmp_path):
    X, y, root = small
    gs = GridSearch(**GRID, random_state=5, client=dask_client,
                    results=tmp_path / "folds.csv").fit(str(root / "p3"))
    classes = np.unique(y)
    folds = assign_folds(np.searchsorted(classes, y), 3, 5)
    assert len(gs.points_) == 9
    for p in gs.points_:
        assert p["solver"] == "libsvm"
        expected = _serial_libsvm_cv(X, np.searchsorted(classes, y), folds, 3, p["C"],
                                     p["gamma"])
        assert p["mean_accuracy"] == expected, p
    best = max(gs.points_, key=lambda p: (p["mean_accuracy"], -p["log2C"], -p["log2gamma"]))
    assert gs.best_params_ == {"C": best["C"], "gamma": best["gamma"]}
    # a rerun with the same results file recomputes nothing and agrees
    again = GridSearch(**GRID, random_state=5, client=dask_client,
                       results=tmp_path / "folds.csv")
    assert len(again._read_results()) == 27
    again.fit(str(root / "p3"))
    assert again.points_ == gs.points_
    with pytest.raises(DataFormatError, match="another search"):  # other files: not reused
        GridSearch(**GRID, random_state=5, client=dask_client,
                   results=tmp_path / "folds.csv").fit(str(root / "p5"))
    with pytest.raises(DataFormatError, match="random_state=5"):
        GridSearch(**GRID, random_state=6, client=dask_client,
                   results=tmp_path / "folds.csv").fit(str(root / "p3"))
    # outputs
    gs.write_points(tmp_path / "points.csv")
    assert (tmp_path / "points.csv").read_text().count("\n") == 10
    gs.plot(tmp_path / "grid.png")
    assert (tmp_path / "grid.png").read_bytes()[:4] == b"\x89PNG"


def test_refine_and_refit_with_scaling(dask_client, tmp_path):
    from randsvm_dist.estimators import RandSVMClassifier

    X, y = make_arrays("twonorm", 200, seed=8)
    X = X * 300 + 1000  # unscaled: the scaling inside the search matters
    gs = GridSearch(log2C=(-1, 3, 4), log2gamma=(-3, -7, -4), n_folds=2, fine_step=2,
                    scale="minmax", client=dask_client)
    gs.fit(X, y)
    coarse = {(c, g) for c in (-1, 3) for g in (-3, -7)}
    pairs = {(p["log2C"], p["log2gamma"]) for p in gs.points_}
    top = max((p for p in gs.points_ if (p["log2C"], p["log2gamma"]) in coarse),
              key=lambda p: (p["mean_accuracy"], -p["log2C"], -p["log2gamma"]))
    fc, fg = fine_grid((top["log2C"], top["log2gamma"]), (4, -4), 2)
    assert len(fc) == len(fg) == 5
    assert pairs == coarse | {(c, g) for c in fc for g in fg}
    assert gs.best_score_ > 0.9
    est = gs.refit(X, y, model_path=tmp_path / "best.model")
    assert est.scaler_ is not None and est.score(X, y) > 0.9
    back = RandSVMClassifier.load(tmp_path / "best.model")
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_randsvm_path_finds_libsvm_accuracies(dask_client, small):
    _, _, root = small
    grid = dict(log2C=(1, 1, 1), log2gamma=(-3, -3, -1), n_folds=3, refine=False,
                random_state=2, client=dask_client)
    lib = GridSearch(**grid, solver="libsvm").fit(str(root / "p3"))
    rand = GridSearch(**grid, solver="randsvm", gap_tol=0.0).fit(str(root / "p3"))
    assert rand.points_[0]["solver"] == "randsvm"
    assert abs(rand.best_score_ - lib.best_score_) <= 2 / 240


def test_auto_solver_switches_by_training_rows(dask_client, small):
    _, _, root = small
    gs = GridSearch(log2C=(0, 0, 1), log2gamma=(-3, -3, -1), n_folds=3, refine=False,
                    libsvm_max_rows=100, client=dask_client).fit(str(root / "p3"))
    assert gs.points_[0]["solver"] == "randsvm"  # 160 training rows > 100


def test_a_killed_worker_loses_no_finished_point(small, tmp_path):
    from distributed import Client, LocalCluster

    _, _, root = small
    grid = dict(log2C=(-1, 5, 2), log2gamma=(1, -5, -2), n_folds=3, refine=False,
                random_state=1)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        ref = GridSearch(**grid, client=client).fit(str(root / "p3"))
        import logging
        import os
        import signal

        pids = client.run(os.getpid)
        victim = next(iter(pids.values()))
        killed: list = []

        class KillOnce(logging.Handler):
            def emit(self, record):
                if record.getMessage().startswith("fold ") and not killed:
                    killed.append(victim)
                    os.kill(victim, signal.SIGKILL)  # the worker process dies outright

        h = KillOnce()
        logger = logging.getLogger("randsvm_dist")
        level = logger.level
        logger.addHandler(h)
        logger.setLevel(logging.DEBUG)
        try:
            got = GridSearch(**grid, client=client, results=tmp_path / "r.csv").fit(
                str(root / "p3"))
        finally:
            logger.removeHandler(h)
            logger.setLevel(level)
        assert killed and victim not in client.run(os.getpid).values()
    assert got.points_ == [dict(p, seconds=q["seconds"]) for p, q in
                           zip(ref.points_, got.points_)]
    assert (tmp_path / "r.csv").read_text().count("\n") == 1 + 16 * 3


def test_random_state_none_draws_fresh_recorded_folds(dask_client, small):
    _, _, root = small
    grid = dict(log2C=(1, 1, 1), log2gamma=(-3, -3, -1), n_folds=3, refine=False,
                client=dask_client)
    a = GridSearch(**grid, random_state=None).fit(str(root / "p3"))
    b = GridSearch(**grid, random_state=None).fit(str(root / "p3"))
    assert a.random_seed_ != b.random_seed_  # fresh randomness, as in sklearn
    again = GridSearch(**grid, random_state=a.random_seed_).fit(str(root / "p3"))
    def accuracies(gs):
        return [(p["log2C"], p["log2gamma"], p["mean_accuracy"], p["std_accuracy"])
                for p in gs.points_]

    assert accuracies(again) == accuracies(a)  # the recorded seed reproduces the search


# -- the SVM family: epsilon-SVR and one-class through the same search -----------------------
@pytest.fixture(scope="module")
def family(tmp_path_factory):
    from randsvm_dist.data import make

    root = tmp_path_factory.mktemp("family")
    make("friedman1", root / "fr", rows=300, partitions=3, seed=4, noise=0.5)
    make("blobs_with_outliers", root / "bl", rows=400, partitions=2, seed=4,
         outlier_fraction=0.1)
    return root


FAMILY_GRID = dict(log2gamma=(1, -5, -3), n_folds=3, refine=False, random_state=5)


def _serial_cv(X, y, folds, options, score):
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train

    Xc = sp.csr_matrix(X.astype(np.float32), dtype=np.float64)
    out = []
    for f in range(3):
        tr, te = folds != f, folds == f
        m = svm_train(svm_problem(y[tr].astype(float), Xc[tr]), svm_parameter(options))
        pred, _, dec = svm_predict(y[te].astype(float), Xc[te], m, "-q")
        out.append(score(y[te], np.asarray(pred), np.asarray(dec)[:, 0], te.sum()))
    return out


@pytest.mark.parametrize("scoring", ["rmse", "r2"])
def test_regression_grid_equals_a_serial_loop_of_libsvm_svr(dask_client, family, scoring):
    from sklearn.metrics import r2_score

    ds = Dataset.open(family / "fr")
    X, y = ds.to_arrays()
    gs = GridSearch(**FAMILY_GRID, log2C=(0, 4, 4), estimator="epsilon_svr", epsilon=0.5,
                    scoring=scoring, client=dask_client).fit(ds)
    folds = assign_folds(np.zeros(len(y), int), 3, 5)   # not stratified
    assert len(gs.points_) == 6 and gs.scoring_.name == scoring
    for p in gs.points_:
        opts = libsvm_options(p["C"], p["gamma"], 1e-3, 200.0, "epsilon_svr", 0.5)
        if scoring == "rmse":
            sse = _serial_cv(X, y, folds, opts, lambda t, pr, d, n: ((t - pr) ** 2).sum())
            assert p["mean_score"] == pytest.approx(np.sqrt(sum(sse) / len(y)), rel=1e-9)
        else:
            r2 = _serial_cv(X, y, folds, opts, lambda t, pr, d, n: r2_score(t, pr))
            assert p["mean_score"] == pytest.approx(np.mean(r2), rel=1e-9)
    pick = min if scoring == "rmse" else max
    best = pick(gs.points_, key=lambda p: p["mean_score"])
    assert gs.best_params_ == {"C": best["C"], "gamma": best["gamma"]}
    est = gs.refit(ds)
    assert type(est).__name__ == "RandSVMRegressor" and est.epsilon == 0.5
    assert est.C == best["C"] and est.certified_


def test_regression_grid_randsvm_folds_agree_with_libsvm(dask_client, family, tmp_path):
    ds = Dataset.open(family / "fr")
    grid = dict(FAMILY_GRID, log2C=(2, 2, 1), log2gamma=(-1, -1, -1), estimator="epsilon_svr",
                epsilon=0.5, tol=1e-5)
    lib = GridSearch(**grid, solver="libsvm", client=dask_client).fit(ds)
    rand = GridSearch(**grid, solver="randsvm", gap_tol=0.0, client=dask_client,
                      results=tmp_path / "f.csv").fit(ds)
    assert rand.points_[0]["solver"] == "randsvm"
    assert rand.best_score_ == pytest.approx(lib.best_score_, rel=1e-3)
    gs2 = GridSearch(**grid, solver="randsvm", gap_tol=0.0, client=dask_client,
                     results=tmp_path / "f.csv")
    assert len(gs2._read_results()) == 3   # the fold CSV resumes for every scoring


def test_one_class_grid_is_scored_by_auc(dask_client, family, tmp_path):
    from sklearn.metrics import roc_auc_score

    ds = Dataset.open(family / "bl")
    X, y = ds.to_arrays()
    gs = GridSearch(**FAMILY_GRID, log2nu=(-4, -2, 2), estimator="one_class",
                    client=dask_client).fit(ds)
    assert gs.scoring_.name == "auc" and set(gs.best_params_) == {"nu", "gamma"}
    classes = np.unique(y)
    folds = assign_folds(np.searchsorted(classes, y), 3, 5)   # stratified by label
    for p in gs.points_:
        opts = libsvm_options(p["nu"], p["gamma"], 1e-3, 200.0, "one_class")
        aucs = _serial_cv(X, y, folds, opts, lambda t, pr, d, n: roc_auc_score(t == 1, d))
        assert p["mean_score"] == pytest.approx(np.mean(aucs), rel=1e-9)
    assert gs.best_score_ > 0.9
    gs.write_points(tmp_path / "points.csv")
    assert "nu" in (tmp_path / "points.csv").read_text().splitlines()[0]
    gs.plot(tmp_path / "grid.png")
    est = gs.refit(ds)
    assert type(est).__name__ == "RandSVMOneClass" and est.nu == gs.best_params_["nu"]
    rand = GridSearch(**dict(FAMILY_GRID, log2gamma=(-1, -1, -1)), log2nu=(-3, -3, 1),
                      estimator="one_class", solver="randsvm", gap_tol=0.0, tol=1e-5,
                      client=dask_client).fit(ds)
    lib = GridSearch(**dict(FAMILY_GRID, log2gamma=(-1, -1, -1)), log2nu=(-3, -3, 1),
                     estimator="one_class", solver="libsvm", tol=1e-5,
                     client=dask_client).fit(ds)
    assert rand.best_score_ == pytest.approx(lib.best_score_, abs=2e-3)


def test_family_grid_refuses_what_cannot_be_scored(dask_client, family):
    with pytest.raises(ParameterError, match="does not apply"):
        GridSearch(**FAMILY_GRID, estimator="epsilon_svr", scoring="auc",
                   client=dask_client).fit(str(family / "fr"))
    with pytest.raises(ParameterError, match="normal label 5"):
        GridSearch(**FAMILY_GRID, estimator="one_class", normal_label=5,
                   client=dask_client).fit(str(family / "bl"))
    X = np.random.default_rng(0).normal(size=(60, 2))
    with pytest.raises(ParameterError, match="needs labels"):
        GridSearch(**FAMILY_GRID, estimator="one_class", client=dask_client).fit(
            X, np.ones(60))
    with pytest.raises(ParameterError, match="estimator must be"):
        GridSearch(estimator="nu_svr").fit(X, np.ones(60))


def test_grid_command_for_svr_and_one_class(dask_client, family, tmp_path, capsys):
    import json

    from randsvm_dist.cli import main

    sched = ["--scheduler", dask_client.scheduler.address]
    assert main(["grid", str(family / "fr"), "--svm-type", "epsilon_svr", "--epsilon", "0.5",
                 "--scoring", "r2", "--C", "2^0..2^4:4", "--gamma", "2^-1..2^-3:2",
                 "--folds", "3", "--no-refine", "--out", str(tmp_path / "g1"), "--model",
                 str(tmp_path / "svr.model"), "--json", *sched]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scoring"] == "r2" and set(out["best"]) == {"C", "gamma"} and out["cv_score"] > 0
    from randsvm_dist.estimators import RandSVMOneClass, RandSVMRegressor

    assert RandSVMRegressor.load(tmp_path / "svr.model").epsilon == 0.5
    assert main(["grid", str(family / "bl"), "--svm-type", "one_class", "--nu",
                 "2^-4..2^-2:2", "--gamma", "2^-1..2^-1", "--folds", "3", "--no-refine",
                 "--normal-label", "1", "--out", str(tmp_path / "g2"), "--model",
                 str(tmp_path / "oc.model"), *sched]) == 0
    text = capsys.readouterr().out
    assert "best nu=" in text and "auc" in text
    assert isinstance(RandSVMOneClass.load(tmp_path / "oc.model"), RandSVMOneClass)
    assert (tmp_path / "g2" / "grid.png").exists()
