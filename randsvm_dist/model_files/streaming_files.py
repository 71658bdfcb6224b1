"""Streaming learners as model files: one ``.npz`` each, without pickle.

The file holds a versioned JSON header (``header``) and the arrays it refers to
(``core.packing``), read with ``allow_pickle=False``. Only the classes of this package
allow-listed here are rebuilt; nothing in a file names code to run.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from randsvm_dist.core.packing import pack_objects, unpack_objects
from randsvm_dist.exceptions import DataFormatError

__all__ = ["STREAM_FORMAT", "STREAM_VERSION", "is_streaming_model", "load_streaming_model",
           "streaming_model_bytes"]

STREAM_FORMAT = "randsvm-dist-stream"
STREAM_VERSION = 1


def _streaming_classes() -> dict[str, type]:
    """The classes a streaming model file may rebuild, by name."""
    # imported here: the learners import scikit-learn, which checking a path needs not
    import randsvm_dist.streaming as streaming
    from randsvm_dist.numerics.kernels import Kernel
    from randsvm_dist.streaming import ramp
    from randsvm_dist.streaming.meb import blurred_ball, streamsvm

    out = {c.__name__: c for c in (Kernel, blurred_ball._BlurredCover, streaming._BinaryBSGD,
                                   ramp._RampBinary, streamsvm._StreamBall)}
    for name in streaming.__all__:
        cls = getattr(streaming, name)
        if isinstance(cls, type) and issubclass(cls, streaming.StreamingClassifier):
            out[name] = cls
    return out


def streaming_model_bytes(model) -> bytes:
    """The .npz bytes of a fitted streaming learner.

    Args:
        model: a fitted streaming learner of this package (compacted here: the file holds
            what prediction needs, not the working state).

    Returns:
        the file's bytes.

    Raises:
        NotFittedError: not fitted; DataFormatError: not a streaming learner of this
            package, or an attribute of a type not storable.
    """
    model._check_fitted()
    model.compact()
    classes = _streaming_classes()
    if type(model).__name__ not in classes:
        raise DataFormatError(f"cannot save a {type(model).__name__}: not a model kind of "
                              "randsvm-dist")
    return pack_objects(model, classes, STREAM_FORMAT, STREAM_VERSION)


def load_streaming_model(data: bytes, where: str):
    """Rebuild a streaming learner from the bytes of its .npz file.

    Args:
        data: the file's bytes.
        where: the file's name, for error messages.

    Returns:
        the fitted streaming learner.

    Raises:
        DataFormatError: truncated, corrupt, another format or version, or a class that is
            not allow-listed.
    """
    return unpack_objects(data, _streaming_classes(), STREAM_FORMAT, STREAM_VERSION,
                          where)[0]


def is_streaming_model(data: bytes) -> bool:
    """True when ``data`` is an .npz with a header, as :func:`streaming_model_bytes` writes."""
    if not data.startswith(b"PK"):
        return False
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return "header" in z.files
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return False
