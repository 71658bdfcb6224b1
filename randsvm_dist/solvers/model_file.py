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

from ..exceptions import DataFormatError
from ..kernels import KERNELS, Kernel


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


def write_libsvm_model(path: str | os.PathLike, model: BinaryModel) -> None:
    """Write ``model`` as a LIBSVM model file (written to a temporary name, then renamed).

    Raises:
        DataFormatError: labels that are not integers.
    """
    neg, pos = model.labels
    if int(neg) != neg or int(pos) != pos:
        raise DataFormatError(f"LIBSVM model files need integer labels; got {model.labels}")
    coef = np.asarray(model.dual_coef, dtype=np.float64)
    order = np.concatenate([np.flatnonzero(coef > 0), np.flatnonzero(coef <= 0)])
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
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    sv = model.support_vectors
    with open(tmp, "w") as f:
        f.write("\n".join(head) + "\n")
        for i in order:
            f.write(f"{coef[i]:.17g} {_fmt_row(sv[i])}\n")
    os.replace(tmp, path)


def read_libsvm_model(path: str | os.PathLike, n_features: int | None = None) -> BinaryModel:
    """Read a binary c_svc LIBSVM model file into a BinaryModel (SVs as float32 CSR).

    Args:
        path: model file.
        n_features: feature count of the SV matrix (default: highest index seen).

    Raises:
        DataFormatError: not a binary c_svc model, or a malformed line (named by number).
        FileNotFoundError: no such file.
    """
    header: dict[str, list[str]] = {}
    coefs: list[float] = []
    indptr, indices, values = [0], [], []
    with open(path) as f:
        n_header = 0
        for n_header, line in enumerate(f, 1):  # noqa: B007 - n_header used after the loop
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "SV":
                break
            header[parts[0]] = parts[1:]
        else:
            raise DataFormatError(f"{path}: no 'SV' line; not a LIBSVM model file")
        for lineno, line in enumerate(f, n_header + 1):
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
                    f"{path}, line {lineno}: expected 'coef index:value ...'; got {line!r}"
                ) from None
            indptr.append(len(indices))
    if header.get("svm_type") != ["c_svc"] or header.get("nr_class") != ["2"]:
        raise DataFormatError(f"{path}: expected a binary c_svc model (svm_type c_svc, "
                              f"nr_class 2); got {header.get('svm_type')}, "
                              f"nr_class {header.get('nr_class')}")
    name = header["kernel_type"][0]
    if name not in KERNELS:
        raise DataFormatError(f"{path}: unsupported kernel_type {name!r}")
    kernel = Kernel(name, float(header.get("gamma", ["1"])[0]),
                    int(header.get("degree", ["3"])[0]), float(header.get("coef0", ["0"])[0]))
    d = max(indices, default=-1) + 1 if n_features is None else n_features
    sv = sp.csr_matrix((np.asarray(values, np.float32), np.asarray(indices, np.int32),
                        np.asarray(indptr, np.int64)), shape=(len(coefs), d))
    pos, neg = (int(v) for v in header["label"])
    return BinaryModel(kernel, sv, np.asarray(coefs), -float(header["rho"][0]), (neg, pos))
