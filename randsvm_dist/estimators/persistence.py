"""RandSVM estimators as LIBSVM model files: written, read, and rebuilt as estimators.

A model file is LIBSVM text that stock LIBSVM's ``svm_load_model`` reads (it stops after
``total_sv`` SV lines), followed by our trailer: ``#randsvm-dist-meta {json}``
(allow-listed keys only: classes, feature count, the global row of every SV, parameters,
history), one ``#randsvm-dist-model j`` section per further one-vs-rest model, and
``#randsvm-dist-end sha256=...`` over everything before it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np

from randsvm_dist.data.storage import read_bytes, write_bytes_atomic
from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.serialization import parse_json as _json
from randsvm_dist.solvers.model_file import (
    BinaryModel,
    check_stock_text,
    format_libsvm_model,
    parse_libsvm_model,
    sv_order,
)

RANDSVM_FORMAT = "randsvm-dist/2"
META_TAG = "#randsvm-dist-meta "
MODEL_TAG = "#randsvm-dist-model "
END_TAG = "#randsvm-dist-end sha256="
RANGE_SUFFIX = ".range"  # svm-scale range file of a model trained with scale=
_HISTORY_TYPES = (int, float, str, bool, type(None))


def save_estimator(est, path: str | os.PathLike) -> None:
    """Write a fitted RandSVM estimator as its model file (and ``<path>.range`` when it
    was trained with ``scale``), each atomically.

    Raises:
        NotFittedError: not fitted.
    """
    write_bytes_atomic(path, randsvm_model_text(est).encode())
    if getattr(est, "scaler_", None) is not None:  # for svm-scale; the model file has it
        est.scaler_.save_range(os.fspath(path) + RANGE_SUFFIX)


def load_estimator(path: str | os.PathLike):
    """The estimator a model file holds (its ``client`` is None).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: truncated, corrupt or disallowed metadata.
    """
    return load_randsvm_model(read_bytes(path), os.fspath(path))


def _randsvm_params() -> dict[str, Any]:
    from randsvm_dist.estimators import RandSVMClassifier

    params = RandSVMClassifier().get_params()
    params.pop("client")  # never saved: a file must not choose the scheduler
    return params


def randsvm_model_text(est) -> str:
    """The model file of a fitted RandSVMClassifier (see the module docstring).

    Raises:
        NotFittedError: not fitted.
    """
    est._check_fitted()
    classes = est.classes_
    integral = (np.issubdtype(classes.dtype, np.number)
                and all(float(c) == int(c) for c in classes))
    sections, sv_rows = [], []
    for j in range(len(est.intercept_)):
        keep = np.flatnonzero(est.dual_coef_[j] != 0)
        labels = ((int(classes[0]), int(classes[1])) if len(est.intercept_) == 1 and integral
                  else (-1, 1))
        model = BinaryModel(est.kernel_, est.support_vectors_[keep], est.dual_coef_[j, keep],
                            float(est.intercept_[j]), labels)
        sections.append(format_libsvm_model(model))
        sv_rows.append(est.support_[keep][sv_order(model.dual_coef)].tolist())
    params = {k: getattr(v, "method", v) for k, v in est.get_params().items()
              if k in _randsvm_params()}  # a FeatureScaler as scale= is kept by its method
    meta = {"format": RANDSVM_FORMAT, "classes": classes.tolist(),
            "n_features": int(est.n_features_in_), "sv_rows": sv_rows, "params": params,
            "history": getattr(est, "history_", [])}
    if getattr(est, "scaler_", None) is not None:
        meta["scaling"] = est.scaler_.to_dict()
    text = sections[0] + META_TAG + json.dumps(meta, default=_json_scalar) + "\n"
    for j, section in enumerate(sections[1:], 1):
        text += f"{MODEL_TAG}{j}\n{section}"
    return f"{text}{END_TAG}{hashlib.sha256(text.encode()).hexdigest()}\n"


def _json_scalar(o):
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"cannot store {type(o).__name__} in a model file")


def load_randsvm_model(data: bytes, where: str):
    """Rebuild a RandSVMClassifier from the bytes of its model file.

    Raises:
        DataFormatError: see ``load_model``.
    """
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise DataFormatError(f"{where}: not UTF-8 text; not a LIBSVM model file") from None
    lines = text.splitlines()
    meta_at = next((i for i, s in enumerate(lines) if s.startswith(META_TAG)), None)
    if meta_at is None:  # stock LIBSVM
        check_stock_text(text, where)  # ours cut before its trailer, or cut inside a line
        meta, sections = None, [(lines, where, 1)]
    else:
        meta, sections = _split_trailer(text, lines, meta_at, where)
    meta = _check_meta(meta, where) if meta is not None else None
    n_features = meta["n_features"] if meta else None
    models = [parse_libsvm_model(ls, w, n_features, first) for ls, w, first in sections]
    if n_features is None:
        n_features = max(m.support_vectors.shape[1] for m in models)
        models = [parse_libsvm_model(ls, w, n_features, first) for ls, w, first in sections]
    return _estimator_from(models, meta, n_features, where)


def _split_trailer(text: str, lines: list[str], meta_at: int, where: str):
    end = text.rfind("\n" + END_TAG)
    if end < 0:
        raise DataFormatError(f"{where}: no '{END_TAG.split()[0]}' line; the file is "
                              "truncated")
    digest = text[end + 1 + len(END_TAG):].strip()
    if hashlib.sha256(text[:end + 1].encode()).hexdigest() != digest:
        raise DataFormatError(f"{where}: checksum mismatch; the file is corrupt")
    meta = _json(lines[meta_at][len(META_TAG):], f"{where}, line {meta_at + 1}")
    sections = [(lines[:meta_at], where, 1)]
    starts = [i for i, s in enumerate(lines) if s.startswith(MODEL_TAG)]
    stop = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(END_TAG))
    for a, b in zip(starts, [*starts[1:], stop]):
        sections.append((lines[a + 1:b], where, a + 2))
    return meta, sections


def _check_type(value, kind, where: str, key: str):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DataFormatError(f"{where}: metadata key {key!r} must be a "
                              f"{getattr(kind, '__name__', kind)}; got {value!r}")
    return value


def _check_meta(meta, where: str) -> dict:
    """The allow-listed metadata, type-checked; an unexpected key is an error."""
    _check_type(meta, dict, where, "<metadata>")
    allowed = {"format", "classes", "n_features", "sv_rows", "support", "params", "history",
               "model_files", "scaling"}
    unexpected = sorted(set(meta) - allowed)
    if unexpected:
        raise DataFormatError(f"{where}: metadata key(s) {unexpected} are not allowed")
    if meta.get("format") not in ("randsvm-dist/1", RANDSVM_FORMAT):
        raise DataFormatError(f"{where}: unknown model format {meta.get('format')!r}")
    for key in ("classes", "n_features"):
        if key not in meta:
            raise DataFormatError(f"{where}: metadata lacks {key!r}")
    classes = _check_type(meta["classes"], list, where, "classes")
    if len(classes) < 2 or not all(isinstance(c, (int, float, str)) for c in classes):
        raise DataFormatError(f"{where}: 'classes' must list two or more labels")
    if _check_type(meta["n_features"], int, where, "n_features") < 1:
        raise DataFormatError(f"{where}: 'n_features' must be positive")
    params = _check_type(meta.get("params", {}), dict, where, "params")
    known = _randsvm_params()
    for k, v in params.items():
        if k not in known:
            raise DataFormatError(f"{where}: parameter {k!r} is not allowed in a model file")
        ok = isinstance(v, (int, float, str, bool, type(None))) or (
            k == "class_weight" and isinstance(v, dict)
            and all(isinstance(w, (int, float)) for w in v.values()))
        if not ok:
            raise DataFormatError(f"{where}: parameter {k!r} has a disallowed value {v!r}")
    scaling = _check_type(meta.get("scaling", {}), dict, where, "scaling")
    if set(scaling) - {"method", "lower", "upper", "feature_min", "feature_max"}:
        raise DataFormatError(f"{where}: 'scaling' has keys that are not allowed")
    history = _check_type(meta.get("history", []), list, where, "history")
    for rec in history:
        if not isinstance(rec, dict) or not all(isinstance(v, _HISTORY_TYPES)
                                                for v in rec.values()):
            raise DataFormatError(f"{where}: 'history' must be a list of flat records")
    for key in ("sv_rows", "support"):
        rows = meta.get(key)
        if rows is None:
            continue
        flat = rows if key == "support" else [r for part in _check_type(
            rows, list, where, key) for r in _check_type(part, list, where, key)]
        if not all(isinstance(r, int) and r >= 0 for r in flat):
            raise DataFormatError(f"{where}: {key!r} must hold non-negative row numbers")
    return meta


def _estimator_from(models: list[BinaryModel], meta: dict | None, n_features: int,
                    where: str):
    from randsvm_dist.estimators import RandSVMClassifier
    from randsvm_dist.exact.state import SupportModel
    from randsvm_dist.kernels import dense_if_compact

    est = RandSVMClassifier(**(meta or {}).get("params", {}))
    classes = np.asarray(meta["classes"]) if meta else np.asarray(models[0].labels)
    sv_rows = (meta or {}).get("sv_rows")
    if sv_rows is not None and [len(r) for r in sv_rows] != [len(m.dual_coef)
                                                           for m in models]:
        raise DataFormatError(f"{where}: 'sv_rows' does not match the SV counts of the "
                              f"{len(models)} model section(s); the file is corrupt")
    if len(models) != (1 if len(classes) == 2 else len(classes)):
        raise DataFormatError(f"{where}: {len(models)} model section(s) for "
                              f"{len(classes)} classes; the file is truncated or corrupt")
    support, offset = [], 0
    for j, m in enumerate(models):
        n_sv = m.support_vectors.shape[0]
        rows = (np.asarray(sv_rows[j], dtype=np.int64) if sv_rows is not None
                else np.arange(offset, offset + n_sv, dtype=np.int64))
        offset += n_sv
        support.append(SupportModel(rows, m.support_vectors, coef=m.dual_coef,
                                    intercept=m.intercept))
    est._set_raw(support, models[0].kernel, n_features, True)
    est._set_classes(classes, [(1, -1)] if len(models) == 1
                     else [(j, -1) for j in range(len(models))])
    if sv_rows is None and meta and meta.get("support") is not None \
            and len(meta["support"]) == len(est.support_):
        est.support_ = np.asarray(meta["support"], dtype=np.int64)  # format 1, binary
    est.support_vectors_ = dense_if_compact(est.support_vectors_)
    est.history_ = (meta or {}).get("history", [])
    est.scaler_ = None
    if (meta or {}).get("scaling"):
        from randsvm_dist.preprocessing import FeatureScaler

        est.scaler_ = FeatureScaler.from_dict(meta["scaling"])
    return est
