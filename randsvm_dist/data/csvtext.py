"""Parse numeric CSV text (one row per line) into features and labels.

The fast path reads a chunk with ``pyarrow.csv``; any failure re-parses the chunk line by
line with Python's ``csv`` module to name the first bad line and field. Quoted fields may
not span lines (numeric data never needs that). Empty lines are skipped.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from randsvm_dist.data.textio import Chunk, split_lines
from randsvm_dist.exceptions import DataFormatError, SchemaError

LABEL_NAMES = ("label", "class", "target", "y")
log = logging.getLogger("randsvm_dist")


@dataclass
class CsvLayout:
    """Where things are in the file: column names, label position, header, delimiter."""

    names: list[str]
    label_index: int | None  # None: no label column (``label_column='none'``)
    has_header: bool
    delimiter: str

    @property
    def feature_indices(self) -> list[int]:
        """0-based positions of the feature columns, in file order."""
        return [j for j in range(len(self.names)) if j != self.label_index]

    @property
    def labelled(self) -> bool:
        """Whether a column holds labels (else every row's label is written as 0)."""
        return self.label_index is not None

    @property
    def feature_names(self) -> list[str]:
        """Names of the feature columns (header names, or c0, c1, ...)."""
        return [self.names[j] for j in self.feature_indices]


@dataclass
class CsvRows:
    """Rows of one chunk: X float32 (n, d), labels float64 (or str objects), line numbers."""

    X: np.ndarray
    labels: np.ndarray
    lines: np.ndarray


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def detect_layout(first_line: bytes, path: str, *, header="auto", delimiter: str = ",",
                  label_column: str | int | None = None) -> CsvLayout:
    """Work out the columns from the first line.

    Args:
        first_line: the file's first line (bytes).
        path: the file name, for messages.
        header: True, False, or "auto" (a header when some field of line 1 is not a number).
        delimiter: field separator.
        label_column: the label's name (needs a header) or 0-based index (negative counts
            from the end); 'none': no label column (every column a feature, every label
            written as 0: data for ``predict``); None: a column named label/class/target/y,
            else the first column, said on the ``randsvm_dist`` logger.

    Raises:
        DataFormatError: the first line is not text.
        SchemaError: the label column is not there, or there are fewer than two columns.
    """
    try:
        text = first_line.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise DataFormatError(f"{path}:1: not UTF-8 text") from None
    fields = next(csv.reader([text], delimiter=delimiter))
    if header == "auto":
        has_header = any(not _is_number(f) for f in fields)
    else:
        has_header = bool(header)
    ncols = len(fields)
    names = [f.strip() for f in fields] if has_header else [f"c{j}" for j in range(ncols)]
    label_index = _label_index(path, names, has_header, label_column)
    if ncols < 2 and label_index is not None:
        raise SchemaError(f"{path}:1: {ncols} column(s) with delimiter {delimiter!r}; expected "
                          "a label column and at least one feature column (data without "
                          "labels: label column 'none')")
    return CsvLayout(names, label_index, has_header, delimiter)


def _label_index(path: str, names: list[str], has_header: bool,
                 label_column: str | int | None) -> int | None:
    """The label's column among ``names``: named (needs a header), by 0-based index
    (negative counts from the end), or by default a column named label/class/target/y,
    else the first.

    Raises:
        SchemaError: the named column is not there (or there is no header), or the index
            is out of range.
    """
    ncols = len(names)
    if isinstance(label_column, str) and label_column.lower() == "none" \
            and label_column not in names:
        return None
    if label_column is None:
        lower = [n.lower() for n in names]
        hit = [lower.index(n) for n in LABEL_NAMES if has_header and n in lower]
        if not hit:
            log.info("%s: no column named %s: the first column %r is taken as the label "
                     "(name the label column, or 'none' for data without labels: "
                     "--label-column)", path, "/".join(LABEL_NAMES), names[0])
        return hit[0] if hit else 0
    if isinstance(label_column, int) or (isinstance(label_column, str)
                                         and label_column.lstrip("-").isdigit()
                                         and label_column not in names):
        label_index = int(label_column)
        if not -ncols <= label_index < ncols:
            raise SchemaError(f"{path}: label column index {label_index} out of range; the "
                              f"file has {ncols} columns")
        return label_index % ncols
    if not has_header:
        raise SchemaError(f"{path}: label column {label_column!r} named, but the file has "
                          "no header line; give its 0-based index instead")
    if label_column not in names:
        raise SchemaError(f"{path}:1: no column {label_column!r} in the header {names}")
    return names.index(label_column)


def parse_chunk(chunk: Chunk, path: str, layout: CsvLayout, *, skip_first: bool = False
                ) -> CsvRows:
    """Parse one chunk of CSV lines.

    Args:
        chunk: the lines.
        path: the file name, for messages.
        layout: from :func:`detect_layout`.
        skip_first: the chunk's first line is the header.

    Returns:
        CsvRows; labels float64 when every label of the chunk is a number, else str objects.

    Raises:
        DataFormatError: wrong field count, a non-numeric or empty feature, NaN/inf, a
            feature beyond float32 range, an empty label; names the line and the column.
    """
    try:
        return _parse_fast(chunk, layout, skip_first)
    except (pa.ArrowInvalid, _Bad, ValueError):
        pass
    _parse_slow(chunk, path, layout, skip_first)
    raise DataFormatError(  # pragma: no cover - the slow parser always finds the fault
        f"{path}: lines {chunk.first_line}-{chunk.first_line + chunk.n_lines - 1}: "
        "malformed CSV data")


class _Bad(Exception):
    pass


_F32_MAX = float(np.finfo(np.float32).max)


def _parse_fast(chunk: Chunk, layout: CsvLayout, skip_first: bool) -> CsvRows:
    cols = [f"c{j}" for j in range(len(layout.names))]
    lab = cols[layout.label_index] if layout.labelled else None
    types = {c: pa.float64() for c in cols}
    if lab is not None:
        types[lab] = pa.string()
    table = pacsv.read_csv(
        io.BytesIO(chunk.data),
        read_options=pacsv.ReadOptions(column_names=cols, skip_rows=1 if skip_first else 0,
                                       block_size=max(1 << 20, len(chunk.data) + 1)),
        parse_options=pacsv.ParseOptions(delimiter=layout.delimiter,
                                         newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                             quoted_strings_can_be_null=False),
    )
    lines = split_lines(chunk.data)
    keep = pc.greater(pc.binary_length(pc.utf8_rtrim(lines, "\r\n")), 0).to_numpy(
        zero_copy_only=False)
    if skip_first:
        keep[0] = False
    line_no = np.flatnonzero(keep) + chunk.first_line
    if len(line_no) != table.num_rows:
        raise _Bad
    X = np.empty((len(layout.feature_indices), table.num_rows), dtype=np.float64)
    for k, j in enumerate(layout.feature_indices):
        col = table.column(cols[j])
        if col.null_count:
            raise _Bad
        X[k] = col.to_numpy()
    if not np.isfinite(X).all() or (X.size and np.abs(X).max() > _F32_MAX):
        raise _Bad
    if lab is None:
        return CsvRows(np.ascontiguousarray(X.T, dtype=np.float32),
                       np.zeros(table.num_rows), line_no)
    ycol = pc.utf8_trim_whitespace(table.column(lab).combine_chunks())
    if len(ycol) and pc.min(pc.binary_length(ycol)).as_py() == 0:
        raise _Bad
    try:
        labels = ycol.cast(pa.float64()).to_numpy(zero_copy_only=False)
        if not np.isfinite(labels).all():
            raise _Bad
    except pa.ArrowInvalid:
        labels = np.array(ycol.to_pylist(), dtype=object)
    return CsvRows(np.ascontiguousarray(X.T, dtype=np.float32), labels, line_no)


def _parse_slow(chunk: Chunk, path: str, layout: CsvLayout, skip_first: bool) -> None:
    """Check a chunk the fast parser refused line by line, to name its first bad line.

    Args:
        chunk: the lines.
        path: the file, for the message.
        layout: the CSV's columns.
        skip_first: the chunk's first line is the header.

    Raises:
        DataFormatError: naming the first bad line (see ``_check_line``), or a line that
            is not UTF-8.
    """
    for k, raw in enumerate(chunk.data.split(b"\n")):
        if k == 0 and skip_first:
            continue
        where = f"{path}:{chunk.first_line + k}"
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            raise DataFormatError(f"{where}: not UTF-8 text") from None
        if text:
            _check_line(text, where, layout)


def _check_line(text: str, where: str, layout: CsvLayout) -> None:
    """Check one non-empty CSV line: its field count, its label and every feature.

    Args:
        text: the line, decoded.
        where: "file:line", for the message.
        layout: the CSV's columns.

    Raises:
        DataFormatError: wrong field count, an empty or NaN/infinite label, a feature
            that is empty, not a number, NaN/infinite or beyond float32 range.
    """
    ncols = len(layout.names)
    fields = next(csv.reader([text], delimiter=layout.delimiter))
    if len(fields) != ncols:
        raise DataFormatError(f"{where}: {len(fields)} fields; expected {ncols} "
                              f"(delimiter {layout.delimiter!r})")
    label = fields[layout.label_index].strip() if layout.labelled else "0"
    if not label:
        raise DataFormatError(f"{where}: empty label in column "
                              f"{layout.names[layout.label_index]!r}")
    if _is_number(label) and not math.isfinite(float(label)):
        raise DataFormatError(f"{where}: label {label!r} is NaN or infinite")
    for j in layout.feature_indices:
        _check_feature(fields[j].strip(), f"{where}: feature column {layout.names[j]!r} "
                                          f"(column {j + 1})")


def _check_feature(s: str, where: str) -> None:
    """Check one feature's text: a finite number within float32 range.

    Args:
        s: the field, stripped.
        where: "file:line: feature column NAME (column J)", for the message.

    Raises:
        DataFormatError: empty, not a number, NaN/infinite or beyond float32 range.
    """
    try:
        v = float(s)
    except ValueError:
        what = "empty" if not s else f"{s!r} is not a number"
        raise DataFormatError(f"{where}: {what}; expected a number") from None
    if not math.isfinite(v):
        raise DataFormatError(f"{where}: {s!r} is NaN or infinite; expected a finite number")
    if abs(v) > _F32_MAX:
        raise DataFormatError(f"{where}: {s!r} overflows float32")
