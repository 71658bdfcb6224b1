"""svm-scale's range files (``svm-scale -s``/``-r``): the per-feature min/max a scaling
was learnt from, written and read exactly as svm-scale does."""

from __future__ import annotations

import logging
import os
from typing import NoReturn

import numpy as np

from randsvm_dist.exceptions import DataFormatError

log = logging.getLogger("randsvm_dist")


def write_range_file(path: str | os.PathLike, lower: float, upper: float,
                     feature_min, feature_max) -> None:
    """Write svm-scale's ``-s`` file: ``x``, ``lower upper``, then ``index min max`` lines.

    Indices are 1-based (feature j is ``j + 1``); constant features (min == max) are left
    out, as svm-scale does. Numbers use ``%.16g``, svm-scale's own format.
    """
    lines = ["x", f"{lower:.16g} {upper:.16g}"]
    for j, (a, b) in enumerate(zip(feature_min, feature_max, strict=True)):
        if a != b:
            lines.append(f"{j + 1} {a:.16g} {b:.16g}")
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def read_range_file(path: str | os.PathLike, n_features: int | None = None):
    """Read svm-scale's range file (``-s``/``-r`` format).

    A leading ``y`` section (target scaling, for regression) is read past and ignored.
    Features the file does not list are constant (svm-scale left them out) and map to 0.

    Args:
        path: the file.
        n_features: feature count (default: the highest index in the file).

    Returns:
        (lower, upper, feature_min, feature_max) with float64 arrays of n_features.

    Raises:
        DataFormatError: not a range file, naming the line and what was expected.
    """
    path = os.fspath(path)
    with open(path) as fh:
        lines = [(k + 1, ln.split()) for k, ln in enumerate(fh) if ln.strip()]

    pos, lower, upper = _x_header(path, lines)
    entries = {}
    for lineno, tok in lines[pos + 2:]:
        try:
            idx, a, b = int(tok[0]), float(tok[1]), float(tok[2])
            if len(tok) != 3 or idx < 1:
                raise ValueError
        except (ValueError, IndexError):
            _fail(path, lineno, f"'index min max' with index >= 1; got {' '.join(tok)!r}")
        entries[idx] = (a, b)
    top = max(entries, default=0)
    d = top if n_features is None else int(n_features)
    if top > d:
        raise DataFormatError(f"{path}: lists feature {top}, beyond n_features={d}")
    fmin, fmax = np.zeros(d), np.zeros(d)
    for idx, (a, b) in entries.items():
        fmin[idx - 1], fmax[idx - 1] = a, b
    return lower, upper, fmin, fmax


def _fail(path: str, lineno: int, what: str) -> NoReturn:
    """Raise a DataFormatError naming the file, the line and what was expected."""
    raise DataFormatError(f"{path}, line {lineno}: expected {what}")


def _x_header(path: str, lines: list) -> tuple[int, float, float]:
    """(position of the 'x' line, lower, upper) of a range file's non-blank ``lines``
    ((line number, tokens)), past a leading 'y' section.

    Raises:
        DataFormatError: no 'x' line, or no 'lower upper' after it.
    """
    pos = 0
    if lines and lines[0][1] == ["y"]:
        if len(lines) < 3:
            _fail(path, len(lines), "the y section: 'y', 'y_lower y_upper', 'y_min y_max'")
        log.info("%s: ignoring its y (target) scaling: targets are not scaled", path)
        pos = 3
    if pos >= len(lines) or lines[pos][1] != ["x"]:
        _fail(path, lines[pos][0] if pos < len(lines) else 1, "a line holding 'x'")
    if pos + 1 >= len(lines):
        _fail(path, lines[pos][0] + 1, "'lower upper'")
    lineno, tok = lines[pos + 1]
    try:
        lower, upper = (float(t) for t in tok)
    except ValueError:
        _fail(path, lineno, f"'lower upper' (two numbers); got {' '.join(tok)!r}")
    return pos, lower, upper
