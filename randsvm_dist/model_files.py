"""Model files: save and load every model kind, without pickle, each written as one unit.

- RandSVM (``RandSVMClassifier``): a LIBSVM text model file that stock LIBSVM's
  ``svm_load_model`` reads (it stops after ``total_sv`` SV lines), followed by our trailer:
  ``#randsvm-dist-meta {json}`` (allow-listed keys only: classes, feature count, the global
  row of every SV, parameters, history), one ``#randsvm-dist-model j`` section per further
  one-vs-rest model, and ``#randsvm-dist-end sha256=...`` over everything before it. Stock
  LIBSVM sees the first binary model (class 1 against 0, or class 0 against the rest).
- Streaming learners: one ``.npz`` file holding a versioned JSON header (``header``) and the
  arrays it refers to, loaded with ``allow_pickle=False``. Only classes of this package that
  are allow-listed below are rebuilt; nothing in the file names code to run.

Every file is written to a temporary name and renamed into place. Old joblib pickles load
only with ``allow_pickle=True`` (``--allow-pickle`` on the command line).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any

import numpy as np
import scipy.sparse as sp

from randsvm_dist.data.storage import is_url, read_bytes, write_bytes_atomic  # noqa: F401
from randsvm_dist.exceptions import DataFormatError, ParameterError
from randsvm_dist.solvers.model_file import (
    BinaryModel,
    format_libsvm_model,
    parse_libsvm_model,
    sv_order,
)

RANDSVM_FORMAT = "randsvm-dist/2"
STREAM_FORMAT = "randsvm-dist-stream"
STREAM_VERSION = 1
META_TAG = "#randsvm-dist-meta "
MODEL_TAG = "#randsvm-dist-model "
END_TAG = "#randsvm-dist-end sha256="
RANGE_SUFFIX = ".range"  # svm-scale range file of a model trained with scale=
_HISTORY_TYPES = (int, float, str, bool, type(None))
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


# -- bytes on local disks and fsspec URLs: data.storage's read_bytes / write_bytes_atomic --


# -- public API ----------------------------------------------------------------------------
def save_model(model, path: str | os.PathLike) -> None:
    """Save a fitted RandSVMClassifier (LIBSVM text) or streaming learner (.npz).

    Raises:
        NotFittedError: the model is not fitted.
        DataFormatError: the model holds something these formats cannot store.
    """
    from randsvm_dist.estimators import RandSVMClassifier

    if not isinstance(model, RandSVMClassifier):
        write_bytes_atomic(path, streaming_model_bytes(model))
        return
    write_bytes_atomic(path, randsvm_model_text(model).encode())
    if getattr(model, "scaler_", None) is not None:  # for svm-scale; the model file has it
        model.scaler_.save_range(os.fspath(path) + RANGE_SUFFIX)


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
        return load_randsvm_model(data, where)
    if data.startswith(b"\x80"):
        if not allow_pickle:
            raise DataFormatError(
                f"{where} is a pickle (a model saved by an older version). Loading a pickle "
                "can run any code it contains: pass --allow-pickle (allow_pickle=True) only "
                "for a file you trust, then save it again in the safe format.")
        import joblib

        model = joblib.load(where)
        if hasattr(model, "client"):
            model.client = None
        return model
    raise DataFormatError(f"{where}: not a model file of randsvm-dist (expected a LIBSVM "
                          f"model or a .npz streaming model; starts with {data[:16]!r})")


# -- RandSVM: LIBSVM text plus an allow-listed trailer ------------------------------------
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


def _json(text: str, where: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise DataFormatError(f"{where}: metadata is not valid JSON ({e})") from None


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
    from randsvm_dist.estimators import RandSVMClassifier, _maybe_dense
    from randsvm_dist.exact.driver import Problem
    from randsvm_dist.solvers.libsvm_adapter import SolverParams

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
    problems, offset = [], 0
    for j, m in enumerate(models):
        p = Problem(j if len(models) > 1 else 1, SolverParams(kernel=m.kernel))
        n_sv = m.support_vectors.shape[0]
        p.sv_rows = (np.asarray(sv_rows[j], dtype=np.int64) if sv_rows is not None
                     else np.arange(offset, offset + n_sv, dtype=np.int64))
        offset += n_sv
        p.sv_X, p.dual_coef, p.intercept = m.support_vectors, m.dual_coef, m.intercept
        problems.append(p)
    est._set_fitted(problems, classes, models[0].kernel, n_features, True)
    if sv_rows is None and meta and meta.get("support") is not None \
            and len(meta["support"]) == len(est.support_):
        est.support_ = np.asarray(meta["support"], dtype=np.int64)  # format 1, binary
    est.support_vectors_ = _maybe_dense(est.support_vectors_)
    est.history_ = (meta or {}).get("history", [])
    est.scaler_ = None
    if (meta or {}).get("scaling"):
        from randsvm_dist.preprocessing import FeatureScaler

        est.scaler_ = FeatureScaler.from_dict(meta["scaling"])
    return est


# -- streaming learners: JSON header plus arrays in one .npz -------------------------------
def _streaming_classes() -> dict[str, type]:
    """The classes a streaming model file may rebuild, by name."""
    from randsvm_dist import streaming
    from randsvm_dist.kernels import Kernel
    from randsvm_dist.streaming import blurred_ball, bsgd, ramp, streamsvm

    out = {c.__name__: c for c in (Kernel, blurred_ball._BlurredCover, bsgd._BinaryBSGD,
                                   ramp._RampBinary, streamsvm._StreamBall)}
    for name in streaming.__all__:
        cls = getattr(streaming, name)
        if isinstance(cls, type) and issubclass(cls, streaming.StreamingClassifier):
            out[name] = cls
    return out


def streaming_model_bytes(model) -> bytes:
    """The .npz bytes of a fitted streaming learner.

    Raises:
        NotFittedError: not fitted; DataFormatError: an attribute of a type not storable.
    """
    model._check_fitted()
    classes = _streaming_classes()
    if type(model).__name__ not in classes:
        raise DataFormatError(f"cannot save a {type(model).__name__}: not a model kind of "
                              "randsvm-dist")
    return pack_objects(model, classes, STREAM_FORMAT, STREAM_VERSION)


def pack_objects(obj, classes: dict[str, type], fmt: str, version: int,
                 extra: dict | None = None) -> bytes:
    """One .npz holding ``obj`` (and what it refers to) as a JSON header plus arrays.

    Args:
        obj: plain data (numbers, strings, lists, tuples, dicts, numpy arrays and scalars,
            CSR matrices, numpy Generators) and instances of ``classes``.
        classes: the allow-list, by class name, that ``unpack_objects`` will rebuild.
        fmt, version: the header's ``format`` and ``version``.
        extra: more JSON-able header entries.

    Raises:
        DataFormatError: a value of a type not storable.
    """
    arrays: dict[str, np.ndarray] = {}
    header = {"format": fmt, "version": version, **(extra or {}),
              "model": _encode(obj, arrays, classes, "model")}
    buf = io.BytesIO()
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(buf, header=blob, **arrays)
    return buf.getvalue()


def _encode(o, arrays: dict, classes: dict, where: str):
    if o is None or isinstance(o, (bool, int, float)) or type(o) is str:
        return o
    if isinstance(o, np.ndarray):
        if o.dtype == object:
            if not all(isinstance(v, str) for v in o.ravel()):
                raise DataFormatError(f"cannot save {where}: an array of Python objects")
            o = o.astype(str)
        key = f"a{len(arrays)}"
        arrays[key] = o
        return {"$": "array", "key": key}
    if isinstance(o, np.generic):
        return {"$": "scalar", "dtype": o.dtype.str, "value": o.item()}
    if isinstance(o, list):
        return [_encode(v, arrays, classes, f"{where}[{i}]") for i, v in enumerate(o)]
    if isinstance(o, tuple):
        return {"$": "tuple",
                "items": [_encode(v, arrays, classes, f"{where}[{i}]") for i, v in enumerate(o)]}
    if isinstance(o, dict):
        return {"$": "dict", "items": [[_encode(k, arrays, classes, where),
                                        _encode(v, arrays, classes, f"{where}[{k!r}]")]
                                       for k, v in o.items()]}
    if sp.issparse(o):
        m = sp.csr_matrix(o)
        return {"$": "csr", "shape": list(m.shape),
                **{name: _encode(getattr(m, name), arrays, classes, where)
                   for name in ("data", "indices", "indptr")}}
    if isinstance(o, np.random.Generator):
        return {"$": "rng", "state": _encode(o.bit_generator.state, arrays, classes, where)}
    name = type(o).__name__
    if classes.get(name) is type(o):
        return {"$": "object", "class": name,
                "state": {k: _encode(v, arrays, classes, f"{where}.{k}")
                          for k, v in vars(o).items()}}
    raise DataFormatError(f"cannot save {where}: values of type {type(o).__name__} are not "
                          "storable in a model file")


def load_streaming_model(data: bytes, where: str):
    """Rebuild a streaming learner from the bytes of its .npz file.

    Raises:
        DataFormatError: truncated, corrupt, another format or version, or a class that is
            not allow-listed.
    """
    return unpack_objects(data, _streaming_classes(), STREAM_FORMAT, STREAM_VERSION,
                          where)[0]


def unpack_objects(data: bytes, classes: dict[str, type], fmt: str, version: int,
                   where: str) -> tuple[object, dict]:
    """Inverse of ``pack_objects``: ``(obj, header)``, loaded with ``allow_pickle=False``.

    Raises:
        DataFormatError: truncated, corrupt, another format or version, or a class not in
            ``classes``.
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise DataFormatError(f"{where}: not a readable .npz file ({e}); the file is "
                              "truncated or corrupt") from None
    if "header" not in arrays:
        raise DataFormatError(f"{where}: no 'header' entry; not a {fmt} file")
    try:
        header = _json(arrays.pop("header").tobytes().decode(), where)
    except UnicodeDecodeError:
        raise DataFormatError(f"{where}: its header is not UTF-8 text; the file is corrupt "
                              "or not a model file") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise DataFormatError(f"{where}: not a {fmt} file")
    if header.get("version") != version:
        raise DataFormatError(f"{where}: {fmt} version {header.get('version')!r}; this "
                              f"randsvm-dist reads version {version}")
    try:
        return _decode(header["model"], arrays, classes, where), header
    except DataFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
        raise DataFormatError(f"{where}: malformed header ({type(e).__name__}: "
                              f"{str(e)[:200]})") from None


def _decode(node, arrays: dict, classes: dict, where: str):
    if isinstance(node, list):
        return [_decode(v, arrays, classes, where) for v in node]
    if not isinstance(node, dict):
        return node
    tag = node["$"]
    if tag == "array":
        if node["key"] not in arrays:
            raise DataFormatError(f"{where}: array {node['key']!r} is missing; the file is "
                                  "truncated or corrupt")
        return arrays[node["key"]]
    if tag == "scalar":
        return np.dtype(node["dtype"]).type(node["value"])
    if tag == "tuple":
        return tuple(_decode(v, arrays, classes, where) for v in node["items"])
    if tag == "dict":
        return {_decode(k, arrays, classes, where): _decode(v, arrays, classes, where)
                for k, v in node["items"]}
    if tag == "csr":
        parts = [_decode(node[k], arrays, classes, where) for k in ("data", "indices", "indptr")]
        return sp.csr_matrix(tuple(parts), shape=tuple(node["shape"]))
    if tag == "rng":
        state = _decode(node["state"], arrays, classes, where)
        if state.get("bit_generator") not in _BIT_GENERATORS:
            raise DataFormatError(f"{where}: unknown bit generator "
                                  f"{state.get('bit_generator')!r}")
        bit_gen = getattr(np.random, state["bit_generator"])()
        bit_gen.state = state
        return np.random.Generator(bit_gen)
    if tag == "object":
        cls = classes.get(node["class"])
        if cls is None:
            raise DataFormatError(f"{where}: class {node['class']!r} is not a model kind "
                                  "randsvm-dist loads")
        obj = cls.__new__(cls)
        obj.__dict__.update({k: _decode(v, arrays, classes, where)
                             for k, v in node["state"].items()})
        return obj
    raise DataFormatError(f"{where}: unknown entry {tag!r} in the model header")


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
    if data.startswith(b"PK"):
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                return "header" in z.files
        except (zipfile.BadZipFile, ValueError, OSError, EOFError):
            return False
    return data.startswith(b"svm_type") and (META_TAG.encode() in data)
