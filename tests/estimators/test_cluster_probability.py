"""Probabilities of data on the workers (``estimators.calibration``): the 5 folds' fits as
the problems of one run, each started from the full fit's solution; the same for any
worker layout; the same as the folds fitted one after another; small data works."""

from __future__ import annotations

import functools
import warnings

import dask.array as da
import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier
from randsvm_dist.data import make_arrays
from randsvm_dist.estimators import calibration


def _fit(client, X, y, chunks: int, **kw) -> RandSVMClassifier:
    Xd, yd = da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandSVMClassifier(**{"C": 1, "probability": True, "client": client,
                                    "random_state": 0, **kw}).fit(Xd, yd)


@pytest.fixture(scope="module")
def waveform():
    return make_arrays("waveform", 3000, seed=2)


def test_folds_are_one_run_started_from_the_full_solution(dask_client, waveform,
                                                         monkeypatch):
    runs = []
    original = calibration.run_randsvm

    def recorded(client, parts, problems, cfg, **kw):
        runs.append([p.model.n_support for p in problems])
        finals, history = original(client, parts, problems, cfg, **kw)
        runs[-1] = (runs[-1], finals, history)
        return finals, history

    monkeypatch.setattr(calibration, "run_randsvm", recorded)
    est = _fit(dask_client, *waveform, chunks=1000, route="sample")  # 3000 rows: else direct
    assert est.probability_method_ == "cv5"
    (start, finals, history), = runs  # one run: 5 folds x 3 pairs at once
    assert len(finals) == 5 * 3
    assert min(start) > 0  # each fold begins with the full model's SVs outside it
    assert all(p.stop_reason in ("gap_tol", "optimal") for p in finals)  # certified
    assert all(p.relative_gap <= est.gap_tol for p in finals)
    assert all(h["warm_start"] for h in history if h["iteration"] == 1)  # warm from it


def test_same_probabilities_whatever_the_layout(dask_client, waveform):
    a = _fit(dask_client, *waveform, chunks=1000)
    b = _fit(dask_client, *waveform, chunks=700)
    np.testing.assert_allclose(a.probA_, b.probA_, rtol=1e-6)
    np.testing.assert_allclose(a.probB_, b.probB_, rtol=1e-6, atol=1e-9)
    c = _fit(dask_client, *waveform, chunks=1000, random_state=1)
    assert not np.allclose(a.probB_, c.probB_, rtol=1e-6)  # another seed: other folds


def test_concurrent_folds_equal_sequential_folds(dask_client, waveform, monkeypatch):
    X, y = waveform
    at_once = _fit(dask_client, X, y, chunks=1000)
    monkeypatch.setattr(calibration, "fit_sigmoids",
                        functools.partial(calibration.fit_sigmoids, concurrent=False))
    one_by_one = _fit(dask_client, X, y, chunks=1000)
    # each fold's fit certified to gap_tol=1e-3 in both: the sigmoids agree closely
    np.testing.assert_allclose(at_once.probA_, one_by_one.probA_, rtol=1e-2)
    np.testing.assert_allclose(at_once.probB_, one_by_one.probB_, atol=1e-2)
    Xt, _ = make_arrays("waveform", 500, seed=9)
    assert np.abs(at_once.predict_proba(Xt) - one_by_one.predict_proba(Xt)).max() < 5e-3


def test_small_data_on_the_workers_always_works(dask_client):
    X = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]], np.float64)
    y = np.array([1, 1, 1, 2, 2, 2])
    est = _fit(dask_client, X, y, chunks=3)
    assert est.probability_method_ == "cv5"
    p = est.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert (p.argmax(1) == y - 1).all()


def _record(n_sv, solve, scan):
    return [{"iteration": i + 1, "n_support": n, "solve_seconds": a, "scan_seconds": b}
            for i, (n, a, b) in enumerate(zip(n_sv, solve, scan))]


def test_holdout_share_keeps_enough_rows_of_each_class():
    assert calibration.holdout_share(np.array([500_000, 500_000])) == pytest.approx(0.05)
    # the smaller class decides: 5,000 of its 40,000 rows
    assert calibration.holdout_share(np.array([960_000, 40_000])) == pytest.approx(0.125)
    assert calibration.holdout_share(np.array([10**8, 10**8])) == pytest.approx(2.5e-4)
    assert calibration.holdout_share(np.array([1000, 1000])) == 0.2  # at most a fold's
    folds = calibration.Folds("holdout", 0.05)
    keys = np.array([0.0, 0.049, 0.05, 0.5, 0.99])
    assert folds.ids(keys).tolist() == [0, 0, 1, 1, 1]  # fold 0 held out, fitted on 1
    assert calibration.Folds().ids(keys).tolist() == [0, 0, 0, 2, 4]


def test_holdout_only_when_the_folds_cost_far_more(dask_client, waveform, monkeypatch):
    counts = np.array([500_000, 500_000])
    # support vectors all in by the last iteration but one, cheap solves: the folds'
    # warm start is as near as the hold-out's
    quick = _record([5000, 9900, 10000], [1, 1, 1], [10, 10, 10])
    # a slow approach to the optimum with dear solves: the folds go back further
    slow = _record([2000, 6000, 7000, 9000, 9700, 10000], [5] * 6, [10] * 6)
    assert calibration.fold_cost_ratio(quick, 0.05) < calibration.HOLDOUT_FACTOR
    assert calibration.choose_folds(10**6, counts, quick).method == "cv5"
    assert calibration.fold_cost_ratio(slow, 0.05) > calibration.HOLDOUT_FACTOR
    chosen = calibration.choose_folds(10**6, counts, slow)
    assert (chosen.method, chosen.share) == ("holdout", pytest.approx(0.05))
    assert calibration.choose_folds(calibration.CV_MAX_ROWS, counts, slow).method == "cv5"
    cv5 = _fit(dask_client, *waveform, chunks=1000)
    monkeypatch.setattr(calibration, "fit_sigmoids",
                        functools.partial(calibration.fit_sigmoids, method="holdout"))
    holdout = _fit(dask_client, *waveform, chunks=1000)
    assert holdout.probability_method_ == "holdout"
    Xt, _ = make_arrays("waveform", 500, seed=9)
    # one fifth of the values: the same calibration up to a few hundredths
    assert np.abs(cv5.predict_proba(Xt) - holdout.predict_proba(Xt)).max() < 0.1
