"""The support-vector lines of a LIBSVM model file: format and parse them, check our
marker, build the SV matrix.

A file we write carries a marker on its ``SV`` line that stock LIBSVM skips:
``SV randsvm-dist total_sv=N sha256=<digest of the SV lines>`` (``libsvm_text`` explains
the file's integrity checks).
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import DataFormatError

SV_MARK = "randsvm-dist"


def sv_marker_line(body: str, n_sv: int) -> str:
    """Our ``SV`` line for the SV lines ``body`` (``n_sv`` of them, each ending in a
    newline): ``SV randsvm-dist total_sv=N sha256=<digest of body>``."""
    digest = hashlib.sha256(body.encode()).hexdigest()
    return f"SV {SV_MARK} total_sv={n_sv} sha256={digest}"


def float_text(v: float) -> str:
    """``v`` as the model file writes a float64: 17 significant digits (round-trips)."""
    return f"{float(v):.17g}"


def _format_row(row) -> str:
    """``index:value`` pairs of one row (1-based), each value written exactly: 9
    significant digits round-trip a float32, 17 a float64."""
    if sp.issparse(row):
        idx, val = row.indices, row.data
    else:
        row = np.asarray(row).ravel()
        idx = np.flatnonzero(row)
        val = row[idx]
    fmt = "%d:%.9g" if val.dtype.itemsize <= 4 else "%d:%.17g"
    return " ".join([fmt % p for p in zip((np.asarray(idx) + 1).tolist(), val.tolist())])


def format_sv_lines(coef: np.ndarray, sv) -> str:
    """The SV lines of a model file: each SV's coefficients (17 significant digits) then
    its nonzero ``index:value`` pairs.

    Args:
        coef: (n_sv, n_cols) float64 coefficients.
        sv: (n_sv, n_features) ndarray or CSR, the support vectors in file order.

    Returns:
        the lines, each ending with a newline.
    """
    return "".join(" ".join(float_text(c) for c in coef[i]) + " " + _format_row(sv[i])
                   + "\n" for i in range(coef.shape[0]))


def parse_sv_lines(body: list[str], cols: int, where: str, first_lineno: int):
    """The SV lines as arrays (a vectorised parse was measured no faster: the float
    conversion dominates).

    Returns:
        (coef (n, cols) float64, indptr (n+1,) int64, indices int64 (0-based), values
        float64).

    Raises:
        DataFormatError: a malformed line (number and text in the message).
    """
    coefs: list[list[float]] = []
    indptr, indices, values = [0], [], []
    for lineno, line in enumerate(body, first_lineno):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) < cols or any(":" in p for p in parts[:cols]):
                raise ValueError
            coefs.append([float(p) for p in parts[:cols]])
            last = 0
            for tok in parts[cols:]:
                i, v = tok.split(":")
                i = int(i)
                if i <= last:
                    raise ValueError
                last = i
                indices.append(i - 1)
                values.append(float(v))
        except ValueError:
            raise DataFormatError(
                f"{where}, line {lineno}: expected {cols} coefficient(s) then ascending "
                f"'index:value' pairs; got {line[:80]!r}") from None
        indptr.append(len(indices))
    return (np.asarray(coefs, np.float64).reshape(-1, cols), np.asarray(indptr, np.int64),
            np.asarray(indices, np.int64), np.asarray(values, np.float64))


def check_sv_marker(mark: list[str], body: list[str], n_lines: int, where: str) -> None:
    """Check the SV count and digest our marker (``mark``: the words after ``SV``)
    promises against the SV lines ``body`` (``n_lines`` read); text after ``SV`` that is
    not our marker is ignored, as LIBSVM ignores it.

    Raises:
        DataFormatError: a count or digest mismatch (the file is truncated or corrupt).
    """
    if mark[0] != SV_MARK:
        return
    fields = dict(p.split("=", 1) for p in mark[1:] if "=" in p)
    text = "".join(s + "\n" for s in body if s.strip())
    if fields.get("total_sv") != str(n_lines) or \
            hashlib.sha256(text.encode()).hexdigest() != fields.get("sha256"):
        raise DataFormatError(f"{where}: the support-vector lines do not match their "
                              f"checksum (total_sv={fields.get('total_sv')}, "
                              f"{n_lines} read); the file is truncated or corrupt")


def sv_matrix(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
              n_features: int | None, where: str) -> sp.csr_matrix:
    """The SVs as a float32 CSR matrix from ``parse_sv_lines``' arrays.

    Args:
        indptr, indices, values: as ``parse_sv_lines`` returns them.
        n_features: the matrix's column count (default: the highest index seen).
        where: the file name for messages.

    Raises:
        DataFormatError: a feature index beyond int32 or beyond ``n_features``.
    """
    top = int(indices.max()) + 1 if len(indices) else 0
    if top >= 2**31:
        raise DataFormatError(f"{where}: feature index {top} is out of range (at most "
                              f"{2**31 - 1})")
    d = top if n_features is None else n_features
    if top > d:
        raise DataFormatError(f"{where}: feature index {top} exceeds the model's {d} "
                              "features")
    return sp.csr_matrix((values.astype(np.float32), indices.astype(np.int32), indptr),
                         shape=(len(indptr) - 1, d))
