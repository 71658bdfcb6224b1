"""Binary kernel SVM models in LIBSVM's own model-file format.

Stock LIBSVM (``libsvm.svmutil.svm_load_model``) loads what ``write_libsvm_model`` writes
and predicts the same labels. LIBSVM orients the decision function towards the first
label of its ``label`` line, so the positive class is written first, its support vectors
first, with positive coefficients. Labels must be integers (LIBSVM writes them with %d).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.kernels import KERNELS, Kernel


@dataclass
class BinaryModel:
    """f(x) = sum_i dual_coef_i k(sv_i, x) + intercept; f > 0 predicts ``labels[1]``.

    Attributes:
        kernel: the kernel.
        support_vectors: (n_sv, n_features) float32 ndarray or CSR.
        dual_coef: (n_sv,) float64, y_i alpha_i.
        intercept: b (LIBSVM's -rho).
        labels: (negative label, positive label) as integers.
    """

    kernel: Kernel
    support_vectors: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    labels: tuple[int, int]


def _fmt_row(row) -> str:
    if sp.issparse(row):
        idx, val = row.indices, row.data
    else:
        idx = np.flatnonzero(row)
        val = row[idx]
    return " ".join(f"{i + 1}:{float(v):.9g}" for i, v in zip(idx, val))


def sv_order(dual_coef: np.ndarray) -> np.ndarray:
    """Order in which a model file lists its support vectors: positive coefficients first
    (LIBSVM orients f towards its first label), each group in the given order."""
    coef = np.asarray(dual_coef)
    return np.concatenate([np.flatnonzero(coef > 0), np.flatnonzero(coef <= 0)])


def format_libsvm_model(model: BinaryModel) -> str:
    """The text of ``model`` as a LIBSVM model file, SVs in ``sv_order``.

    Raises:
        DataFormatError: labels that are not integers.
    """
    neg, pos = model.labels
    if int(neg) != neg or int(pos) != pos:
        raise DataFormatError(f"LIBSVM model files need integer labels; got {model.labels}")
    coef = np.asarray(model.dual_coef, dtype=np.float64)
    n_pos = int((coef > 0).sum())
    k = model.kernel
    head = ["svm_type c_svc", f"kernel_type {k.name}"]
    if k.name == "poly":
        head.append(f"degree {int(k.degree)}")
    if k.name != "linear":
        head.append(f"gamma {k.gamma:.17g}")
    if k.name in ("poly", "sigmoid"):
        head.append(f"coef0 {k.coef0:.17g}")
    head += ["nr_class 2", f"total_sv {len(coef)}", f"rho {-model.intercept:.17g}",
             f"label {int(pos)} {int(neg)}", f"nr_sv {n_pos} {len(coef) - n_pos}", "SV"]
    sv = model.support_vectors
    body = [f"{coef[i]:.17g} {_fmt_row(sv[i])}" for i in sv_order(coef)]
    return "\n".join(head + body) + "\n"


def write_libsvm_model(path: str | os.PathLike, model: BinaryModel) -> None:
    """Write ``model`` as a LIBSVM model file (written to a temporary name, then renamed).

    Raises:
        DataFormatError: labels that are not integers.
    """
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(format_libsvm_model(model))
    os.replace(tmp, path)


_REQUIRED = ("svm_type", "kernel_type", "nr_class", "total_sv", "rho", "label", "nr_sv")


def parse_libsvm_model(lines: list[str], where: str, n_features: int | None = None,
                       first_line: int = 1) -> BinaryModel:
    """Parse the lines of one binary c_svc LIBSVM model (header, ``SV``, one line per SV).

    The header's counts are checked against the SV lines, so a truncated file is an error.

    Args:
        lines: the model's lines (without trailing text after the last SV).
        where: the file name used in error messages.
        n_features: feature count of the SV matrix (default: highest index seen).
        first_line: line number of ``lines[0]`` in the file (for messages).

    Returns:
        the model, SVs as float32 CSR in file order.

    Raises:
        DataFormatError: not a binary c_svc model, a missing header key, counts that do
            not match the SV lines, or a malformed line (named by number).
    """
    header: dict[str, list[str]] = {}
    coefs: list[float] = []
    indptr, indices, values = [0], [], []
    it = iter(enumerate(lines, first_line))
    for _, line in it:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "SV":
            break
        header[parts[0]] = parts[1:]
    else:
        raise DataFormatError(f"{where}: no 'SV' line; not a LIBSVM model file (or "
                              "truncated in its header)")
    for lineno, line in it:
        parts = line.split()
        if not parts:
            continue
        try:
            coefs.append(float(parts[0]))
            for tok in parts[1:]:
                i, v = tok.split(":")
                indices.append(int(i) - 1)
                values.append(float(v))
        except ValueError:
            raise DataFormatError(
                f"{where}, line {lineno}: expected 'coef index:value ...'; got {line!r}"
            ) from None
        indptr.append(len(indices))
    missing = [k for k in _REQUIRED if k not in header]
    if missing:
        raise DataFormatError(f"{where}: header lacks {', '.join(missing)}; not a complete "
                              "LIBSVM model file")
    if header["svm_type"] != ["c_svc"] or header["nr_class"] != ["2"]:
        raise DataFormatError(f"{where}: expected a binary c_svc model (svm_type c_svc, "
                              f"nr_class 2); got {header['svm_type']}, "
                              f"nr_class {header['nr_class']}")
    try:
        total = int(header["total_sv"][0])
        nr_sv = [int(v) for v in header["nr_sv"]]
        pos, neg = (int(v) for v in header["label"])
        rho = float(header["rho"][0])
    except (ValueError, IndexError):
        raise DataFormatError(f"{where}: malformed total_sv, nr_sv, label or rho line") \
            from None
    if total != len(coefs) or sum(nr_sv) != total:
        raise DataFormatError(f"{where}: header says total_sv {total} (nr_sv {nr_sv}) but "
                              f"{len(coefs)} SV lines follow; the file is truncated or "
                              "corrupt")
    name = header["kernel_type"][0]
    if name not in KERNELS:
        raise DataFormatError(f"{where}: unsupported kernel_type {name!r}")
    kernel = Kernel(name, float(header.get("gamma", ["1"])[0]),
                    int(header.get("degree", ["3"])[0]), float(header.get("coef0", ["0"])[0]))
    d = max(indices, default=-1) + 1 if n_features is None else n_features
    if indices and max(indices) >= d:
        raise DataFormatError(f"{where}: feature index {max(indices) + 1} exceeds the "
                              f"model's {d} features")
    sv = sp.csr_matrix((np.asarray(values, np.float32), np.asarray(indices, np.int32),
                        np.asarray(indptr, np.int64)), shape=(len(coefs), d))
    return BinaryModel(kernel, sv, np.asarray(coefs), -rho, (neg, pos))


def read_libsvm_model(path: str | os.PathLike, n_features: int | None = None) -> BinaryModel:
    """Read a binary c_svc LIBSVM model file (see ``parse_libsvm_model``).

    Raises:
        DataFormatError: malformed or truncated; FileNotFoundError: no such file.
    """
    with open(path) as f:
        return parse_libsvm_model(f.read().splitlines(), os.fspath(path), n_features)
