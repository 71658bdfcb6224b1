"""LIBSVM model files on disk, and the binary C-SVC view of a model.

``write_model_file``/``read_model_file`` put a ``solvers.model_file.LibsvmModel`` (with our
trailer) on disk and back; ``BinaryModel`` is the simple view of a two-class C-SVC model
(f(x) = sum_i dual_coef_i k(sv_i, x) + intercept, positive towards ``labels[1]``), and
``write_libsvm_model``/``read_libsvm_model`` write and read it as stock LIBSVM does (no
marker, no trailer).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.libsvm_text import (
    CLASSIFICATION_TYPES,
    LibsvmModel,
    format_model,
    format_model_file,
    parse_model,
    parse_model_file,
)
from randsvm_dist.numerics.kernels import Kernel


def write_model_file(path: str | os.PathLike, model: LibsvmModel,
                     meta: dict | None = None) -> None:
    """Write ``format_model_file(model, meta)`` to ``path`` (temporary name, then renamed).

    Raises:
        DataFormatError: see ``format_model``.
    """
    text = format_model_file(model, meta)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_model_file(path: str | os.PathLike,
                    n_features: int | None = None) -> tuple[LibsvmModel, dict | None]:
    """Read a model file (see ``parse_model_file``).

    Raises:
        DataFormatError: malformed, truncated or not UTF-8; FileNotFoundError: no file.
    """
    where = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise DataFormatError(f"{where}: not UTF-8 text; not a LIBSVM model file") from None
    return parse_model_file(text, where, n_features)


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


def sv_order(dual_coef: np.ndarray) -> np.ndarray:
    """Order in which a model file lists its support vectors: positive coefficients first
    (LIBSVM orients f towards its first label), each group in the given order."""
    coef = np.asarray(dual_coef)
    return np.concatenate([np.flatnonzero(coef > 0), np.flatnonzero(coef <= 0)])


def binary_to_libsvm(model: BinaryModel) -> LibsvmModel:
    """The LIBSVM layout of a binary model: ``label pos neg``, positive SVs first.

    Raises:
        DataFormatError: labels that are not integers.
    """
    neg, pos = model.labels
    if int(neg) != neg or int(pos) != pos:
        raise DataFormatError(f"LIBSVM model files need integer labels; got {model.labels}")
    coef = np.asarray(model.dual_coef, dtype=np.float64)
    order = sv_order(coef)
    n_pos = int((coef > 0).sum())
    return LibsvmModel("c_svc", model.kernel, model.support_vectors[order],
                       coef[order][:, None], np.array([-float(model.intercept)]),
                       (int(pos), int(neg)), (n_pos, len(coef) - n_pos))


def libsvm_to_binary(model: LibsvmModel, where: str = "model") -> BinaryModel:
    """A binary c_svc LibsvmModel as a BinaryModel with sorted labels.

    LIBSVM orients f towards its FIRST label; the result's labels are (smaller, larger)
    and f > 0 predicts the larger, so a file with ``label 0 1`` has its coefficients and
    rho negated (``label 1 -1``, LIBSVM's usual order, is kept as it is).

    Raises:
        DataFormatError: not a binary c_svc model.
    """
    if model.svm_type not in CLASSIFICATION_TYPES or model.nr_class != 2:
        raise DataFormatError(f"{where}: expected a binary c_svc model (svm_type c_svc, "
                              f"nr_class 2); got {model.svm_type}, nr_class "
                              f"{model.nr_class}")
    first, second = model.labels
    coef, rho = np.asarray(model.sv_coef[:, 0], dtype=np.float64), float(model.rho[0])
    if first < second:
        coef, rho = -coef, -rho
    return BinaryModel(model.kernel, model.support_vectors, coef, -rho,
                       (min(first, second), max(first, second)))


def format_libsvm_model(model: BinaryModel) -> str:
    """The text of a binary ``model`` as a LIBSVM model file, SVs in ``sv_order``.

    Raises:
        DataFormatError: labels that are not integers.
    """
    return format_model(binary_to_libsvm(model))


def write_libsvm_model(path: str | os.PathLike, model: BinaryModel) -> None:
    """Write a binary ``model`` as a LIBSVM model file with our trailer (temporary name,
    then renamed).

    Raises:
        DataFormatError: labels that are not integers.
    """
    write_model_file(path, binary_to_libsvm(model))


def parse_libsvm_model(lines: list[str], where: str, n_features: int | None = None,
                       first_line: int = 1) -> BinaryModel:
    """Parse the lines of one binary c_svc LIBSVM model (see ``parse_model``).

    Returns:
        the model with sorted labels (``libsvm_to_binary``), SVs as float32 CSR in file
        order.

    Raises:
        DataFormatError: not a binary c_svc model, or see ``parse_model``.
    """
    return libsvm_to_binary(parse_model(lines, where, n_features, first_line), where)


def read_libsvm_model(path: str | os.PathLike, n_features: int | None = None) -> BinaryModel:
    """Read a binary c_svc LIBSVM model file (ours or stock; see ``parse_model_file``).

    Raises:
        DataFormatError: malformed or truncated; FileNotFoundError: no such file.
    """
    model, _ = read_model_file(path, n_features)
    return libsvm_to_binary(model, os.fspath(path))
