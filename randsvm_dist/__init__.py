"""randsvm-dist: exact kernel SVMs at cluster scale and one-pass streaming SVMs on Dask."""

from randsvm_dist.exceptions import (
    ClusterError,
    DataFormatError,
    ParameterError,
    RandSVMError,
    SchemaError,
)

__version__ = "0.1.0"

from randsvm_dist.core.progress import auto as _progress  # noqa: E402

_progress()  # interactive sessions show the per-iteration lines (randsvm_dist.core.progress)


def __getattr__(name: str):
    # heavy imports (dask, scikit-learn) only when the estimator is asked for
    if name == "NotFittedError":
        from randsvm_dist.exceptions import NotFittedError

        return NotFittedError
    if name in ("RandSVMClassifier", "RandSVMRegressor", "RandSVMOneClass"):
        from randsvm_dist import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ClusterError",
    "DataFormatError",
    "NotFittedError",
    "ParameterError",
    "RandSVMClassifier",
    "RandSVMOneClass",
    "RandSVMRegressor",
    "RandSVMError",
    "SchemaError",
    "__version__",
]
