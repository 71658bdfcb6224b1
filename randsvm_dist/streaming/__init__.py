"""One-pass streaming SVM learners (usable alone and as per-partition reducers).

- :class:`StreamSVM`: minimum enclosing ball in the augmented space, with lookahead.
- :class:`BlurredBallSVM`: blurred ball cover of several core sets.
- :class:`BudgetedSGD`: kernel Pegasos on a budget with multi-merge maintenance.
- :class:`OnlineRampSVM`: ramp-loss SVM by CCCP with SMO steps (and its active variant).
"""

from __future__ import annotations

import importlib

from randsvm_dist.streaming.base import StreamingClassifier

_LEARNERS = {
    "StreamSVM": ".streamsvm",
    "BlurredBallSVM": ".blurred_ball",
    "BudgetedSGD": ".bsgd",
    "OnlineRampSVM": ".ramp",
}

__all__ = ["StreamingClassifier", *_LEARNERS]


def __getattr__(name: str):
    if name in _LEARNERS:
        return getattr(importlib.import_module(_LEARNERS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
