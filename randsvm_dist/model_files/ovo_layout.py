"""Per-pair (one-vs-one) and per-class (one-vs-rest) solutions <-> LIBSVM's shared-SV
layout, and scikit-learn's SVC attributes (``dual_coef_``, ``intercept_``, ``n_support_``,
``coef_``) from it.

LIBSVM's layout for k classes (``svm.cpp``, ``svm_train`` / ``svm_predict_values``):

- pairs in the order (0,1), (0,2), ..., (0,k-1), (1,2), ..., (k-2,k-1); pair p = (i, j)
  has decision value f_p(x) = sum_s coef_s k(sv_s, x) - rho_p, positive towards class i
  (class i is +1 in the pair's problem, class j is -1);
- the support vectors of all pairs are united per class and listed grouped by class (class
  0's first), ``nr_sv`` per class; a row that is an SV of several pairs is listed once;
- ``sv_coef`` has k-1 columns: an SV of class i holds its coefficient in pair (i, j) in
  column j-1 for j > i and in pair (j, i) in column j for j < i (0 where it is not an SV
  of that pair). So column c of a class-i SV is the pair with class ``c if c < i else
  c + 1``.

scikit-learn's SVC keeps exactly this: ``_dual_coef_`` = sv_coef.T (k-1, n_SV),
``_intercept_`` = -rho, ``n_support_`` = nr_sv, ``support_vectors_`` grouped by class in
``classes_`` (sorted) order. For two classes its public ``dual_coef_`` and ``intercept_``
are negated (``decision_function`` > 0 then predicts ``classes_[1]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.libsvm_text import (
    CLASSIFICATION_TYPES,
    OVR_SVM_TYPE,
    LibsvmModel,
)
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.numerics.multiclass import ovo_pairs, pair_coef_matrix


def _gather_rows(blocks, offsets: np.ndarray, flat: np.ndarray):
    """Rows ``flat`` (indices into the blocks stacked, block b starting at offsets[b]) as
    one matrix, without stacking the blocks (they may hold each row many times)."""
    flat = np.asarray(flat, dtype=np.int64)
    if not len(blocks):
        return np.empty((0, 0), np.float32)
    block = np.searchsorted(offsets, flat, side="right") - 1
    parts, pos = [], []
    for b in np.unique(block):
        sel = np.flatnonzero(block == b)
        parts.append(blocks[b][flat[sel] - offsets[b]])
        pos.append(sel)
    if not parts:
        first = blocks[0]
        return first[:0]
    out = _vstack(parts)
    inv = np.empty(len(flat), np.int64)
    inv[np.concatenate(pos)] = np.arange(len(flat))
    return out[inv]


def _vstack(blocks):
    if any(sp.issparse(b) for b in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.vstack([np.asarray(b) for b in blocks])


@dataclass
class PairModel:
    """One binary model of a shared layout.

    Attributes:
        sv: indices into the layout's support vectors (ascending), nonzero coefficients.
        coef: their coefficients (LIBSVM orientation: positive towards the pair's first
            class i, or towards class j for a one-vs-rest model j).
        intercept: -rho.
    """

    sv: np.ndarray
    coef: np.ndarray
    intercept: float


def _sv_entries(pairs, pair_rows, pair_X, pair_coef, offsets: np.ndarray) -> tuple:
    """Every pair's nonzero coefficients as flat entries (``ovo_to_libsvm``'s first step).

    Returns:
        (ids, cls, col, val, where): per entry, the row id, its SV's class, its column in
        LIBSVM's (n_sv, k-1) coefficients, the coefficient, and its row in the pairs'
        stacked ``pair_X`` (``offsets``: where each pair's rows start there).

    Raises:
        ValueError: a pair's rows, X and coef differ in length.
    """
    ids, cls, col, val, where = [], [], [], [], []  # per nonzero SV entry
    for p, (i, j) in enumerate(pairs):
        rows, coef = np.asarray(pair_rows[p], np.int64), np.asarray(pair_coef[p], float)
        if rows.shape != coef.shape or np.shape(pair_X[p])[0] != len(rows):
            raise ValueError(f"pair {p} ({i}, {j}): rows, X and coef differ in length")
        nz = np.flatnonzero(coef != 0)
        pos = coef[nz] > 0
        ids.append(rows[nz])
        cls.append(np.where(pos, i, j))
        col.append(np.where(pos, j - 1, i))  # class i SVs: column j-1; class j SVs: i
        val.append(coef[nz])
        where.append(offsets[p] + nz)
    ids, cls, col, val, where = (np.concatenate(a) if a else np.empty(0)
                                 for a in (ids, cls, col, val, where))
    ids, cls, col, where = (a.astype(np.int64) for a in (ids, cls, col, where))
    return ids, cls, col, val, where


def ovo_to_libsvm(kernel: Kernel, labels, pair_rows, pair_X, pair_coef, pair_intercept,
                  prob_a=None, prob_b=None) -> tuple[LibsvmModel, np.ndarray]:
    """Per-pair solutions -> LIBSVM's multi-class (shared SVs) layout.

    Args:
        kernel: the kernel.
        labels: the k class labels (integers) in the layout's class order.
        pair_rows: per pair in ``ovo_pairs`` order, (m_p,) ids of the pair's support
            vectors (any integers naming rows, e.g. global row numbers; a row that is an SV
            of several pairs must carry the same id and the same class in each).
        pair_X: per pair, (m_p, d) features of those rows (ndarray or CSR).
        pair_coef: per pair, (m_p,) y alpha with y = +1 for class i, -1 for class j of
            pair (i, j) (LIBSVM's orientation: f > 0 votes for i). Zero entries are dropped;
            the sign gives each SV's class.
        pair_intercept: per pair, b = -rho of f = sum coef k(sv, x) + b.
        prob_a, prob_b: optional Platt sigmoid per pair (LIBSVM's probA/probB).

    Returns:
        (LibsvmModel with svm_type c_svc, support): support (n_sv,) holds the row ids of
        the model's SVs in file order (grouped by class, ascending within a class).

    Raises:
        ValueError: wrong number of pairs, mismatched lengths, or a row id given two
            classes.
    """
    labels = tuple(int(v) for v in labels)
    k = len(labels)
    pairs = ovo_pairs(k)
    if not (len(pair_rows) == len(pair_X) == len(pair_coef) == len(pair_intercept)
            == len(pairs)):
        raise ValueError(f"{k} classes need {len(pairs)} pairs of rows, X, coef and "
                         "intercept")
    offsets = np.cumsum([0] + [np.shape(x)[0] for x in pair_X])
    ids, cls, col, val, where = _sv_entries(pairs, pair_rows, pair_X, pair_coef, offsets)
    # one SV per (class, row id): file order = by class, then by row id
    order = np.lexsort((ids, cls))
    first = np.ones(len(order), bool)
    first[1:] = (ids[order][1:] != ids[order][:-1]) | (cls[order][1:] != cls[order][:-1])
    support, sv_class = ids[order][first], cls[order][first]
    if len(np.unique(support)) != len(support):
        raise ValueError("a row id is a support vector of two different classes")
    slot = np.empty(len(order), np.int64)
    slot[order] = np.cumsum(first) - 1  # the SV (file position) of every entry
    sv = _gather_rows(pair_X, offsets, where[order][first])
    sv_coef = np.zeros((len(support), max(k - 1, 0)))
    sv_coef[slot, col] = val
    n_sv = tuple(int(v) for v in np.bincount(sv_class, minlength=k))
    rho = -np.asarray(pair_intercept, dtype=np.float64).reshape(len(pairs))
    model = LibsvmModel("c_svc", kernel, sv, sv_coef, rho, labels, n_sv,
                        None if prob_a is None else np.asarray(prob_a, float),
                        None if prob_b is None else np.asarray(prob_b, float))
    model.check()
    return model, support


def libsvm_to_pairs(model: LibsvmModel) -> list[PairModel]:
    """A c_svc (one-vs-one) or ovr model -> its binary models (``PairModel`` each).

    c_svc: one per pair in ``ovo_pairs`` order, positive towards the pair's first class;
    ovr: one per class, positive towards that class.

    Raises:
        DataFormatError: a model of another svm_type.
    """
    coef = np.asarray(model.sv_coef, dtype=np.float64)
    if model.svm_type == OVR_SVM_TYPE:
        cols = coef
    elif model.svm_type in CLASSIFICATION_TYPES:
        cols = pair_coef_matrix(coef, model.n_sv)
    else:
        raise DataFormatError(f"{model.svm_type} is not a classification model")
    out = []
    for p in range(cols.shape[1]):
        nz = np.flatnonzero(cols[:, p])
        out.append(PairModel(nz, cols[nz, p], -float(model.rho[p])))
    return out


def ovr_to_libsvm(kernel: Kernel, labels, model_rows, model_X, model_coef,
                  model_intercept) -> tuple[LibsvmModel, np.ndarray]:
    """One-vs-rest solutions -> our shared-SV form (svm_type ``randsvm_ovr``).

    Args:
        kernel: the kernel.
        labels: the k class labels (integers), model j being class j against the rest.
        model_rows: per class, (m_j,) row ids of model j's SVs.
        model_X: per class, (m_j, d) their features.
        model_coef: per class, (m_j,) y alpha, positive towards class j.
        model_intercept: per class, b_j = -rho_j.

    Returns:
        (LibsvmModel with k coefficient columns, support): support holds the row ids of
        the SVs in file order (ascending).

    Raises:
        ValueError: mismatched lengths.
    """
    labels = tuple(int(v) for v in labels)
    k = len(labels)
    if not (len(model_rows) == len(model_X) == len(model_coef) == len(model_intercept)
            == k):
        raise ValueError(f"{k} classes need {k} models")
    rows = [np.asarray(r, np.int64) for r in model_rows]
    for j in range(k):
        if not len(rows[j]) == np.shape(model_X[j])[0] == np.size(model_coef[j]):
            raise ValueError(f"model {j}: rows, X and coef differ in length")
    allr = np.concatenate(rows) if rows else np.empty(0, np.int64)
    support, first = np.unique(allr, return_index=True)
    sv = _gather_rows(list(model_X), np.cumsum([0] + [len(r) for r in rows]), first)
    sv_coef = np.zeros((len(support), k))
    for j in range(k):
        sv_coef[np.searchsorted(support, rows[j]), j] = np.asarray(model_coef[j], float)
    rho = -np.asarray(model_intercept, dtype=np.float64).reshape(k)
    model = LibsvmModel(OVR_SVM_TYPE, kernel, sv, sv_coef, rho, labels)
    model.check()
    return model, support


def sort_labels(model: LibsvmModel) -> tuple[LibsvmModel, np.ndarray]:
    """The same c_svc model with its classes in ascending label order.

    A pair whose classes change order changes orientation: its coefficients and rho are
    negated, and its probB (P(first class) = 1 / (1 + exp(A f + B)) becomes
    P = 1 / (1 + exp(A (-f) - B))). SVs are regrouped by the new class order.

    Returns:
        (model with sorted labels, order): order[s] is the index in the given model of
        the result's SV s. A model already sorted is returned unchanged with arange.
    """
    n = model.support_vectors.shape[0]
    if model.svm_type not in CLASSIFICATION_TYPES:
        return model, np.arange(n)
    labels = np.asarray(model.labels)
    if np.all(labels[:-1] < labels[1:]):
        return model, np.arange(n)
    k = len(labels)
    new_of_old = np.argsort(np.argsort(labels, kind="stable"), kind="stable")
    pairs = libsvm_to_pairs(model)
    new_index = {pq: p for p, pq in enumerate(ovo_pairs(k))}
    rows, X, coef, icpt = [None] * len(pairs), [None] * len(pairs), [None] * len(pairs), \
        [0.0] * len(pairs)
    pa = None if model.prob_a is None else np.empty(len(pairs))
    pb = None if model.prob_b is None else np.empty(len(pairs))
    for p, (i, j) in enumerate(ovo_pairs(k)):
        a, b = int(new_of_old[i]), int(new_of_old[j])
        flip = a > b
        q = new_index[(min(a, b), max(a, b))]
        s = -1.0 if flip else 1.0
        rows[q], X[q] = pairs[p].sv, model.support_vectors[pairs[p].sv]
        coef[q], icpt[q] = s * pairs[p].coef, s * pairs[p].intercept
        if pa is not None:
            pa[q] = model.prob_a[p]
        if pb is not None:
            pb[q] = s * model.prob_b[p]
    out, order = ovo_to_libsvm(model.kernel, np.sort(labels), rows, X, coef, icpt, pa, pb)
    if out.support_vectors.shape[0] != n:  # SVs with all-zero coefficients
        raise DataFormatError("the model lists support vectors whose coefficients are all "
                              "zero; cannot regroup it")
    out.svm_type = model.svm_type
    return out, order


def svc_attributes(model: LibsvmModel) -> dict:
    """scikit-learn SVC's fitted attributes of a c_svc model with sorted labels.

    Returns:
        dict with ``dual_coef_`` (k-1, n_sv), ``intercept_`` (n_pairs,), ``n_support_``
        (k,) int32, and the internal ``_dual_coef_``/``_intercept_`` (LIBSVM's
        orientation). For two classes the public ``dual_coef_`` and ``intercept_`` are
        negated, as in SVC, so ``dual_coef_ @ K(SV, x) + intercept_ > 0`` predicts the
        second class.

    Raises:
        DataFormatError: not c_svc, or labels not ascending (``sort_labels`` first).
    """
    if model.svm_type not in CLASSIFICATION_TYPES:
        raise DataFormatError(f"{model.svm_type} has no SVC attributes")
    labels = np.asarray(model.labels)
    if not np.all(labels[:-1] < labels[1:]):
        raise DataFormatError("labels must be ascending (use sort_labels first)")
    dual = np.ascontiguousarray(np.asarray(model.sv_coef, dtype=np.float64).T)
    icpt = -np.asarray(model.rho, dtype=np.float64)
    out = {"_dual_coef_": dual, "_intercept_": icpt,
           "n_support_": np.asarray(model.n_sv, dtype=np.int32)}
    sign = -1.0 if len(labels) == 2 else 1.0
    out["dual_coef_"], out["intercept_"] = sign * dual, sign * icpt
    return out


def linear_coef(dual_coef: np.ndarray, n_support, support_vectors):
    """SVC's ``coef_`` for the linear kernel, read-only, from its public attributes.

    Binary: ``dual_coef_ @ support_vectors_`` (1, d) (positive towards classes_[1]);
    k > 2: one row per pair in ``ovo_pairs`` order, w_p = sum over the pair's SVs of
    their coefficient times the SV (positive towards the pair's first class), as
    scikit-learn's ``_one_vs_one_coef``.

    Args:
        dual_coef: (k-1, n_sv) SVC's public ``dual_coef_`` (ndarray or sparse).
        n_support: (k,) SVs per class.
        support_vectors: (n_sv, d) ndarray or CSR.

    Returns:
        (n_pairs, d) float64 ndarray (CSR when the SVs are sparse), not writeable.
    """
    dual = np.asarray(dual_coef.toarray() if sp.issparse(dual_coef) else dual_coef,
                      dtype=np.float64)
    if dual.shape[0] == 1:
        M = dual.T
    else:
        M = pair_coef_matrix(dual.T, n_support)
    S = support_vectors
    coef = (sp.csr_matrix(M.T) @ sp.csr_matrix(S, dtype=np.float64)).tocsr() \
        if sp.issparse(S) else M.T @ np.asarray(S, dtype=np.float64)
    (coef.data if sp.issparse(coef) else coef).flags.writeable = False
    return coef
