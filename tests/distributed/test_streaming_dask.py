"""fit_streaming: per-partition streaming learners tree-merged on Dask, and `stream` CLI.

The distributed result is checked against the same learners fitted and merged here in one
process (an independent reference), against runs pinned to one worker or the other, and
against the geometry of the StreamSVM ball.
"""

from __future__ import annotations

import json
import threading
import time

import dask
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.svm import LinearSVC

from randsvm_dist.app.model_io import load_model
from randsvm_dist.cli import main as cli_main
from randsvm_dist.cli.stream import build_estimator
from randsvm_dist.core.seeds import derive_seed
from randsvm_dist.data import make, make_arrays, write_arrays
from randsvm_dist.distributed.streaming import PARTITION_STREAM, fit_streaming
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError
from randsvm_dist.numerics.kernels import resolve_gamma
from randsvm_dist.streaming import BudgetedSGD, StreamSVM
from randsvm_dist.streaming.meb._balls import ST_NSTORE


@pytest.fixture(scope="module")
def twonorm(tmp_path_factory):
    """4 partitions of twonorm (1,600 rows) and a 2,000-row test set."""
    root = tmp_path_factory.mktemp("reduce")
    ds = make("twonorm", root / "train", rows=1600, partitions=4, seed=1)
    test = make("twonorm", root / "test", rows=2000, partitions=1, seed=2)
    return ds, test


def local_leaves(est, ds, gamma=None):
    """Per-partition learners fitted in this process, seeded as fit_streaming seeds them."""
    leaves = []
    for i in range(ds.n_partitions):
        e = clone(est).set_params(random_state=derive_seed(est.random_state, PARTITION_STREAM, i))
        if gamma is not None:
            e.set_params(gamma=gamma)
        X, y = ds.read_partition(i)
        leaves.append(e.partial_fit(X, y, classes=ds.classes))
    return leaves


def assert_same_model(a, b, X):
    fa, fb = a.decision_function(X), b.decision_function(X)
    # float32 kernel values: BLAS may round differently on a worker and here
    np.testing.assert_allclose(fa, fb, rtol=1e-5, atol=1e-6 * np.abs(fb).max())
    assert a.n_core_ == b.n_core_
    assert a.n_seen_ == b.n_seen_


ESTIMATORS = [
    pytest.param(StreamSVM(kernel="linear", C=1.0, lookahead=5, random_state=3),
                 id="streamsvm-linear"),
    pytest.param(StreamSVM(C=2.0, lookahead=3, kernel="rbf", gamma=0.05, random_state=3),
                 id="streamsvm-rbf"),
    pytest.param(BudgetedSGD(C=1.0, budget=30, gamma="scale", epochs=2, random_state=3),
                 id="bsgd-2-epochs"),  # epochs > 1 draw permutations: seeds matter
]


@pytest.mark.parametrize("est", ESTIMATORS)
def test_tree_equals_local_merges_in_the_same_order(dask_client, twonorm, est):
    ds, test = twonorm
    Xt, _ = test.read_partition(0)
    X_all, _ = ds.to_arrays()
    gamma = None
    if est.get_params().get("gamma") == "scale" and \
            est.get_params().get("kernel", "rbf") != "linear":
        gamma = resolve_gamma("scale", X_all)  # resolved once, on all rows
    m0, m1, m2, m3 = local_leaves(est, ds, gamma)

    tree = fit_streaming(est, ds, client=dask_client, fan_in=2)
    assert_same_model(tree, m0.merge(m1).merge(m2.merge(m3)), Xt)
    assert tree.reduce_info_["depth"] == 2
    assert [lv["nodes"] for lv in tree.reduce_info_["levels"]] == [4, 2, 1]
    assert tree.reduce_info_["rows"] == 1600 == tree.n_seen_
    assert tree.reduce_info_["n_core_"] == tree.n_core_
    if gamma is not None:
        assert tree.reduce_info_["gamma"] == pytest.approx(gamma, rel=1e-9)
        assert tree.gamma_ == pytest.approx(gamma, rel=1e-9)
    # the returned estimator keeps the parameters as given
    assert tree.get_params() == est.get_params()
    assert not hasattr(est, "learners_")  # the input is not fitted

    chain = fit_streaming(est, ds, client=dask_client, fan_in=4)  # one node: a chain
    assert_same_model(chain, m0.merge(m1).merge(m2).merge(m3), Xt)
    assert chain.reduce_info_["depth"] == 1


def test_result_does_not_depend_on_which_worker_ran_what(dask_client, twonorm):
    ds, test = twonorm
    Xt, _ = test.read_partition(0)
    est = StreamSVM(C=1.0, lookahead=4, kernel="rbf", gamma="scale", random_state=5)
    workers = sorted(dask_client.scheduler_info()["workers"])
    assert len(workers) == 2
    models = []
    for w in workers:
        with dask.annotate(workers=[w]):
            m = fit_streaming(est, ds, client=dask_client)
        ran_on = {x for lv in m.reduce_info_["levels"] for x in lv["worker"]}
        assert ran_on == {w}
        models.append(m)
    mixed = fit_streaming(est, ds, client=dask_client)
    assert_same_model(models[0], models[1], Xt)
    assert_same_model(models[0], mixed, Xt)
    assert models[0].radius_ == pytest.approx(models[1].radius_, rel=1e-12)


def true_sq_distances(cover, X, y):
    """|c - p_n|^2 for points p_n = [y phi(x); y; C^-1/2 e_n] of the stream itself.

    ``sq_distances`` treats its points as new (e_n orthogonal to the centre); a point
    that entered the centre with weight a_n is closer by 2 a_n / C.
    """
    d2 = cover.sq_distances(X, y)[:, -1]
    m = int(cover.st[ST_NSTORE])
    weight = {cover.S[s].astype(np.float32).tobytes(): abs(cover.A[0, s]) for s in range(m)}
    a = np.array([weight.get(np.asarray(x, dtype=np.float32).tobytes(), 0.0) for x in X])
    assert np.count_nonzero(a) == np.count_nonzero(cover.A[0, :m])  # every core point found
    return d2 - 2.0 * a * cover.invC


def test_reduced_streamsvm_ball_encloses_every_point(dask_client, tmp_path):
    X, y = make_arrays("clusters2", 240, seed=4)
    ds = write_arrays(X, y, tmp_path / "c2", partitions=4)
    est = StreamSVM(C=1.0, lookahead=4, kernel="rbf", gamma=0.5, random_state=0)
    m = fit_streaming(est, ds, client=dask_client)
    cover = m.learners_[0].flushed()
    yy = np.where(y == m.classes_[1], 1.0, -1.0)
    R = cover.radius()
    assert np.sqrt(true_sq_distances(cover, X, yy).max()) <= R * (1 + 1e-9)
    # the check can fail: the ball of the first partition alone leaves points outside
    first = local_leaves(est, ds)[0].learners_[0].flushed()
    assert np.sqrt(first.sq_distances(X, yy)[:, -1].max()) > first.radius() * (1 + 1e-6)


@pytest.mark.parametrize("est", [StreamSVM(kernel="linear", C=1.0, lookahead=10, random_state=0),
                                 BudgetedSGD(C=1.0, budget=40, random_state=0)],
                         ids=["streamsvm", "bsgd"])
def test_reduced_accuracy_is_close_to_a_single_process_fit(dask_client, twonorm, est):
    ds, test = twonorm
    X, y = ds.to_arrays()
    Xt, yt = test.read_partition(0)
    reduced = fit_streaming(est, ds, client=dask_client).score(Xt, yt)
    single = clone(est).fit(X, y).score(Xt, yt)
    linear = LinearSVC(C=1.0).fit(X, y).score(Xt, yt)  # twonorm is linear: Bayes 97.7%
    assert reduced >= 0.9
    assert reduced >= min(single, linear) - 0.03


def test_multiclass_one_vs_rest(dask_client, tmp_path):
    ds = make("waveform", tmp_path / "wf", rows=1500, partitions=3, seed=1)
    Xt, yt = make_arrays("waveform", 1000, seed=2)
    m = fit_streaming(StreamSVM(kernel="linear", C=1.0, lookahead=10), ds, client=dask_client)
    assert m.classes_.tolist() == [0, 1, 2] and len(m.learners_) == 3
    assert m.score(Xt, yt) > 0.6  # 3 classes, chance 1/3


def test_a_fitted_estimator_is_continued(dask_client, twonorm):
    ds, test = twonorm
    Xt, _ = test.read_partition(0)
    X0, y0 = make_arrays("twonorm", 300, seed=9)
    prior = StreamSVM(kernel="linear", C=1.0, lookahead=5, random_state=1).fit(X0, y0)
    fresh = fit_streaming(StreamSVM(kernel="linear", C=1.0, lookahead=5, random_state=1), ds,
                          client=dask_client)
    cont = fit_streaming(prior, ds, client=dask_client)
    assert cont.n_seen_ == 1900
    assert_same_model(cont, prior.merge(fresh), Xt)
    assert prior.n_seen_ == 300  # unchanged


def test_bad_inputs(dask_client, twonorm, tmp_path):
    ds, _ = twonorm
    with pytest.raises(ParameterError, match="StreamingClassifier.*LinearSVC"):
        fit_streaming(LinearSVC(), ds, client=dask_client)
    with pytest.raises(ParameterError, match="fan_in"):
        fit_streaming(StreamSVM(kernel="linear", lookahead=1), ds, client=dask_client,
                      fan_in=1)
    with pytest.raises(ParameterError, match="random_state"):
        fit_streaming(StreamSVM(random_state=-1), ds, client=dask_client)
    with pytest.raises(DataFormatError, match="Dataset or a Parquet path"):
        fit_streaming(StreamSVM(kernel="linear", lookahead=1), np.zeros((3, 2)),
                      client=dask_client)
    with pytest.raises(DataFormatError, match="not found"):
        fit_streaming(StreamSVM(), tmp_path / "missing", client=dask_client)
    # a fitted estimator and a data set that does not fit it
    X3, y3 = make_arrays("clusters3", 50, seed=0)
    fitted3 = StreamSVM(kernel="linear", lookahead=1).fit(X3, y3)
    with pytest.raises(SchemaError, match="20 features.*expects 3"):
        fit_streaming(fitted3, ds, client=dask_client)
    Xo, yo = make_arrays("twonorm", 50, seed=0)
    other = StreamSVM(kernel="linear", lookahead=1).fit(Xo, np.where(yo > 0, 7, 5))
    with pytest.raises(SchemaError, match=r"labels \[-1, 1\].*classes \[5, 7\]"):
        fit_streaming(other, ds, client=dask_client)
    one = write_arrays(Xo, np.ones(50, dtype=np.int64), tmp_path / "one", partitions=2)
    with pytest.raises(SchemaError, match="one class"):
        fit_streaming(StreamSVM(kernel="linear", lookahead=1), one, client=dask_client)
    with pytest.raises(ParameterError, match="C must be > 0"):
        fit_streaming(StreamSVM(kernel="linear", lookahead=1, C=-1.0), ds, client=dask_client)


def test_stream_command(dask_client, twonorm, tmp_path, capsys):
    ds, test = twonorm
    addr = dask_client.scheduler.address
    model, report = tmp_path / "m.npz", tmp_path / "r.json"
    rc = cli_main(["stream", ds.url, "--method", "bsgd", "--C", "1", "--budget", "25",
                   "--gamma", "0.05", "--scheduler", addr, "--test", test.url,
                   "--model", str(model), "--report", str(report)])
    assert rc == 0
    est = load_model(model)
    assert isinstance(est, BudgetedSGD) and est.n_core_ <= 25 and est.gamma_ == 0.05
    rep = json.loads(report.read_text())
    assert rep["reduce"]["partitions"] == 4 and rep["reduce"]["depth"] == 2
    assert rep["test"]["rows"] == 2000 and rep["test"]["accuracy"] > 0.9
    Xt, yt = test.read_partition(0)
    assert rep["test"]["accuracy"] == pytest.approx(est.score(Xt, yt))
    assert "test accuracy" in capsys.readouterr().out
    # options the method does not take are refused with exit code 2
    assert cli_main(["stream", ds.url, "--method", "streamsvm", "--budget", "5",
                     "--scheduler", addr]) == 2
    assert "does not take --budget" in capsys.readouterr().err
    X3, y3 = make_arrays("clusters3", 40, seed=0)
    small = write_arrays(X3, y3, tmp_path / "three", partitions=1)
    assert cli_main(["stream", ds.url, "--method", "streamsvm", "--test", small.url,
                     "--scheduler", addr]) == 2
    assert "has 3 features; the training set has 20" in capsys.readouterr().err


def test_build_estimator():
    est = build_estimator("blurred_ball", C=2.0, random_state=4, lookahead=3, epsilon=0.2,
                          gamma=None, kernel=None, budget=None)
    assert type(est).__name__ == "BlurredBallSVM"
    assert (est.C, est.lookahead, est.epsilon, est.random_state) == (2.0, 3, 0.2, 4)
    with pytest.raises(ParameterError, match="unknown method"):
        build_estimator("nope")


@pytest.mark.heavy
def test_a_dead_worker_does_not_change_the_result(twonorm):
    from distributed import Client, LocalCluster

    ds, test = twonorm
    Xt, _ = test.read_partition(0)
    est = BudgetedSGD(C=1.0, budget=30, gamma=0.05, random_state=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        reference = fit_streaming(est, ds, client=client)
        result = {}

        def fit():
            result["est"] = fit_streaming(est, ds, client=client)

        thread = threading.Thread(target=fit)
        thread.start()
        time.sleep(reference.reduce_info_["seconds"] / 3)
        victim = next(iter(cluster.workers.values()))
        victim.process.process.kill()  # the nanny restarts it; its tasks are recomputed
        thread.join(timeout=300)
    assert "est" in result
    assert_same_model(result["est"], reference, Xt)


# -- the Dask wrapper (DaskStreamingClassifier) ---------------------------------------------
def test_wrapper_on_a_data_set_is_fit_streaming(dask_client, twonorm):
    from randsvm_dist.distributed.streaming import DaskStreamingClassifier

    ds, test = twonorm
    est = BudgetedSGD(C=1.0, budget=30, gamma=0.05, random_state=3)
    w = DaskStreamingClassifier(est, client=dask_client).fit(ds)
    ref = fit_streaming(est, ds, client=dask_client)
    Xt, yt = test.to_arrays()
    assert_same_model(w.estimator_, ref, Xt)
    assert w.n_core_ == ref.n_core_ and list(w.classes_) == list(ref.classes_)
    assert w.score(test) == pytest.approx(ref.score(Xt, yt))  # on the workers
    with pytest.raises(ParameterError, match="carries its own labels"):
        DaskStreamingClassifier(est, client=dask_client).fit(ds, yt)


def test_wrapper_on_dask_arrays_is_one_pass_over_the_blocks(dask_client, twonorm):
    da = pytest.importorskip("dask.array")
    from randsvm_dist.distributed.streaming import DaskStreamingClassifier

    ds, test = twonorm
    X, y = ds.to_arrays()
    Xt, yt = test.to_arrays()
    w = np.where(y == y.max(), 2.0, 1.0)
    est = StreamSVM(kernel="linear", lookahead=7, random_state=0)
    with dask_client.as_current():
        dX, dy = da.from_array(X, chunks=(333, -1)), da.from_array(y, chunks=333)
        dw = da.from_array(w, chunks=500)
        wrapped = DaskStreamingClassifier(est).fit(dX, dy, sample_weight=dw)
        ref = clone(est).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(wrapped.decision_function(Xt), ref.decision_function(Xt),
                                   rtol=1e-9, atol=1e-12)
        lazy = wrapped.predict(da.from_array(Xt, chunks=(500, -1)))
        assert isinstance(lazy, da.Array)
        np.testing.assert_array_equal(lazy.compute(), ref.predict(Xt))
        assert wrapped.score(da.from_array(Xt, chunks=(500, -1)),
                             da.from_array(yt, chunks=500)) == pytest.approx(ref.score(Xt, yt))


def test_balanced_class_weight_is_resolved_once_for_the_data_set(dask_client, tmp_path):
    X, y = make_arrays("twonorm", 1200, 5)
    y = np.where(np.arange(len(y)) % 5 == 0, 1, -1)  # 20% positives, unevenly spread
    y[:300] = -1
    ds = write_arrays(X, y, tmp_path / "imb", partitions=3)
    est = BudgetedSGD(C=1.0, budget=30, gamma=0.05, class_weight="balanced", random_state=0)
    model = fit_streaming(est, ds, client=dask_client)
    counts = np.bincount((y > 0).astype(int))
    np.testing.assert_allclose(model.class_weight_, len(y) / (2 * counts))
    assert model.get_params()["class_weight"] == "balanced"
