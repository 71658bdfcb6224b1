"""Issue 40 item 13: a fitted BlurredBallSVM keeps what prediction needs (no core-set
kernel matrix, no spare capacity), with the same predictions, merges and continued
learning as the working state gives."""

import numpy as np

from randsvm_dist.model_files.streaming_files import streaming_model_bytes
from randsvm_dist.streaming import BlurredBallSVM, StreamSVM


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = np.where((np.floor(X[:, 0] * 2) + np.floor(X[:, 1] * 2)) % 2 == 0, 1, -1)
    return X, y


def test_fitted_blurred_ball_drops_its_working_matrices():
    X, y = _data()
    work = BlurredBallSVM(lookahead=100, gamma=2.0, random_state=0)
    work.partial_fit(X, y, classes=[-1, 1])  # the working state: not compacted
    cap = work.learners_[0].Ks.shape[0]
    assert cap >= 400  # 4 x lookahead at least
    fitted = BlurredBallSVM(lookahead=100, gamma=2.0, random_state=0).fit(X, y)
    cover = fitted.learners_[0]
    m = cover.S.shape[0]
    assert cover.Ks.size == 0 and m < cap and cover.A.shape[1] == m
    assert cover.BX.shape[0] < 100  # the buffered points only, not the lookahead's room
    np.testing.assert_allclose(fitted.decision_function(X), work.decision_function(X),
                               rtol=1e-9, atol=1e-9)


def test_model_file_smaller_than_working_state():
    X, y = _data()
    import pickle

    work = BlurredBallSVM(lookahead=100, gamma=2.0, random_state=0)
    work.partial_fit(X, y, classes=[-1, 1])
    before = len(pickle.dumps(work))
    work.compact()
    after = len(pickle.dumps(work))
    assert after < before / 4, (before, after)
    assert len(streaming_model_bytes(work)) < before / 4


def test_learning_goes_on_after_compaction_as_without():
    X, y = _data(4000, seed=1)
    a = BlurredBallSVM(lookahead=100, gamma=2.0, random_state=0)
    b = BlurredBallSVM(lookahead=100, gamma=2.0, random_state=0)
    a.partial_fit(X[:2000], y[:2000], classes=[-1, 1])
    b.partial_fit(X[:2000], y[:2000], classes=[-1, 1])
    b.compact()
    a.partial_fit(X[2000:], y[2000:])
    b.partial_fit(X[2000:], y[2000:])
    np.testing.assert_allclose(b.decision_function(X), a.decision_function(X), rtol=1e-9,
                               atol=1e-9)


def test_merge_of_compacted_learners_as_without():
    X, y = _data(4000, seed=2)
    for cls in (BlurredBallSVM, StreamSVM):
        parts = [cls(lookahead=100, gamma=2.0, random_state=0).partial_fit(
            X[s:s + 2000], y[s:s + 2000], classes=[-1, 1]) for s in (0, 2000)]
        raw = [lr.learners_[0].merge(r.learners_[0]) for lr, r in [tuple(parts)]][0]
        merged = parts[0].merge(parts[1])  # merge compacts its inputs' copies and result
        assert getattr(merged.learners_[0], "compacted", False)
        np.testing.assert_allclose(merged.learners_[0].decision_function(X),
                                   raw.decision_function(X), rtol=1e-9, atol=1e-9)
        compacted = [p.compact() for p in parts]
        again = compacted[0].merge(compacted[1])
        np.testing.assert_allclose(again.decision_function(X), merged.decision_function(X),
                                   rtol=1e-9, atol=1e-9)
