"""Saving and loading any model kind, each file told by its format: every format itself
lives in ``model_files/``.

- RandSVM estimators: a LIBSVM text model file with our metadata trailer
  (``model_files.estimator_files``); stock LIBSVM's ``svm_load_model`` reads every one but
  the one-vs-rest form.
- Streaming learners: one ``.npz`` file without pickle (``model_files.streaming_files``).

Every file is written to a temporary name and renamed into place. Old joblib pickles load
only with ``allow_pickle=True`` (``--allow-pickle`` on the command line).
"""

from __future__ import annotations

import os

from randsvm_dist.data.filesystem import is_url, read_bytes
from randsvm_dist.data.publish import write_bytes_atomic
from randsvm_dist.exceptions import DataFormatError, ParameterError
from randsvm_dist.model_files.estimator_files import (
    RANGE_SUFFIX,
    check_estimator_outputs,
    is_model_text,
    load_randsvm_model,
    save_estimator,
)
from randsvm_dist.model_files.streaming_files import (
    is_streaming_model,
    load_streaming_model,
    streaming_model_bytes,
)

__all__ = ["RANGE_SUFFIX", "check_model_outputs", "check_model_path", "is_model_file",
           "load_model", "save_model"]


def save_model(model, path: str | os.PathLike, overwrite: bool = False) -> None:
    """Save a fitted RandSVMClassifier (LIBSVM text) or streaming learner (.npz).

    Args:
        model: the fitted model.
        path: the model file.
        overwrite: replace an existing model file randsvm-dist wrote (nothing else).

    Raises:
        NotFittedError: the model is not fitted.
        DataFormatError: the model holds something these formats cannot store; the file
            exists without ``overwrite``, or is not one to replace.
    """
    from randsvm_dist.estimators.base import RandSVMBase

    if isinstance(model, RandSVMBase):
        save_estimator(model, path, overwrite)
        return
    data = streaming_model_bytes(model)
    check_model_outputs(model, path, overwrite)
    write_bytes_atomic(path, data)


def check_model_outputs(model, path: str | os.PathLike, overwrite: bool) -> None:
    """The output rule for saving ``model`` at ``path`` (its range file too, for an
    estimator trained with ``scale``): what ``save_model`` checks, for writers that publish
    the file themselves (``app.model_output``).

    Raises:
        DataFormatError: a file exists without ``overwrite``, is a data set's, or is not a
            model (range) file randsvm-dist wrote.
    """
    from randsvm_dist.data.outputs import check_file_replaceable
    from randsvm_dist.estimators.base import RandSVMBase

    if isinstance(model, RandSVMBase):
        check_estimator_outputs(model, path, overwrite)
    else:
        check_file_replaceable(path, overwrite, "model path", is_model_file)


def load_model(path: str | os.PathLike, *, allow_pickle: bool = False):
    """Load any model ``save_model`` wrote, a stock LIBSVM binary model file, or, only with
    ``allow_pickle``, an old joblib pickle.

    Returns:
        the fitted estimator (its ``client`` is None).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: truncated, corrupt, unknown format, a disallowed key, or a pickle
            without ``allow_pickle``.
    """
    where = os.fspath(path)
    data = read_bytes(path)
    if data.startswith(b"PK"):
        return load_streaming_model(data, where)
    if data.startswith(b"svm_type"):
        from randsvm_dist.estimators import ESTIMATORS

        return load_randsvm_model(data, where, ESTIMATORS)
    if data.startswith(b"\x80"):
        if not allow_pickle:
            raise DataFormatError(
                f"{where} is a pickle (a model saved by an older version). Loading a pickle "
                "can run any code it contains: pass --allow-pickle (allow_pickle=True) only "
                "for a file you trust, then save it again in the safe format.")
        import joblib

        model = joblib.load(where)
        if not (callable(getattr(model, "predict", None)) and hasattr(model, "n_features_in_")):
            raise DataFormatError(f"{where}: the pickle holds a {type(model).__name__}, not "
                                  "a fitted model")
        if hasattr(model, "client"):
            model.client = None
        return model
    raise DataFormatError(f"{where}: not a model file of randsvm-dist (expected a LIBSVM "
                          f"model or a .npz streaming model; starts with {data[:16]!r})")


def check_model_path(path: str | os.PathLike, overwrite: bool = False) -> None:
    """Fail now, before any training, if ``path`` cannot take a model file.

    Args:
        path: the model file to be written (local path; URLs are checked by the write).
        overwrite: replace an existing file, which must itself be a randsvm-dist model.

    Raises:
        ParameterError: the parent directory is missing or not writable, ``path`` is a
            directory, it exists without ``overwrite``, or it exists and is not a model
            file this project wrote.
    """
    path = os.fspath(path)
    if is_url(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ParameterError(f"model path {path} is a directory; give a file name")
    if not os.path.isdir(parent):
        raise ParameterError(f"model path {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"model path {path}: directory {parent} is not writable")
    if not os.path.exists(path):
        return
    if not overwrite:
        raise ParameterError(f"model path {path} exists; pass --overwrite to replace it")
    if not is_model_file(path):
        raise ParameterError(f"model path {path} exists and is not a randsvm-dist model "
                             "file; --overwrite replaces only files this project wrote")


def is_model_file(path: str | os.PathLike) -> bool:
    """True when ``path`` is a model file written by ``save_model``."""
    try:
        data = read_bytes(path)
    except OSError:
        return False
    return is_streaming_model(data) or is_model_text(data)
