"""Exception types a user can act on.

Every error raised for bad input names the file, the row/line or the parameter and what was
expected.
"""

from __future__ import annotations


class RandSVMError(Exception):
    """Base class of every error raised by randsvm-dist."""


class DataFormatError(RandSVMError, ValueError):
    """A data file is malformed (bad token, bad value, NaN/inf, empty file, ...)."""


class OutputBusyError(RandSVMError, RuntimeError):
    """An output is being written by another process right now (its lock file is held)."""


class SchemaError(RandSVMError, ValueError):
    """A data set's columns, feature count or labels do not match what is expected."""


def _not_fitted_error() -> type:
    # defined on first use, so the command line's --help does not import scikit-learn
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    class NotFittedError(RandSVMError, _SklearnNotFittedError):
        """A model was used before it was fitted (also scikit-learn's NotFittedError, hence a
        ValueError and an AttributeError)."""

    NotFittedError.__module__ = __name__
    return NotFittedError


def __getattr__(name: str):
    if name == "NotFittedError":
        cls = globals()["NotFittedError"] = _not_fitted_error()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ClusterError(RandSVMError, RuntimeError):
    """The Dask cluster cannot be reached or is not usable."""


class ParameterError(RandSVMError, ValueError):
    """An estimator or command parameter is out of its valid range."""


class FitCancelled(RandSVMError):
    """A fit was cancelled (its ``cancelled`` check said so between two driver steps)."""
