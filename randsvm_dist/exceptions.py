"""Exception types a user can act on.

Every error raised for bad input names the file, the row/line or the parameter and what was
expected.
"""

from __future__ import annotations


class RandSVMError(Exception):
    """Base class of every error raised by randsvm-dist."""


class DataFormatError(RandSVMError, ValueError):
    """A data file is malformed (bad token, bad value, NaN/inf, empty file, ...)."""


class SchemaError(RandSVMError, ValueError):
    """A data set's columns, feature count or labels do not match what is expected."""


class NotFittedError(RandSVMError, AttributeError):
    """A model was used before it was fitted."""


class ClusterError(RandSVMError, RuntimeError):
    """The Dask cluster cannot be reached or is not usable."""


class ParameterError(RandSVMError, ValueError):
    """An estimator or command parameter is out of its valid range."""
