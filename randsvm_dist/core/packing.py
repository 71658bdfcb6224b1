"""Plain data and allow-listed objects as one .npz (a JSON header plus arrays), no pickle.

Used by the checkpoints of the driver and by the streaming learners' model files: what a
file can rebuild is the allow-list of classes the caller passes, so loading never runs
code named by the file.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable

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


def _encode(o: object, arrays: dict[str, np.ndarray], classes: dict[str, type],
            where: str) -> object:
    """One value as JSON-able data (``_ENCODERS`` says how, by kind).

    Args:
        o: the value.
        arrays: the file's arrays by key; the value's arrays are added under new keys.
        classes: the allow-list of classes, by name.
        where: the value's name in messages (``model[2].state``).

    Returns:
        ``o`` itself for None, bools, numbers and strings; else a tagged dict or a list.

    Raises:
        DataFormatError: a value of a type not storable.
    """
    if o is None or isinstance(o, (bool, int, float)) or type(o) is str:
        return o
    for is_kind, encode in _ENCODERS:
        if is_kind(o):
            return encode(o, arrays, classes, where)
    return _encode_object(o, arrays, classes, where)


def _encode_array(o: np.ndarray, arrays: dict[str, np.ndarray], classes: dict[str, type],
                  where: str) -> dict:
    """An array stored under a new key (arrays of strings only, of Python objects).

    Returns:
        ``{"$": "array", "key": key}``.

    Raises:
        DataFormatError: an object array holding anything but strings.
    """
    if o.dtype == object:
        if not all(isinstance(v, str) for v in o.ravel()):
            raise DataFormatError(f"cannot save {where}: an array of Python objects")
        o = o.astype(str)
    key = f"a{len(arrays)}"
    arrays[key] = o
    return {"$": "array", "key": key}


def _encode_scalar(o: np.generic, arrays: dict[str, np.ndarray], classes: dict[str, type],
                   where: str) -> dict:
    """A numpy scalar with its dtype. Returns ``{"$": "scalar", "dtype", "value"}``."""
    return {"$": "scalar", "dtype": o.dtype.str, "value": o.item()}


def _encode_items(items, arrays: dict[str, np.ndarray], classes: dict[str, type],
                  where: str) -> list:
    """The items of a list or tuple, each named ``where[i]``.

    Returns:
        their encodings, in order.

    Raises:
        DataFormatError: an item not storable.
    """
    return [_encode(v, arrays, classes, f"{where}[{i}]") for i, v in enumerate(items)]


def _encode_tuple(o: tuple, arrays: dict[str, np.ndarray], classes: dict[str, type],
                  where: str) -> dict:
    """A tuple (told apart from a list). Returns ``{"$": "tuple", "items"}``.

    Raises:
        DataFormatError: an item not storable.
    """
    return {"$": "tuple", "items": _encode_items(o, arrays, classes, where)}


def _encode_dict(o: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                 where: str) -> dict:
    """A dict with keys of any storable type. Returns ``{"$": "dict", "items": [[k, v]]}``.

    Raises:
        DataFormatError: a key or value not storable.
    """
    return {"$": "dict", "items": [[_encode(k, arrays, classes, where),
                                    _encode(v, arrays, classes, f"{where}[{k!r}]")]
                                   for k, v in o.items()]}


def _encode_csr(o, arrays: dict[str, np.ndarray], classes: dict[str, type],
                where: str) -> dict:
    """A sparse matrix as CSR. Returns ``{"$": "csr", "shape", "data", "indices",
    "indptr"}``."""
    m = sp.csr_matrix(o)
    return {"$": "csr", "shape": list(m.shape),
            **{name: _encode(getattr(m, name), arrays, classes, where)
               for name in ("data", "indices", "indptr")}}


def _encode_rng(o: np.random.Generator, arrays: dict[str, np.ndarray],
                classes: dict[str, type], where: str) -> dict:
    """A Generator by its bit generator's state. Returns ``{"$": "rng", "state"}``."""
    return {"$": "rng", "state": _encode(o.bit_generator.state, arrays, classes, where)}


def _encode_object(o: object, arrays: dict[str, np.ndarray], classes: dict[str, type],
                   where: str) -> dict:
    """An instance of an allow-listed class by its attributes.

    Returns:
        ``{"$": "object", "class": name, "state": {attribute: encoding}}``.

    Raises:
        DataFormatError: its class is not in ``classes`` (nor another storable kind).
    """
    name = type(o).__name__
    if classes.get(name) is not type(o):
        raise DataFormatError(f"cannot save {where}: values of type {name} are not "
                              "storable in a model file")
    return {"$": "object", "class": name,
            "state": {k: _encode(v, arrays, classes, f"{where}.{k}")
                      for k, v in vars(o).items()}}


# (is this kind?, its encoder), tried in order; anything else must be an allow-listed object
_ENCODERS: tuple[tuple[Callable[[object], bool], Callable[..., object]], ...] = (
    (lambda o: isinstance(o, np.ndarray), _encode_array),
    (lambda o: isinstance(o, np.generic), _encode_scalar),
    (lambda o: isinstance(o, list), _encode_items),
    (lambda o: isinstance(o, tuple), _encode_tuple),
    (lambda o: isinstance(o, dict), _encode_dict),
    (sp.issparse, _encode_csr),
    (lambda o: isinstance(o, np.random.Generator), _encode_rng),
)


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


def _decode(node: object, arrays: dict[str, np.ndarray], classes: dict[str, type],
            where: str) -> object:
    """Inverse of ``_encode``: the value one header entry stands for (``_DECODERS`` says
    how, by tag).

    Args:
        node: the entry (plain JSON, a list, or a tagged dict).
        arrays: the file's arrays by key.
        classes: the allow-list of classes, by name.
        where: the file name for messages.

    Returns:
        the value.

    Raises:
        DataFormatError: an unknown tag, a missing array, an unknown bit generator or a
            class not in ``classes``; KeyError, TypeError, ValueError: a malformed entry
            (``unpack_objects`` reports them as one).
    """
    if isinstance(node, list):
        return [_decode(v, arrays, classes, where) for v in node]
    if not isinstance(node, dict):
        return node
    tag = node["$"]
    decode = _DECODERS.get(tag) if isinstance(tag, str) else None
    if decode is None:
        raise DataFormatError(f"{where}: unknown entry {tag!r} in the model header")
    return decode(node, arrays, classes, where)


def _decode_array(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                  where: str) -> np.ndarray:
    """The array stored under ``node["key"]``.

    Raises:
        DataFormatError: no such array (the file is truncated or corrupt).
    """
    if node["key"] not in arrays:
        raise DataFormatError(f"{where}: array {node['key']!r} is missing; the file is "
                              "truncated or corrupt")
    return arrays[node["key"]]


def _decode_scalar(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                   where: str) -> np.generic:
    """A numpy scalar of the stored dtype. Raises TypeError for an unknown dtype."""
    return np.dtype(node["dtype"]).type(node["value"])


def _decode_tuple(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                  where: str) -> tuple:
    """A tuple of the decoded items. Raises DataFormatError: see ``_decode``."""
    return tuple(_decode(v, arrays, classes, where) for v in node["items"])


def _decode_dict(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                 where: str) -> dict:
    """A dict of the decoded key-value pairs. Raises DataFormatError: see ``_decode``."""
    return {_decode(k, arrays, classes, where): _decode(v, arrays, classes, where)
            for k, v in node["items"]}


def _decode_csr(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                where: str) -> sp.csr_matrix:
    """A CSR matrix from its stored parts. Raises DataFormatError: see ``_decode``."""
    parts = [_decode(node[k], arrays, classes, where) for k in ("data", "indices", "indptr")]
    return sp.csr_matrix(tuple(parts), shape=tuple(node["shape"]))


def _decode_rng(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                where: str) -> np.random.Generator:
    """A Generator in the stored state of one of numpy's bit generators.

    Raises:
        DataFormatError: a bit generator not in ``_BIT_GENERATORS``.
    """
    state = _decode(node["state"], arrays, classes, where)
    if state.get("bit_generator") not in _BIT_GENERATORS:
        raise DataFormatError(f"{where}: unknown bit generator "
                              f"{state.get('bit_generator')!r}")
    bit_gen = getattr(np.random, state["bit_generator"])()
    bit_gen.state = state
    return np.random.Generator(bit_gen)


def _decode_object(node: dict, arrays: dict[str, np.ndarray], classes: dict[str, type],
                   where: str) -> object:
    """An instance of an allow-listed class with the stored attributes (its ``__init__``
    is not run).

    Raises:
        DataFormatError: the class is not in ``classes``.
    """
    cls = classes.get(node["class"])
    if cls is None:
        raise DataFormatError(f"{where}: class {node['class']!r} is not a model kind "
                              "randsvm-dist loads")
    obj = cls.__new__(cls)
    obj.__dict__.update({k: _decode(v, arrays, classes, where)
                         for k, v in node["state"].items()})
    return obj


_DECODERS: dict[str, Callable[..., object]] = {
    "array": _decode_array, "scalar": _decode_scalar, "tuple": _decode_tuple,
    "dict": _decode_dict, "csr": _decode_csr, "rng": _decode_rng, "object": _decode_object,
}
