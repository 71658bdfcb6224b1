"""Parse LIBSVM/svmlight text (``label index:value ...``, 1-based ascending indices).

The fast path parses a whole chunk of lines with vectorized Arrow kernels (split, cast) and
numpy checks. Any failure re-parses the chunk line by line in Python, which finds the first
bad line and names it: ``file:line: what was found; what was expected``. ``#`` comments and
``qid:`` tokens (svmlight ranking files) are ignored; blank lines are skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from randsvm_dist.data.textio import Chunk, data_line_mask, split_lines
from randsvm_dist.exceptions import DataFormatError

_F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class ParsedChunk:
    """Rows of one chunk: labels (float64), CSR pieces (0-based int32 indices, float32)."""

    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    lines: np.ndarray  # 1-based line number of each row

    @property
    def n_rows(self) -> int:
        """Number of rows parsed."""
        return len(self.labels)

    @property
    def max_index(self) -> int:
        """Largest 0-based feature index (-1 when there are no features)."""
        return int(self.indices.max()) if self.indices.size else -1


def parse_chunk(chunk: Chunk, path: str) -> ParsedChunk:
    """Parse one chunk of svmlight lines.

    Returns:
        ParsedChunk.

    Raises:
        DataFormatError: a malformed line: bad token, non-numeric label/index/value, index
            below 1, indices not strictly ascending, NaN/inf or a value beyond float32 range;
            the message names ``path`` and the line.
    """
    try:
        return _parse_fast(chunk)
    except (pa.ArrowInvalid, _Bad, ValueError, OverflowError):
        pass
    _parse_slow(chunk, path)  # raises with the exact line
    raise DataFormatError(  # pragma: no cover - the slow parser always finds the fault
        f"{path}: lines {chunk.first_line}-{chunk.first_line + chunk.n_lines - 1}: "
        "malformed svmlight data")


class _Bad(Exception):
    """The fast path saw something wrong; the slow path will say what and where."""


def _parse_fast(chunk: Chunk) -> ParsedChunk:
    lines = split_lines(chunk.data)
    if b"#" in chunk.data:
        lines = pc.replace_substring_regex(lines, "#[^\\n]*", "")
    if b"qid:" in chunk.data:
        lines = pc.replace_substring_regex(lines, r"(^|\s)qid:\S*", " ")
    keep = data_line_mask(lines, comment=None)
    line_no = np.flatnonzero(keep) + chunk.first_line
    toks = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(lines.filter(pa.array(keep))))
    labels = pc.list_element(toks, 0).cast(pa.float64()).to_numpy(zero_copy_only=False)
    rest = pc.list_slice(toks, 1)
    off = rest.offsets.to_numpy()
    indptr = (off - off[0]).astype(np.int64)
    flat = rest.flatten()
    parts = pc.split_pattern(flat, ":", max_splits=1)
    if len(flat) and pc.min(pc.list_value_length(parts)).as_py() != 2:
        raise _Bad
    idx = pc.list_element(parts, 0) if len(flat) else pa.array([], pa.string())
    val = pc.list_element(parts, 1) if len(flat) else pa.array([], pa.string())
    idx = idx.cast(pa.int32()).to_numpy(zero_copy_only=False)
    val = val.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if not np.isfinite(labels).all():
        raise _Bad
    if idx.size:
        if idx.min() < 1:
            raise _Bad
        # Strictly ascending within each row: every step goes up, except into a row start.
        up = np.diff(idx) > 0
        starts = indptr[1:-1]
        starts = starts[(starts > 0) & (starts < idx.size)]
        up[starts - 1] = True
        if not up.all():
            raise _Bad
        if not np.isfinite(val).all() or max(-val.min(), val.max()) > _F32_MAX:
            raise _Bad
    idx = idx - 1  # Arrow-backed arrays are read-only
    return ParsedChunk(labels, indptr, idx, val.astype(np.float32), line_no)


def _parse_slow(chunk: Chunk, path: str) -> None:
    """Check each line in Python; raise DataFormatError at the first bad one."""
    for k, raw in enumerate(chunk.data.split(b"\n")):
        line_no = chunk.first_line + k
        where = f"{path}:{line_no}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DataFormatError(f"{where}: not UTF-8 text; expected "
                                  "'label index:value ...'") from None
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        label = tokens[0]
        try:
            y = float(label)
        except ValueError:
            raise DataFormatError(f"{where}: label {label!r} is not a number; expected "
                                  "'label index:value ...'") from None
        if not math.isfinite(y):
            raise DataFormatError(f"{where}: label {label!r} is NaN or infinite; expected "
                                  "a finite number")
        prev = 0
        for tok in tokens[1:]:
            if not tok.startswith("qid:"):
                prev = _check_feature(tok, prev, where)


def _check_feature(tok: str, prev: int, where: str) -> int:
    """Check one ``index:value`` token after index ``prev``; returns its index.

    Raises:
        DataFormatError: not index:value, an index not a 1-based int32 above ``prev``, or a
            value that is not a finite float32.
    """
    if ":" not in tok:
        raise DataFormatError(f"{where}: token {tok!r} is not index:value")
    si, sv = tok.split(":", 1)
    try:
        i = int(si)
    except ValueError:
        raise DataFormatError(f"{where}: index {si!r} in {tok!r} is not an integer; "
                              "expected index:value with a 1-based integer index"
                              ) from None
    if i < 1:
        raise DataFormatError(f"{where}: index {i} in {tok!r}; indices are 1-based "
                              "(expected >= 1)")
    if i > np.iinfo(np.int32).max:
        raise DataFormatError(f"{where}: index {i} is too large (above 2^31-1)")
    if i <= prev:
        what = "repeated" if i == prev else f"descending (after {prev})"
        raise DataFormatError(f"{where}: index {i} is {what}; expected strictly "
                              "ascending indices")
    try:
        v = float(sv)
    except ValueError:
        raise DataFormatError(f"{where}: value {sv!r} of index {i} is not a number"
                              ) from None
    if not math.isfinite(v):
        raise DataFormatError(f"{where}: value {sv!r} of index {i} is NaN or "
                              "infinite; expected a finite number")
    if abs(v) > _F32_MAX:
        raise DataFormatError(f"{where}: value {sv!r} of index {i} overflows float32")
    return i
