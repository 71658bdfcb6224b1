"""RandSVM estimators as LIBSVM model files: written, read, and rebuilt as estimators.

A model file is LIBSVM's own text (``model_files.libsvm_text``): ``c_svc`` (binary and
one-vs-one multi-class, with ``probA``/``probB`` when fitted with probabilities),
``epsilon_svr`` and ``one_class`` files that stock LIBSVM's ``svm_load_model`` reads and
predicts identically, and our one-vs-rest form (``randsvm_ovr``), which stock LIBSVM
refuses. Our trailer follows the SVs: ``#randsvm-dist-meta {json}`` with allow-listed keys
only (estimator, classes, feature count, the global row of every SV, parameters, history,
scaling) and ``#randsvm-dist-end sha256=...`` over everything before it, so a file cut
anywhere is refused. Nothing in a file names code to run, a client or a path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import numpy as np

from randsvm_dist.data.filesystem import read_bytes
from randsvm_dist.data.outputs import check_file_replaceable
from randsvm_dist.data.publish import write_bytes_atomic
from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.libsvm_text import (
    META_TAG,
    OVR_SVM_TYPE,
    format_model_file,
    parse_model_file,
)
from randsvm_dist.numerics.kernels import dense_if_compact

RANDSVM_FORMAT = "randsvm-dist/3"
RANGE_SUFFIX = ".range"  # svm-scale range file of a model trained with scale=
_HISTORY_TYPES = (int, float, str, bool, type(None))
_SCALING_KEYS = {"method", "lower", "upper", "feature_min", "feature_max"}


def _class_for(svm_type: str, estimators: Mapping[str, type]) -> type:
    """The estimator of a model file's svm_type (nu variants are read for prediction)."""
    family = {"nu_svc": "c_svc", OVR_SVM_TYPE: "c_svc", "nu_svr": "epsilon_svr"}
    return estimators[family.get(svm_type, svm_type)]


def save_estimator(est, path: str | os.PathLike, overwrite: bool = False) -> None:
    """Write a fitted RandSVM estimator as its model file (and ``<path>.range`` when it
    was trained with ``scale``), each atomically.

    Args:
        est: the fitted estimator.
        path: the model file.
        overwrite: replace existing files, which must be a model file (and range file)
            randsvm-dist wrote (see ``data.outputs``).

    Raises:
        NotFittedError: not fitted.
        DataFormatError: a file exists without ``overwrite``, or is not one to replace.
    """
    text = model_text(est)
    check_estimator_outputs(est, path, overwrite)
    write_bytes_atomic(path, text.encode())
    if getattr(est, "scaler_", None) is not None:  # for svm-scale; the model file has it
        est.scaler_.save_range(os.fspath(path) + RANGE_SUFFIX)


def check_estimator_outputs(est, path: str | os.PathLike, overwrite: bool) -> None:
    """The output rule (``data.outputs.check_file_replaceable``) for an estimator's model
    file and, when it was trained with ``scale``, its ``<path>.range``.

    Raises:
        DataFormatError: a file exists without ``overwrite``, is a data set's, or is not a
            model (range) file randsvm-dist wrote.
    """
    check_file_replaceable(path, overwrite, "model path", lambda p: is_model_text(read_bytes(p)))
    if getattr(est, "scaler_", None) is not None:
        check_file_replaceable(os.fspath(path) + RANGE_SUFFIX, overwrite, "range file",
                               _is_range_file)


def is_model_text(data: bytes) -> bool:
    """Whether ``data`` is a LIBSVM model file this project wrote (its metadata trailer)."""
    return data.startswith(b"svm_type") and META_TAG.encode() in data


def _is_range_file(path) -> bool:
    with open(path, "rb") as fh:
        return fh.readline().strip() in (b"x", b"y")


def model_text(est) -> str:
    """The model file of a fitted RandSVM estimator (see the module docstring).

    Raises:
        NotFittedError: not fitted.
    """
    est._check_fitted()
    params = {k: getattr(v, "method", v) for k, v in est.get_params(deep=False).items()
              if k not in ("client", "seed")}  # never saved: scheduler, seed model
    classes = getattr(est, "classes_", None)
    meta = {"format": RANDSVM_FORMAT, "estimator": type(est).__name__,
            "classes": None if classes is None else np.asarray(classes).tolist(),
            "n_features": int(est.n_features_in_),
            "support": np.asarray(est.support_, np.int64).tolist(),
            "params": params, "history": getattr(est, "history_", [])}
    if getattr(est, "scaler_", None) is not None:
        meta["scaling"] = est.scaler_.to_dict()
    if getattr(est, "feature_columns_", None) is not None:  # fitted on dense Parquet
        meta["feature_columns"] = list(est.feature_columns_)
    if getattr(est, "one_hot_categories_", None):
        meta["one_hot"] = {c: list(v) for c, v in est.one_hot_categories_.items()}
    return format_model_file(est._libsvm, _plain(meta))


def _plain(o):
    if isinstance(o, dict):
        return {str(k): _plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_plain(v) for v in o]
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, float) and not np.isfinite(o):
        return None
    return o


def load_estimator(path: str | os.PathLike, estimators: Mapping[str, type]):
    """The estimator a model file holds (its ``client`` is None).

    Args:
        path: the model file.
        estimators: the estimator registry (``estimators.ESTIMATORS``: svm_type -> class),
            passed in by the layer above, which knows it.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: truncated, corrupt or disallowed metadata.
    """
    return load_randsvm_model(read_bytes(path), os.fspath(path), estimators)


def load_randsvm_model(data: bytes, where: str, estimators: Mapping[str, type]):
    """Rebuild a RandSVM estimator from the bytes of its model file (ours or stock
    LIBSVM's: c_svc, epsilon_svr, one_class).

    Args:
        data: the file's bytes; where: its name for messages.
        estimators: the estimator registry (svm_type -> class), as ``load_estimator``.

    Raises:
        DataFormatError: not UTF-8, truncated, corrupt, or disallowed metadata.
    """
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise DataFormatError(f"{where}: not UTF-8 text; not a LIBSVM model file") from None
    model, meta = parse_model_file(text, where)
    meta = _check_meta(meta, where, estimators) if meta else {}
    cls = _class_for(model.svm_type, estimators)
    if meta.get("estimator", cls.__name__) != cls.__name__:
        raise DataFormatError(f"{where}: metadata names {meta['estimator']!r} for a "
                              f"{model.svm_type} model; the file is corrupt")
    est = cls(**_allowed_params(cls, meta.get("params", {}), where))
    n_sv = model.support_vectors.shape[0]
    support = np.asarray(meta.get("support", np.arange(n_sv)), dtype=np.int64)
    if len(support) != n_sv:
        raise DataFormatError(f"{where}: 'support' lists {len(support)} rows for {n_sv} "
                              "support vectors; the file is corrupt")
    n_features = meta.get("n_features", model.support_vectors.shape[1])
    if model.support_vectors.shape[1] != n_features:
        model.support_vectors = _with_columns(model.support_vectors, n_features)
    model.support_vectors = dense_if_compact(model.support_vectors)
    classes = meta.get("classes")
    est._adopt(model, support, None if classes is None else np.asarray(classes), n_features)
    est.history_ = meta.get("history", [])
    # a stock LIBSVM model knows no feature count, only its support vectors' highest index:
    # it meets data of any width as LIBSVM does (a missing index is a zero)
    est.n_features_from_index_ = "n_features" not in meta
    if meta.get("feature_columns") is not None:
        est.feature_columns_ = list(meta["feature_columns"])
        est.one_hot_categories_ = meta.get("one_hot") or None
    est.scaler_ = None
    if meta.get("scaling"):
        from randsvm_dist.distributed.scaling import FeatureScaler

        est.scaler_ = FeatureScaler.from_dict(meta["scaling"])
    return est


def _with_columns(X, n_features: int):
    import scipy.sparse as sp

    X = sp.csr_matrix(X)
    if X.shape[1] > n_features:
        raise DataFormatError(f"support vectors have {X.shape[1]} features; the model "
                              f"says {n_features}")
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _check_type(value, kind, where: str, key: str):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DataFormatError(f"{where}: metadata key {key!r} must be a "
                              f"{getattr(kind, '__name__', kind)}; got {value!r}")
    return value


def _check_meta(meta, where: str, estimators: Mapping[str, type]) -> dict:
    """The metadata of a model file, checked by ``_META_RULES``.

    Args:
        meta: the parsed ``#randsvm-dist-meta`` JSON.
        where: the file name for messages.
        estimators: the estimator registry (the ``estimator`` key names one of its classes).

    Returns:
        ``meta`` itself.

    Raises:
        DataFormatError: not a dict, a key not allowed, or a value of the wrong kind (the
            first rule that fails).
    """
    _check_type(meta, dict, where, "<metadata>")
    unexpected = sorted(set(meta) - _META_KEYS)
    if unexpected:
        raise DataFormatError(f"{where}: metadata key(s) {unexpected} are not allowed")
    names = {c.__name__ for c in estimators.values()}
    for key, absent, check in _META_RULES:
        if check is _check_estimator:
            _check_estimator(meta.get(key, absent), where, names)
        else:
            check(meta.get(key, absent), where)
    return meta


def _check_format(value, where: str) -> None:
    """Refuse a ``format`` other than ``RANDSVM_FORMAT`` (DataFormatError)."""
    if value != RANDSVM_FORMAT:
        raise DataFormatError(f"{where}: unknown model format {value!r}")


def _check_estimator(value, where: str, names: set[str]) -> None:
    """Refuse an ``estimator`` that is not one of the registry's classes (DataFormatError)."""
    if value not in names:
        raise DataFormatError(f"{where}: unknown estimator {value!r}")


def _check_n_features(value, where: str) -> None:
    """Refuse an ``n_features`` that is not a positive int (DataFormatError)."""
    if _check_type(value, int, where, "n_features") < 1:
        raise DataFormatError(f"{where}: 'n_features' must be positive")


def _check_classes(value, where: str) -> None:
    """Refuse ``classes`` that are not None nor a list of two or more numbers or strings
    (DataFormatError)."""
    if value is not None and (not isinstance(value, list) or len(value) < 2 or not all(
            isinstance(c, (int, float, str)) for c in value)):
        raise DataFormatError(f"{where}: 'classes' must list two or more labels")


def _check_params(value, where: str) -> None:
    """Refuse ``params`` that are not a dict (DataFormatError); ``_allowed_params`` checks
    each one against the estimator."""
    _check_type(value, dict, where, "params")


def _check_scaling(value, where: str) -> None:
    """Refuse ``scaling`` that is not a dict of ``FeatureScaler.to_dict``'s keys
    (DataFormatError)."""
    if set(_check_type(value, dict, where, "scaling")) - _SCALING_KEYS:
        raise DataFormatError(f"{where}: 'scaling' has keys that are not allowed")


def _check_history(value, where: str) -> None:
    """Refuse a ``history`` that is not a list of flat records (DataFormatError)."""
    for rec in _check_type(value, list, where, "history"):
        if not isinstance(rec, dict) or not all(isinstance(v, _HISTORY_TYPES)
                                                for v in rec.values()):
            raise DataFormatError(f"{where}: 'history' must be a list of flat records")


def _check_support(value, where: str) -> None:
    """Refuse a ``support`` that is not a list of non-negative ints (DataFormatError)."""
    rows = _check_type(value, list, where, "support")
    if not all(isinstance(r, int) and r >= 0 for r in rows):
        raise DataFormatError(f"{where}: 'support' must hold non-negative row numbers")


def _check_feature_columns(value, where: str) -> None:
    """Refuse ``feature_columns`` that are not None nor a list of strings
    (DataFormatError)."""
    if value is not None and not (isinstance(value, list)
                                  and all(isinstance(c, str) for c in value)):
        raise DataFormatError(f"{where}: 'feature_columns' must list column names")


def _check_one_hot(value, where: str) -> None:
    """Refuse ``one_hot`` that is not a dict of column -> list of category strings
    (DataFormatError)."""
    for cats in _check_type(value, dict, where, "one_hot").values():
        if not (isinstance(cats, list) and all(isinstance(v, str) for v in cats)):
            raise DataFormatError(f"{where}: 'one_hot' must map columns to category lists")


# the metadata keys: (key, value when absent, its check), checked in this order
_META_RULES: tuple[tuple[str, object, Callable[..., None]], ...] = (
    ("format", None, _check_format),
    ("estimator", None, _check_estimator),
    ("n_features", None, _check_n_features),
    ("classes", None, _check_classes),
    ("params", {}, _check_params),
    ("scaling", {}, _check_scaling),
    ("history", [], _check_history),
    ("support", [], _check_support),
    ("feature_columns", None, _check_feature_columns),
    ("one_hot", {}, _check_one_hot),
)
_META_KEYS = {key for key, _, _ in _META_RULES}


def _allowed_params(cls: type, params: dict, where: str) -> dict:
    known = cls().get_params()
    for k, v in params.items():
        if k not in known or k in ("client", "seed"):
            raise DataFormatError(f"{where}: parameter {k!r} is not allowed in a model file")
        ok = isinstance(v, (int, float, str, bool, type(None))) or (
            k == "class_weight" and isinstance(v, dict)
            and all(isinstance(w, (int, float)) for w in v.values()))
        if not ok:
            raise DataFormatError(f"{where}: parameter {k!r} has a disallowed value {v!r}")
    return params

