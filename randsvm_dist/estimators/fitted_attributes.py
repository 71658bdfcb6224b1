"""Fitted attributes as scikit-learn's SVM family has them, for every RandSVM estimator.

The driver keeps its model as LIBSVM does (support vectors float32, dense or CSR, as the
working sets held them); a user of SVC, SVR or OneClassSVM expects what those give:

- ``support_vectors_`` a dense ndarray for dense input (CSR for sparse input), of the
  input's float dtype (float32 input stays float32; any other: float64), ``dual_coef_``
  float64 (CSR for sparse input, as SVC);
- ``n_support_`` (1,) int32 for SVR and one-class, ``fit_status_`` (0: fitted to the
  certificate, or optimal with gap_tol=0; 1: stopped without it, which warns),
  ``shape_fit_`` (rows, features) of the training data;
- ``coef_`` (linear kernel, read-only) for SVR and one-class too (``one_column_coef``);
- ``feature_names_in_`` when fitted on a DataFrame whose column names are all strings,
  and scikit-learn's feature-name checks at prediction (``check_feature_names``): other
  names or another order raise scikit-learn's ValueError, names missing on one side warn.

The prediction itself uses the model's own support vectors (``_sv``), never these copies;
a model fitted on float64 arrays in memory computes its decision values in float64 from
the rows as given (float64 rows are not rounded to float32), as SVC (``_float64``; float32
for Parquet data and float32 arrays: faster, same labels).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp


def input_info(data, in_memory: bool) -> dict:
    """What the fitted attributes need to know of the training input, before the fit:
    whether it is in memory (``in_memory``: numpy, scipy sparse, pandas, lists; not Parquet
    data sets nor Dask collections), sparse, its float dtype and shape."""
    if not in_memory:
        return {"in_memory": False, "sparse": False, "dtype": np.float64, "shape": None}
    sparse = sp.issparse(data)
    dtype = getattr(data, "dtype", None)
    if dtype is None and hasattr(data, "dtypes"):  # a DataFrame
        kinds = set(np.asarray(data.dtypes).tolist())
        dtype = np.float32 if kinds == {np.dtype(np.float32)} else np.float64
    dtype = np.float32 if dtype == np.float32 else np.float64
    shape = getattr(data, "shape", None)
    if shape is None:
        shape = np.shape(np.asarray(data, dtype=object))
    return {"in_memory": True, "sparse": sparse, "dtype": dtype,
            "shape": tuple(int(s) for s in shape)}


def _feature_names(X) -> np.ndarray | None:
    """The column names of a DataFrame when all are strings (scikit-learn's rule; mixed
    types raise its TypeError), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or hasattr(X, "dask"):
        return None
    names = np.asarray(columns, dtype=object)
    is_str = np.array([isinstance(n, str) for n in names], dtype=bool)
    if len(names) and is_str.all():
        return names
    if is_str.any():
        raise TypeError("Feature names are only supported if all input features have "
                        "string names, but your input has ['int', 'str'] as feature name "
                        "/ column name types. If you want feature names to be stored and "
                        "validated, you must convert them all to strings, by using "
                        "X.columns = X.columns.astype(str) for example. Otherwise you can "
                        "remove feature / column names from your input data, or convert "
                        "them all to a non-string data type.")
    return None


def record_feature_names(est, data, info: dict) -> None:
    """Set (or delete) ``feature_names_in_`` as scikit-learn's ``fit`` does."""
    names = _feature_names(data) if info["in_memory"] else None
    if names is not None:
        est.feature_names_in_ = names
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_


def record_input(est, data, in_memory: bool) -> dict:
    """What the fitted attributes need to know of the training input (``input_info``),
    with ``feature_names_in_`` set (or deleted) as scikit-learn's ``fit`` does."""
    info = input_info(data, in_memory)
    record_feature_names(est, data, info)
    return info


def record_dataset_features(est, data) -> None:
    """``feature_columns_`` (the columns read as features) and ``one_hot_categories_``
    ({column: categories} of one-hot columns, or None) of a fit on a dense Parquet data
    set: saved in the model file, they choose the same features of the data that
    ``predict``/``evaluate`` (and ``train --test``) read (``data.dataset.fitted_options``). Deleted
    for other input."""
    from randsvm_dist.data import Dataset

    if isinstance(data, Dataset) and not data.is_sparse:
        est.feature_columns_ = list(data.feature_columns)
        est.one_hot_categories_ = dict(getattr(data, "one_hot", {})) or None
        return
    for name in ("feature_columns_", "one_hot_categories_"):
        if hasattr(est, name):
            delattr(est, name)


def check_feature_names(est, X) -> None:
    """scikit-learn's feature-name check at prediction.

    Raises:
        ValueError: X's column names differ from ``feature_names_in_`` (others, or
            another order): "The feature names should match those that were passed
            during fit." A warning (UserWarning) when only one side has names.
    """
    fitted = getattr(est, "feature_names_in_", None)
    names = _feature_names(X)
    name = type(est).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=4)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=4)
        return
    if len(fitted) == len(names) and np.all(fitted == names):
        return
    unexpected = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    message = "The feature names should match those that were passed during fit.\n"
    for title, listed in (("Feature names unseen at fit time:", unexpected),
                          ("Feature names seen at fit time, yet now missing:", missing)):
        if listed:
            message += title + "\n" + "".join(f"- {n}\n" for n in listed)
    if not unexpected and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


def finish_attributes(est, info: dict) -> None:
    """The fitted attributes scikit-learn's SVM estimators have, from the fitted model."""
    sv = est._sv
    if info["in_memory"] and not info["sparse"]:
        est.support_vectors_ = np.asarray(sv.toarray() if sp.issparse(sv) else sv,
                                          dtype=info["dtype"])
    elif sp.issparse(sv) or info["sparse"]:
        est.support_vectors_ = sp.csr_matrix(sv, dtype=info["dtype"])
    else:
        est.support_vectors_ = np.asarray(sv, dtype=info["dtype"])
    if info["sparse"]:
        est.dual_coef_ = sp.csr_matrix(est.dual_coef_)
    est._float64 = bool(info["in_memory"] and info["dtype"] == np.float64)
    est.fit_status_ = 0 if (est.certified_ or (est.gap_tol == 0 and est.optimal_)) else 1
    if info["shape"] is not None:
        est.shape_fit_ = info["shape"]
    else:
        est.shape_fit_ = (int(getattr(est, "_n_rows_fit", -1)), int(est.n_features_in_))
    if est._task != "classification":
        est.n_support_ = np.array([len(est.support_)], dtype=np.int32)


def one_column_coef(est) -> np.ndarray:
    """``coef_`` of a linear-kernel SVR or one-class model: dual_coef_ @ support_vectors_,
    (1, n_features) float64, read-only (CSR for sparse input, as SVR's).

    Raises:
        AttributeError: not a linear kernel.
    """
    est._check_fitted()
    if est.kernel_.name != "linear":
        raise AttributeError("coef_ is only available when using a linear kernel")
    dual = est.dual_coef_
    sv = est.support_vectors_
    if sp.issparse(sv) or sp.issparse(dual):
        coef = sp.csr_matrix(sp.csr_matrix(dual, dtype=np.float64)
                             @ sp.csr_matrix(sv, dtype=np.float64))
        coef.data.flags.writeable = False
        return coef
    coef = np.asarray(dual, np.float64) @ np.asarray(sv, np.float64)
    coef.flags.writeable = False
    return coef
