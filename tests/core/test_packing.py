"""core.packing: every storable kind round-trips through one .npz without pickle, and a
value or a header entry it cannot store or rebuild is a one-line DataFormatError."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.core.packing import pack_objects, unpack_objects
from randsvm_dist.exceptions import DataFormatError


class Point:
    """An allow-listed class."""

    def __init__(self, x, label):
        self.x = x
        self.label = label


CLASSES = {"Point": Point}


def round_trip(obj, classes=CLASSES):
    data = pack_objects(obj, classes, "test-format", 2, extra={"note": "n"})
    back, header = unpack_objects(data, classes, "test-format", 2, "t.npz")
    assert header["note"] == "n" and header["format"] == "test-format"
    return back


def crafted(model, arrays=None) -> bytes:
    """An .npz whose header holds ``model`` as its encoded value."""
    header = {"format": "test-format", "version": 2, "model": model}
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(json.dumps(header).encode(), np.uint8),
             **(arrays or {}))
    return buf.getvalue()


def test_every_storable_kind_round_trips():
    rng = np.random.default_rng(7)
    rng.normal(size=3)
    obj = {"none": None, "flag": True, "n": 3, "x": 2.5, "s": "text",
           "array": np.arange(6, dtype=np.float32).reshape(2, 3),
           "strings": np.array(["a", "bc"], dtype=object),
           "scalar": np.int16(-4), "list": [1, [2.0, "z"]], "tuple": (1, ("a", None)),
           5: "int key", ("t", 1): "tuple key",
           "csr": sp.csr_matrix(np.array([[0, 1.5], [2, 0]])),
           "rng": rng, "point": Point(np.ones(2), (0, 1))}
    back = round_trip(obj)
    assert set(back) == set(obj)
    for key in ("none", "flag", "n", "x", "s", "list", "tuple", 5, ("t", 1)):
        assert back[key] == obj[key] and type(back[key]) is type(obj[key])
    np.testing.assert_array_equal(back["array"], obj["array"])
    assert back["array"].dtype == np.float32
    np.testing.assert_array_equal(back["strings"], ["a", "bc"])
    assert back["scalar"] == -4 and back["scalar"].dtype == np.int16
    assert sp.isspmatrix_csr(back["csr"])
    np.testing.assert_array_equal(back["csr"].toarray(), obj["csr"].toarray())
    assert back["rng"].normal() == rng.normal()  # the same state
    assert type(back["point"]) is Point and back["point"].label == (0, 1)
    np.testing.assert_array_equal(back["point"].x, np.ones(2))


class NotListed:
    pass


@pytest.mark.parametrize("obj, match", [
    ({"a": np.array([1, "x"], dtype=object)}, r"cannot save model\['a'\]: an array of "
                                              "Python objects"),
    ([1, {2, 3}], r"cannot save model\[1\]: values of type set"),
    (Point(NotListed(), 0), r"cannot save model.x: values of type NotListed"),
])
def test_values_not_storable_are_refused(obj, match):
    with pytest.raises(DataFormatError, match=match):
        pack_objects(obj, CLASSES, "test-format", 2)


@pytest.mark.parametrize("model, match", [
    ({"$": "nope"}, "unknown entry 'nope'"),
    ({"$": ["array"]}, r"unknown entry \['array'\]"),
    ({"$": "array", "key": "a0"}, "array 'a0' is missing"),
    ({"$": "rng", "state": {"$": "dict", "items": [["bit_generator", "os"]]}},
     "unknown bit generator 'os'"),
    ({"$": "object", "class": "NotListed", "state": {}}, "'NotListed' is not a model kind"),
    ({"$": "tuple"}, "malformed header"),
])
def test_crafted_header_entries_are_one_line_errors(model, match):
    with pytest.raises(DataFormatError, match=match) as e:
        unpack_objects(crafted(model), CLASSES, "test-format", 2, "t.npz")
    assert str(e.value).startswith("t.npz") and "\n" not in str(e.value)
