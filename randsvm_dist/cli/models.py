"""Loading a saved model of any kind for ``predict`` and ``evaluate``."""

from __future__ import annotations


def load_model(path: str):
    """A saved model: a LIBSVM model file (with or without our meta file) or a joblib file
    of a streaming learner (``randsvm-dist stream --model``).

    Args:
        path: the model file.

    Returns:
        the fitted estimator.

    Raises:
        OSError: the file cannot be read.
    """
    from ..estimators import RandSVMClassifier

    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith((b"svm_type", b"{")):
        return RandSVMClassifier.load(path)
    import joblib

    return joblib.load(path)
