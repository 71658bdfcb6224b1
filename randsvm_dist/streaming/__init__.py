"""One-pass streaming SVM learners (usable alone and as per-partition reducers).

- :class:`StreamSVM`: minimum enclosing ball in the augmented space, with lookahead.
- :class:`BlurredBallSVM`: blurred ball cover of several core sets.
- :class:`BudgetedSGD`: kernel Pegasos on a budget with multi-merge maintenance.
- :class:`OnlineRampSVM`: ramp-loss SVM by CCCP with SMO steps (and its active variant).

``LEARNERS`` (method name -> class) is the one registry of the learners: the CLI's
``stream --method``, the model files and the RandSVM seeding read it. ``MODEL_CLASSES``
(class name -> class) lists every class a saved streaming model may hold.

Nothing here imports Dask; the Dask side is :mod:`randsvm_dist.distributed.streaming`.
"""

from __future__ import annotations

from randsvm_dist.streaming.base import StreamingClassifier
from randsvm_dist.streaming.bsgd.binary import _BinaryBSGD
from randsvm_dist.streaming.bsgd.budgeted_sgd import BudgetedSGD
from randsvm_dist.streaming.meb.blurred_ball import BlurredBallSVM, _BlurredCover
from randsvm_dist.streaming.meb.streamsvm import StreamSVM, _StreamBall
from randsvm_dist.streaming.ramp import OnlineRampSVM, _RampBinary

LEARNERS: dict[str, type[StreamingClassifier]] = {
    "streamsvm": StreamSVM,
    "blurred_ball": BlurredBallSVM,
    "bsgd": BudgetedSGD,
    "ramp": OnlineRampSVM,
}

MODEL_CLASSES: dict[str, type] = {
    **{cls.__name__: cls for cls in LEARNERS.values()},
    **{cls.__name__: cls for cls in (_StreamBall, _BlurredCover, _BinaryBSGD, _RampBinary)},
}

__all__ = ["LEARNERS", "MODEL_CLASSES", "StreamingClassifier", "StreamSVM", "BlurredBallSVM",
           "BudgetedSGD", "OnlineRampSVM"]
