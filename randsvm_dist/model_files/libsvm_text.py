"""Kernel SVM models in LIBSVM's own model-file format (and our one-vs-rest form).

``LibsvmModel`` mirrors LIBSVM's ``svm_model``: what ``svm_save_model`` writes and
``svm_load_model`` reads.

- ``c_svc`` with k >= 2 classes (one-vs-one): ``nr_class k``, ``total_sv``, ``rho`` per
  pair in LIBSVM's pair order ((0,1), (0,2), ..., (0,k-1), (1,2), ...), ``label`` (k
  integers, LIBSVM's class order), optional ``probA``/``probB`` per pair, ``nr_sv`` per
  class; the support vectors grouped by class in label order, each with k-1 coefficient
  columns (``randsvm_dist.model_files.ovo_layout`` explains and builds the layout). The
  decision value of pair (i, j) is positive towards ``label[i]``.
- ``epsilon_svr`` and ``one_class``: one ``rho``, one coefficient per SV (alpha - alpha*
  for SVR, alpha in LIBSVM's scaling for one-class); f(x) = sum_i coef_i k(sv_i, x) - rho.
  Stock files with ``probA`` (SVR) are read; ``nu_svc``/``nu_svr`` files are read for
  prediction (same layouts).
- ``OVR_SVM_TYPE`` (``randsvm_ovr``), ours: k one-vs-rest models sharing their SVs, k
  coefficient columns (column j: class j against the rest, positive towards ``label[j]``),
  ``rho`` per class. Stock LIBSVM refuses it ("unknown svm type": ``svm_load_model``
  returns None), so it is never mistaken for a one-vs-one model.

Kernels are written with LIBSVM's names (``kernel_type polynomial``; ``poly`` is refused,
as stock LIBSVM refuses it).

Integrity (issue 18): the ``SV`` line of a file we write carries a marker stock LIBSVM
skips (its C, Java, C# and Go readers ignore the rest of the ``SV`` line):
``SV randsvm-dist total_sv=N sha256=<digest of the SV lines>``. ``format_model_file``
appends the trailer ``#randsvm-dist-meta {json}`` and ``#randsvm-dist-end sha256=<digest
of everything before>``. A file cut anywhere is refused: inside the trailer (digest),
inside or right after the SV lines (the marker says a trailer follows, the body digest
fails), in the header (no ``SV`` line). A stock file (no marker) must have ``total_sv`` and
``nr_sv`` equal to the SV lines read, and end with a newline (LIBSVM ends every line with
one; a file cut inside its last SV line does not).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.libsvm_sv_lines import (
    SV_MARK,
    check_sv_marker,
    float_text,
    format_sv_lines,
    parse_sv_lines,
    sv_marker_line,
    sv_matrix,
)
from randsvm_dist.numerics.kernels import Kernel

OVR_SVM_TYPE = "randsvm_ovr"
CLASSIFICATION_TYPES = ("c_svc", "nu_svc")
SINGLE_TYPES = ("epsilon_svr", "nu_svr", "one_class")
SVM_TYPE_NAMES = (*CLASSIFICATION_TYPES, *SINGLE_TYPES, OVR_SVM_TYPE)
KERNEL_TYPE = {"linear": "linear", "poly": "polynomial", "rbf": "rbf", "sigmoid": "sigmoid"}
_KERNEL_OF_TYPE = {v: k for k, v in KERNEL_TYPE.items()}
META_TAG = "#randsvm-dist-meta "
END_TAG = "#randsvm-dist-end sha256="


@dataclass
class LibsvmModel:
    """LIBSVM's ``svm_model`` as arrays (see the module docstring).

    Attributes:
        svm_type: one of ``SVM_TYPE_NAMES``.
        kernel: the kernel.
        support_vectors: (n_sv, n_features) float32 ndarray or CSR, in file order.
        sv_coef: (n_sv, n_cols) float64: k-1 columns (c_svc), 1 (SVR, one-class), k (ovr).
        rho: (n_rho,) float64: one per pair (c_svc), 1 (SVR, one-class), k (ovr).
        labels: class labels in LIBSVM's order (c_svc, ovr), integers; None otherwise.
        n_sv: SVs per class in label order (c_svc); None otherwise.
        prob_a, prob_b: Platt's sigmoid per pair (``probA``/``probB``), or None. SVR files
            may hold ``probA`` alone (LIBSVM's Laplace scale).
    """

    svm_type: str
    kernel: Kernel
    support_vectors: object
    sv_coef: np.ndarray
    rho: np.ndarray
    labels: tuple[int, ...] | None = None
    n_sv: tuple[int, ...] | None = None
    prob_a: np.ndarray | None = None
    prob_b: np.ndarray | None = None

    @property
    def nr_class(self) -> int:
        """LIBSVM's ``nr_class`` (2 for SVR and one-class)."""
        return len(self.labels) if self.labels is not None else 2

    def check(self, where: str = "model") -> None:
        """Check the shapes against each other.

        Raises:
            DataFormatError: an inconsistent model (named by ``where``).
        """
        k = self.nr_class
        n = self.support_vectors.shape[0]
        coef = np.asarray(self.sv_coef)
        if self.svm_type not in SVM_TYPE_NAMES:
            raise DataFormatError(f"{where}: unsupported svm_type {self.svm_type!r}")
        if self.svm_type in SINGLE_TYPES:
            cols, n_rho = 1, 1
        elif self.svm_type == OVR_SVM_TYPE:
            cols, n_rho = k, k
        else:
            cols, n_rho = k - 1, k * (k - 1) // 2
        if self.svm_type not in SINGLE_TYPES and (self.labels is None or k < 2):
            raise DataFormatError(f"{where}: a classification model needs two or more "
                                  "labels")
        if coef.shape != (n, cols):
            raise DataFormatError(f"{where}: {self.svm_type} with {k} classes needs "
                                  f"{cols} coefficient column(s) per SV; got shape "
                                  f"{coef.shape} for {n} SVs")
        if np.shape(self.rho) != (n_rho,):
            raise DataFormatError(f"{where}: expected {n_rho} rho value(s); got "
                                  f"{np.size(self.rho)}")
        if self.svm_type in CLASSIFICATION_TYPES:
            if self.n_sv is None or len(self.n_sv) != k or sum(self.n_sv) != n \
                    or min(self.n_sv) < 0:
                raise DataFormatError(f"{where}: nr_sv {self.n_sv} does not match {n} "
                                      f"SVs of {k} classes")
        for name, p in (("probA", self.prob_a), ("probB", self.prob_b)):
            if p is not None and self.svm_type != "epsilon_svr" and np.shape(p) != (n_rho,):
                raise DataFormatError(f"{where}: expected {n_rho} {name} value(s); got "
                                      f"{np.size(p)}")


# the kernel parameters LIBSVM writes for each kernel, in its order, and how each is written
_KERNEL_PARAMS = {"linear": (), "poly": ("degree", "gamma", "coef0"), "rbf": ("gamma",),
                  "sigmoid": ("gamma", "coef0")}
_PARAM_TEXT = {"degree": lambda v: str(int(v)), "gamma": float_text, "coef0": float_text}


def _kernel_lines(kernel: Kernel) -> list[str]:
    """The header lines of ``kernel``: ``kernel_type`` (LIBSVM's name), then the
    parameters LIBSVM writes for it (``_KERNEL_PARAMS``).

    Raises:
        KeyError: a kernel LIBSVM has no name for.
    """
    return [f"kernel_type {KERNEL_TYPE[kernel.name]}",
            *(f"{name} {_PARAM_TEXT[name](getattr(kernel, name))}"
              for name in _KERNEL_PARAMS[kernel.name])]


def _class_lines(model: LibsvmModel) -> list[str]:
    """The header lines after ``rho`` that ``model`` has: ``label``, ``probA``, ``probB``,
    ``nr_sv``.

    Raises:
        DataFormatError: labels that are not integers.
    """
    lines = []
    if model.labels is not None:
        if any(int(v) != v for v in model.labels):
            raise DataFormatError(f"LIBSVM model files need integer labels; got "
                                  f"{model.labels}")
        lines.append("label " + " ".join(str(int(v)) for v in model.labels))
    for name, p in (("probA", model.prob_a), ("probB", model.prob_b)):
        if p is not None:
            lines.append(f"{name} " + " ".join(float_text(v) for v in np.ravel(p)))
    if model.n_sv is not None:
        lines.append("nr_sv " + " ".join(str(int(v)) for v in model.n_sv))
    return lines


def format_model(model: LibsvmModel, mark: bool = False) -> str:
    """The text of ``model`` in LIBSVM's model-file format.

    Args:
        model: the model.
        mark: put our marker on the ``SV`` line (``SV randsvm-dist total_sv=N
            sha256=...``), which promises a trailer: only ``format_model_file`` sets it.
            Without it the text is exactly what stock LIBSVM would write.

    Returns:
        the text (every line ends with a newline).

    Raises:
        DataFormatError: an inconsistent model or labels that are not integers.
    """
    model.check()
    coef = np.asarray(model.sv_coef, dtype=np.float64)
    head = [f"svm_type {model.svm_type}", *_kernel_lines(model.kernel),
            f"nr_class {model.nr_class}", f"total_sv {coef.shape[0]}",
            "rho " + " ".join(float_text(r) for r in model.rho), *_class_lines(model)]
    body = format_sv_lines(coef, model.support_vectors)
    head.append(sv_marker_line(body, coef.shape[0]) if mark else "SV")
    return "\n".join(head) + "\n" + body


def format_model_file(model: LibsvmModel, meta: dict | None = None) -> str:
    """A complete model file: ``format_model`` with our ``SV`` marker, plus our trailer.

    Args:
        model: the model.
        meta: JSON-serialisable metadata (the caller's allow-listed keys), or None
            ({}): written as ``#randsvm-dist-meta {json}``.

    Returns:
        the text, ending with ``#randsvm-dist-end sha256=<digest of all before>``.

    Raises:
        DataFormatError: see ``format_model``; TypeError: meta not JSON-serialisable.
    """
    text = format_model(model, mark=True) + META_TAG + json.dumps(meta or {}) + "\n"
    return f"{text}{END_TAG}{hashlib.sha256(text.encode()).hexdigest()}\n"


def _values(header: dict, key: str, where: str, n: int | None, convert) -> list:
    """The header line ``key``'s words converted, n of them when n is given.

    Raises:
        DataFormatError: a word does not convert, or the count is not n.
    """
    try:
        vals = [convert(v) for v in header[key]]
    except ValueError:
        raise DataFormatError(f"{where}: malformed '{key}' line: {' '.join(header[key])}") \
            from None
    if n is not None and len(vals) != n:
        raise DataFormatError(f"{where}: '{key}' needs {n} value(s); got {len(vals)}")
    return vals


def _ints(header: dict, key: str, where: str, n: int | None = None) -> list[int]:
    return _values(header, key, where, n, int)


def _floats(header: dict, key: str, where: str, n: int | None = None) -> np.ndarray:
    return np.array(_values(header, key, where, n, float), dtype=np.float64)


def _read_header(lines: list[str], where: str) -> tuple[dict[str, list[str]], list[str], int]:
    """The header (key -> words) up to the ``SV`` line, the words after ``SV`` and the
    ``SV`` line's index; raises DataFormatError when there is no ``SV`` line or a required
    key is missing."""
    sv_at = next((n for n, line in enumerate(lines) if line.split()[:1] == ["SV"]), None)
    if sv_at is None:
        raise DataFormatError(f"{where}: no 'SV' line; not a LIBSVM model file (or "
                              "truncated in its header)")
    header: dict[str, list[str]] = {}
    for line in lines[:sv_at]:
        parts = line.split()
        if parts:
            header[parts[0]] = parts[1:]
    missing = [k for k in ("svm_type", "kernel_type", "total_sv", "rho") if k not in header]
    if missing:
        raise DataFormatError(f"{where}: header lacks {', '.join(missing)}; not a complete "
                              "LIBSVM model file")
    return header, lines[sv_at].split()[1:], sv_at


def _svm_type_and_kernel(header: dict[str, list[str]], where: str) -> tuple[str, Kernel]:
    """The header's svm_type and kernel; raises DataFormatError for an unknown one or
    malformed kernel parameters."""
    svm_type = (header["svm_type"] or [""])[0]
    if svm_type not in SVM_TYPE_NAMES:
        raise DataFormatError(f"{where}: unsupported svm_type {svm_type!r} (expected one of "
                              f"{', '.join(SVM_TYPE_NAMES)})")
    kname = (header["kernel_type"] or [""])[0]
    if kname not in _KERNEL_OF_TYPE:
        raise DataFormatError(f"{where}: unsupported kernel_type {kname!r} (LIBSVM's names: "
                              f"{', '.join(_KERNEL_OF_TYPE)})")
    try:
        kernel = Kernel(_KERNEL_OF_TYPE[kname], float(header.get("gamma", ["1"])[0]),
                        int(header.get("degree", ["3"])[0]),
                        float(header.get("coef0", ["0"])[0]))
    except (ValueError, IndexError):
        raise DataFormatError(f"{where}: malformed gamma, degree or coef0") from None
    return svm_type, kernel


def _class_layout(header: dict[str, list[str]], svm_type: str, where: str):
    """(labels, n_sv, coefficient columns, rho count) the header gives ``svm_type``;
    raises DataFormatError for a missing or malformed ``label``, ``nr_class`` or
    ``nr_sv``."""
    if svm_type in SINGLE_TYPES:
        return None, None, 1, 1
    if "label" not in header:
        raise DataFormatError(f"{where}: header lacks label; not a complete model file")
    k = _ints(header, "nr_class", where, 1)[0] if "nr_class" in header else -1
    labels = tuple(_ints(header, "label", where, k if k >= 0 else None))
    k = len(labels)
    cols, n_rho = (k, k) if svm_type == OVR_SVM_TYPE else (k - 1, k * (k - 1) // 2)
    n_sv = None
    if svm_type in CLASSIFICATION_TYPES:
        if "nr_sv" not in header:
            raise DataFormatError(f"{where}: header lacks nr_sv")
        n_sv = tuple(_ints(header, "nr_sv", where, k))
    return labels, n_sv, cols, n_rho


def _check_sv_count(total: int, n_sv: tuple[int, ...] | None, n_read: int,
                    where: str) -> None:
    """Refuse a header whose ``total_sv`` (or ``nr_sv`` sum) is not the SV lines read."""
    if total != n_read or (n_sv is not None and sum(n_sv) != total):
        raise DataFormatError(f"{where}: header says total_sv {total}"
                              + (f" (nr_sv {list(n_sv)})" if n_sv is not None else "")
                              + f" but {n_read} SV lines follow; the file is truncated "
                              "or corrupt")


def parse_model(lines: list[str], where: str, n_features: int | None = None,
                first_line: int = 1) -> LibsvmModel:
    """Parse one model (header, ``SV`` line, one line per SV) from its lines.

    The header's counts are checked against the SV lines; when the ``SV`` line carries
    our marker, the SV count and the digest of the SV lines are checked too.

    Args:
        lines: the model's lines (without our trailer).
        where: the file name used in error messages.
        n_features: feature count of the SV matrix (default: highest index seen).
        first_line: line number of ``lines[0]`` in the file (for messages).

    Returns:
        the model, SVs as float32 CSR in file order.

    Raises:
        DataFormatError: an unknown svm_type or kernel_type, a missing header key, counts
            that do not match the SV lines, a digest mismatch, or a malformed line (named
            by number). Each message is one line naming ``where``.
    """
    header, mark, sv_at = _read_header(lines, where)
    svm_type, kernel = _svm_type_and_kernel(header, where)
    total = _ints(header, "total_sv", where, 1)[0]
    labels, n_sv, cols, n_rho = _class_layout(header, svm_type, where)
    rho = _floats(header, "rho", where, n_rho)
    prob_a = _floats(header, "probA", where) if "probA" in header else None
    prob_b = _floats(header, "probB", where) if "probB" in header else None
    body = lines[sv_at + 1:]
    coefs, indptr, indices, values = parse_sv_lines(body, cols, where,
                                                    first_line + sv_at + 1)
    if mark:
        check_sv_marker(mark, body, len(coefs), where)
    _check_sv_count(total, n_sv, len(coefs), where)
    sv = sv_matrix(indptr, indices, values, n_features, where)
    model = LibsvmModel(svm_type, kernel, sv, coefs.reshape(-1, cols), rho, labels, n_sv,
                        prob_a, prob_b)
    model.check(where)
    return model


def split_model_text(text: str, where: str) -> tuple[list[str], dict | None]:
    """Split the text of a model file into the model's lines and our metadata.

    Checks: with our trailer, its digest; without it, that the file is a stock one (no
    marker of ours on its ``SV`` line, which would mean our trailer was cut off) that
    ends with a newline.

    Args:
        text: the whole file.
        where: the file name for messages.

    Returns:
        (lines of the model, metadata dict or None for a stock file).

    Raises:
        DataFormatError: truncated or corrupt (one line naming ``where``).
    """
    lines = text.splitlines()
    meta_at = next((i for i, s in enumerate(lines) if s.startswith(META_TAG)), None)
    if meta_at is None:
        check_stock_text(text, where)
        return lines, None
    if not text.endswith("\n"):
        raise DataFormatError(f"{where}: the last line has no newline; the file is "
                              "truncated (cut inside a line)")
    end = text.rfind("\n" + END_TAG)
    if end < 0:
        raise DataFormatError(f"{where}: no '{END_TAG.split()[0]}' line; the file is "
                              "truncated")
    digest = text[end + 1 + len(END_TAG):].strip()
    if hashlib.sha256(text[:end + 1].encode()).hexdigest() != digest:
        raise DataFormatError(f"{where}: checksum mismatch; the file is truncated or "
                              "corrupt")
    try:
        meta = json.loads(lines[meta_at][len(META_TAG):])
    except ValueError as e:
        raise DataFormatError(f"{where}, line {meta_at + 1}: metadata is not valid JSON "
                              f"({e})") from None
    if not isinstance(meta, dict):
        raise DataFormatError(f"{where}, line {meta_at + 1}: metadata must be a JSON object")
    return lines[:meta_at], meta


def check_stock_text(text: str, where: str) -> None:
    """Refuse the text of a model file without our trailer that is not a complete stock
    LIBSVM file: it carries our ``SV`` marker (so our trailer was cut off), or its last
    line has no newline (cut inside a line; LIBSVM ends every line with one).

    Raises:
        DataFormatError: one line naming ``where``.
    """
    if text and not text.endswith("\n"):
        raise DataFormatError(f"{where}: the last line has no newline; the file is "
                              "truncated (cut inside a line)")
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "SV":
            if len(parts) > 1 and parts[1] == SV_MARK:
                raise DataFormatError(f"{where}: a randsvm-dist model file without its "
                                      "'#randsvm-dist-end' trailer; the file is truncated")
            return


def parse_model_file(text: str, where: str,
                     n_features: int | None = None) -> tuple[LibsvmModel, dict | None]:
    """Parse a whole model file (ours or stock LIBSVM's).

    Args:
        text: the file's text.
        where: the file name for messages.
        n_features: feature count of the SV matrix (default: the meta's ``n_features``
            when present, else the highest index seen).

    Returns:
        (model, metadata dict or None for a stock file).

    Raises:
        DataFormatError: malformed, truncated or corrupt (see ``split_model_text`` and
            ``parse_model``).
    """
    lines, meta = split_model_text(text, where)
    if n_features is None and meta and isinstance(meta.get("n_features"), int):
        n_features = meta["n_features"]
    return parse_model(lines, where, n_features), meta


def one_column_model(kernel, sv, coef: np.ndarray, intercept: float, svm_type: str
                     ) -> LibsvmModel:
    """A one-column LIBSVM model (epsilon_svr, one_class): f = coef k(sv, x) + intercept."""
    return LibsvmModel(svm_type, kernel, sv, np.asarray(coef, np.float64).reshape(-1, 1),
                       np.array([-float(intercept)]))
