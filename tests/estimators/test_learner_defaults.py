"""Every learner's defaults beat the majority class on the committed real fixtures
(the full table over the shared data sets is benchmarks/bench_defaults.py)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import train_test_split

from randsvm_dist import RandSVMClassifier
from randsvm_dist.streaming import BlurredBallSVM, BudgetedSGD, OnlineRampSVM, StreamSVM

LEARNERS = [StreamSVM(), BlurredBallSVM(), BudgetedSGD(), OnlineRampSVM(),
            OnlineRampSVM(active=True), RandSVMClassifier()]


@pytest.fixture(scope="module")
def fixture_sets(test_data):
    heart, hy = load_svmlight_file(str(test_data / "heart_scale.svm.gz"), n_features=13)
    Xa, Xb, ya, yb = train_test_split(heart.astype(np.float32), hy, test_size=0.3,
                                      stratify=hy, random_state=0)
    a9a, ay = load_svmlight_file(str(test_data / "a9a_train_3000.svm.gz"), n_features=123)
    a9t, at = load_svmlight_file(str(test_data / "a9a_test_1000.svm.gz"), n_features=123)
    return {"heart_scale": (Xa, ya, Xb, yb),
            "a9a_3000": (a9a.astype(np.float32), ay, a9t.astype(np.float32), at)}


@pytest.mark.parametrize("name", ["heart_scale", "a9a_3000"])
@pytest.mark.parametrize("learner", LEARNERS, ids=repr)
def test_defaults_beat_the_majority_class(fixture_sets, current_dask_client, name, learner):
    X, y, Xt, yt = fixture_sets[name]
    values, counts = np.unique(y, return_counts=True)
    majority = np.mean(yt == values[np.argmax(counts)])
    est = clone(learner).fit(X, y)
    acc = est.score(Xt, yt)
    assert acc > majority + 0.02, f"{learner} defaults: {acc:.3f}, majority {majority:.3f}"
