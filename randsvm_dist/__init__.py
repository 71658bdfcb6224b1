"""randsvm-dist: exact kernel SVMs at cluster scale and one-pass streaming SVMs on Dask."""

from .exceptions import (
    ClusterError,
    DataFormatError,
    NotFittedError,
    ParameterError,
    RandSVMError,
    SchemaError,
)

__version__ = "0.1.0"

__all__ = [
    "ClusterError",
    "DataFormatError",
    "NotFittedError",
    "ParameterError",
    "RandSVMError",
    "SchemaError",
    "__version__",
]
