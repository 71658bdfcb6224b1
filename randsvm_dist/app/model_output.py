"""Writing a fitted model as a command's output: the model file and its range file, each
published in one step (see :func:`randsvm_dist.data.publish.publish_file`)."""

from __future__ import annotations

import os
from pathlib import Path


def save_model_file(model, path: str | os.PathLike, *, overwrite: bool) -> None:
    """Publish a fitted model (LIBSVM text or .npz) and, for a model trained with scaling,
    its svm-scale range file ``MODEL.range``, each in one step.

    Raises:
        DataFormatError: a file exists without ``overwrite``, is not a model (range) file
            randsvm-dist wrote (``app.model_io.check_model_outputs``), or cannot be
            written.
    """
    from randsvm_dist.app.model_io import RANGE_SUFFIX, check_model_outputs, save_model
    from randsvm_dist.data.publish import publish_file

    check_model_outputs(model, path, overwrite)

    def write(tmp: str) -> None:  # the library's own writer, at the temporary path
        save_model(model, tmp)
        Path(tmp + RANGE_SUFFIX).unlink(missing_ok=True)  # published below, in its turn

    publish_file(path, write, overwrite=overwrite, what="--model")
    scaler = getattr(model, "scaler_", None)
    if scaler is not None:
        publish_file(os.fspath(path) + RANGE_SUFFIX, scaler.save_range, overwrite=overwrite,
                     what="range file")
