"""Input checks: features, labels, sample and class weights, parameters.

Every input-validation helper of the package lives here, and each kind of failure has one
error type: what the user passes as data (X, y, a file's columns: shape, length, labels,
NaN features) fails with ``SchemaError``; what the user passes as a setting (a parameter,
a class weight, a ``sample_weight`` array's values) fails with ``ParameterError``. So a
NaN or infinite value in a ``sample_weight`` array is a ``ParameterError`` (its length
is the data's shape: ``SchemaError``); a weight column of a Parquet file is data, checked
where the file is read (``SchemaError``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import ParameterError, SchemaError


def check_features(X, n_features: int | None = None, *, name: str = "X",
                   min_rows: int = 0, model: str = "the model", keep_float64: bool = False):
    """Return X as float32 C-contiguous ndarray or float32 CSR matrix, checked.

    The conversion is scikit-learn's ``check_array`` (so object arrays of numbers are
    accepted and complex data, 1-D arrays and zero features are refused with its messages).

    Args:
        X: array-like of shape (n_rows, n_features), dense or scipy sparse.
        n_features: expected feature count; None accepts any.
        name: what to call X in error messages.
        min_rows: fewest rows accepted (1 when fitting).
        model: what to call the model expecting n_features (e.g. its class name).
        keep_float64: float64 input stays float64 (values a float32 cannot hold are still
            refused), for decision values computed in float64 from the rows as given.

    Returns:
        np.ndarray (float32, C order) or scipy.sparse.csr_matrix (float32, sorted indices);
        float64 instead for float64 input with ``keep_float64``.

    Raises:
        SchemaError: X is not 2-D, has no features, too few rows, the wrong feature count,
            non-numeric or complex values, or holds NaN/inf (naming the row and feature).
        TypeError: an object array holding values that are not numbers.
    """
    try:
        from sklearn.utils import check_array  # on first use: a scan worker never needs it

        # float64 stays float64 until its range is checked (a cast would overflow to inf)
        X = check_array(X, accept_sparse="csr", dtype=[np.float32, np.float64], order="C",
                        ensure_all_finite=False, ensure_min_samples=min_rows,
                        input_name=name)
    except ValueError as e:
        raise SchemaError(f"{name}: {e}") from None
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
        values = X.data
    else:
        values = X
    if values.size and not np.isfinite(values).all():
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else X))[0]
        raise SchemaError(
            f"{name} holds a NaN or infinite value at row {bad[0]}, feature {bad[1]}; "
            "expected finite numbers"
        )
    if X.dtype == np.float64:
        check_float32_range(X, name)
        if not keep_float64:
            X = X.astype(np.float32) if sp.issparse(X) else \
                np.ascontiguousarray(X, dtype=np.float32)
    if n_features is not None and X.shape[1] != n_features:
        raise SchemaError(
            f"{name} has {X.shape[1]} features, but {model} is expecting {n_features} "
            "features as input"
        )
    return X


FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_range_message(value: float, row: int, feature) -> str:
    """THE message of a feature value a float32 cannot hold (every check says this)."""
    def short(v: float, digits: int) -> str:
        return f"{v:.{digits}g}".replace("e+", "e")

    return (f"value {short(value, 3)} at row {row}, feature {feature} is beyond float32's "
            f"range ({short(FLOAT32_MAX, 2)}): features are stored as float32; scale the "
            "feature down")


def check_float32_range(X, name: str = "X") -> None:
    """Refuse finite values a float32 cannot hold (they would become inf when cast).

    Args:
        X: float64 ndarray or CSR matrix of finite values.

    Raises:
        SchemaError: the first such value, by :func:`float32_range_message`.
    """
    values = X.data if sp.issparse(X) else X
    if not values.size or max(float(values.max()), -float(values.min())) <= FLOAT32_MAX:
        return  # (max and min: no temporary array the size of X)
    dense = X.toarray() if sp.issparse(X) else X
    row, col = np.argwhere(np.abs(dense) > FLOAT32_MAX)[0]
    raise SchemaError(f"{name}: " + float32_range_message(float(dense[row, col]), int(row),
                                                          int(col)))


def zero_columns(X, n_columns: int):
    """X widened to ``n_columns`` by zero columns on the right (dense or CSR; X itself when
    it is that wide already)."""
    extra = n_columns - X.shape[1]
    if extra <= 0:
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_columns))
    return np.ascontiguousarray(np.hstack([X, np.zeros((X.shape[0], extra), X.dtype)]))


def same_width(X, support_vectors):
    """LIBSVM's feature-index rule where a model that knows only its support vectors'
    highest index meets data: a feature index missing from either side is a zero, so the
    narrower of the two gets zero columns (a feature beyond the model's highest index adds
    nothing to a dot product, and to a distance what stock ``svm-predict`` adds).

    Returns:
        (X, support_vectors), of one width.
    """
    width = max(X.shape[1], support_vectors.shape[1])
    return zero_columns(X, width), zero_columns(support_vectors, width)


def check_labels(y, n_rows: int, *, name: str = "y") -> np.ndarray:
    """Return y as a 1-D array of length n_rows.

    Raises:
        SchemaError: wrong shape/length or NaN labels.
    """
    if y is None:
        raise SchemaError(f"this classifier requires {name} to be passed, but the target "
                          f"{name} is None")
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        from sklearn.exceptions import DataConversionWarning

        warnings.warn(f"A column-vector {name} was passed when a 1d array was expected; "
                      "it is used as a 1-D array", DataConversionWarning, stacklevel=3)
        y = y.reshape(-1)
    if y.ndim != 1:
        raise SchemaError(f"{name} must be 1-D; got shape {y.shape}")
    if len(y) != n_rows:
        raise SchemaError(f"{name} has {len(y)} labels for {n_rows} rows of X")
    if np.issubdtype(y.dtype, np.floating) and not np.isfinite(y).all():
        row = int(np.argwhere(~np.isfinite(y))[0, 0])
        raise SchemaError(f"{name} holds a NaN or infinite label at row {row}")
    return y


def check_classes(classes: Iterable, *, where: str = "the labels") -> np.ndarray:
    """Return the sorted distinct classes, requiring at least two discrete ones.

    Raises:
        SchemaError: fewer than two classes, or continuous (non-integral float) labels.
    """
    classes = np.unique(np.asarray(list(classes) if not isinstance(classes, np.ndarray)
                                   else classes))
    from sklearn.utils.multiclass import type_of_target

    kind = type_of_target(classes)
    if kind.startswith("continuous"):
        raise SchemaError(f"Unknown label type: {where} are {kind} values "
                          f"({classes[:5].tolist()}...); a classifier needs discrete labels")
    if len(classes) < 2:
        raise SchemaError(
            f"{where} hold one class only ({classes.tolist()}); an SVM needs at least two"
        )
    return classes


def check_sample_weight(sample_weight, n_rows: int) -> np.ndarray | None:
    """Row weights as float64 (n_rows,), as scikit-learn takes them, or None when not
    given. A scalar weighs every row; rows weighing <= 0 are the caller's to drop (as in
    scikit-learn's SVC).

    Args:
        sample_weight: None, a scalar or an array-like of n_rows numbers.
        n_rows: rows of X.

    Raises:
        SchemaError: wrong shape or length.
        ParameterError: a NaN or infinite weight (naming the row).
    """
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_rows, float(w))
    if w.shape != (n_rows,):
        raise SchemaError(f"sample_weight has shape {w.shape}; expected ({n_rows},)")
    if not np.isfinite(w).all():
        row = int(np.flatnonzero(~np.isfinite(w))[0])
        raise ParameterError(f"sample_weight, row {row}: {float(w[row])!r} is not a finite "
                             "number")
    return w


def balanced_class_weight(counts: np.ndarray) -> np.ndarray:
    """scikit-learn's ``class_weight='balanced'``: n_rows / (n_classes x the class's rows)
    per class (float64, aligned with ``counts``); a class without rows weighs 1."""
    counts = np.asarray(counts)
    out = np.ones(len(counts))
    seen = counts > 0
    out[seen] = counts.sum() / (len(counts) * counts[seen])
    return out


def check_positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    """Return value as float if it is > 0 (or >= 0); else raise ParameterError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number; got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{name} must be {bound}; got {value!r}")
    return v


def check_int(value, name: str, low: int) -> int:
    """Return value as int if it is an integer (not a bool) >= low; else ParameterError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ParameterError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def check_choice(value, name: str, choices) -> str:
    """Return value if it is one of choices; else ParameterError listing them."""
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(f"{name} must be one of {tuple(choices)}; got {value!r}")
    return value


def check_flag(value, name: str) -> bool:
    """Return value as bool if it is True or False (numpy bools too); else ParameterError."""
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_gamma(gamma) -> None:
    """A kernel width must be 'scale', 'auto' or a number > 0 (else ParameterError)."""
    if isinstance(gamma, str):
        check_choice(gamma, "gamma", ("scale", "auto"))
    else:
        check_positive(gamma, "gamma")


def class_index(y: np.ndarray, classes: np.ndarray, *, where: str = "y") -> np.ndarray:
    """Index of each label in the sorted ``classes`` (int32).

    Raises:
        SchemaError: a label not among classes, naming its row.
    """
    if len(y) and _is_number_kind(np.asarray(y)) != _is_number_kind(np.asarray(classes)):
        raise SchemaError(f"{where}: labels {short_labels(np.unique(np.asarray(y)))} are "
                          f"not among classes {short_labels(classes)}")
    idx = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    bad = classes[idx] != y
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        label = np.asarray(y)[row].item()
        raise SchemaError(f"{where}, row {row}: label {label!r} is not among classes "
                          f"{np.asarray(classes).tolist()}")
    return idx.astype(np.int32)


def _is_number_kind(a: np.ndarray) -> bool:
    return a.dtype.kind in "biuf"


def unknown_labels(labels, classes) -> np.ndarray:
    """The values of ``labels`` that are not among ``classes`` (numbers compare by value:
    1.0 is 1; numbers and strings never match).

    Returns:
        the unknown labels, in their order in ``labels``.
    """
    labels, classes = np.asarray(labels), np.asarray(classes)
    if not len(labels):
        return labels
    if _is_number_kind(labels) != _is_number_kind(classes):
        return labels
    if not _is_number_kind(labels):
        labels, classes = labels.astype(str), classes.astype(str)
    return labels[~np.isin(labels, classes)]


def short_labels(values, at_most: int = 8) -> str:
    """A list of labels for a message: the first ``at_most`` and how many more."""
    vals = [v.item() if isinstance(v, np.generic) else v for v in np.asarray(values)]
    text = ", ".join(repr(v) for v in vals[:at_most])
    more = f", ... ({len(vals)} in all)" if len(vals) > at_most else ""
    return f"[{text}{more}]"


def check_weighted_classes(positive_counts, classes) -> None:
    """Refuse sample weights that leave fewer than two classes in the problem, as
    scikit-learn's SVC does.

    Args:
        positive_counts: rows of positive weight of each class.
        classes: the classes, in the same order.

    Raises:
        ParameterError: no row has a positive weight.
        SchemaError: all rows of positive weight are of one class.
    """
    present = np.flatnonzero(np.asarray(positive_counts))
    if len(present) == 0:
        raise ParameterError("Invalid input - all samples have zero or negative weights. "
                             "(invalid input: all rows have zero or negative sample weights)")
    if len(present) == 1:
        label = np.asarray(classes)[present[0]].item()
        raise SchemaError(f"Invalid input - all samples with positive weights belong to the "
                          f"same class: all rows with positive sample weights belong to "
                          f"class {label!r}; a classifier needs two classes")
