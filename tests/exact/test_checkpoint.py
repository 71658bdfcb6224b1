"""Checkpoint and resume of the RandSVM driver: a run interrupted after any iteration and
resumed from its checkpoint ends with exactly the uninterrupted run's model."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist.data import make_arrays, write_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exact.checkpoint import STATE_FILE, Checkpoint
from randsvm_dist.exceptions import ParameterError

PARAMS = {"C": 10.0, "gamma": 1.0, "sample_size": 300, "random_state": 5, "max_iter": 12,
          "route": "sample"}


class Crash(Exception):
    pass


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    X, y = make_arrays("checkerboard", 3000, seed=1)
    return write_arrays(X, y, tmp_path_factory.mktemp("ck") / "d", partitions=3)


@pytest.fixture(scope="module")
def reference(dask_client, data):
    return RandSVMClassifier(**PARAMS, client=dask_client).fit(data)


def _same(a, b):
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert a.stop_reasons_ == b.stop_reasons_ and a.n_iter_ == b.n_iter_


@pytest.mark.parametrize("crash_after", [1, 3])
def test_resumed_equals_uninterrupted(dask_client, data, reference, tmp_path, monkeypatch,
                                      crash_after):
    assert reference.n_iter_ > crash_after + 1  # the crash is mid-fit
    save = Checkpoint.save

    def save_then_crash(self, state):
        save(self, state)
        if state.iteration == crash_after:
            raise Crash(f"killed after iteration {crash_after}")

    monkeypatch.setattr(Checkpoint, "save", save_then_crash)
    with pytest.raises(Crash):
        RandSVMClassifier(**PARAMS, client=dask_client).fit(data, checkpoint=tmp_path)
    monkeypatch.undo()
    assert (tmp_path / STATE_FILE).exists()
    resumed = RandSVMClassifier(**PARAMS, client=dask_client).fit(
        data, checkpoint=tmp_path, resume=True)
    _same(resumed, reference)
    assert [h["iteration"] for h in resumed.history_] == \
        [h["iteration"] for h in reference.history_]


def test_a_checkpoint_of_another_run_is_refused(dask_client, data, tmp_path):
    RandSVMClassifier(**{**PARAMS, "max_iter": 2}, client=dask_client).fit(
        data, checkpoint=tmp_path)
    with pytest.raises(ParameterError, match="checkpoint of another run"):
        RandSVMClassifier(**{**PARAMS, "C": 3.0, "max_iter": 2}, client=dask_client).fit(
            data, checkpoint=tmp_path, resume=True)
