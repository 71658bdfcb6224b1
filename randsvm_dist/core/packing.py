"""Plain data and allow-listed objects as one .npz (a JSON header plus arrays), no pickle.

Used by the checkpoints of the driver and by the streaming learners' model files: what a
file can rebuild is the allow-list of classes the caller passes, so loading never runs
code named by the file.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import DataFormatError

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


def parse_json(text: str, where: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise DataFormatError(f"{where}: metadata is not valid JSON ({e})") from None


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
        header = parse_json(arrays.pop("header").tobytes().decode(), where)
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
