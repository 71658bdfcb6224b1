"""LIBSVM model files (model_files.libsvm_text) and the one-vs-one layout
(model_files.ovo_layout), written and read as the package does (text through
data.publish's atomic write, bytes through data.filesystem).

Stock LIBSVM (libsvm.svmutil) loads every classification/regression/one-class file we
write and predicts what we predict on 100% of rows (with '-b 1': the same probabilities
to 1e-6); it refuses our one-vs-rest form; our reader reads its files (label order,
'polynomial', SVR, one-class; a stock binary file loads as an estimator with sorted
classes); a file cut anywhere is refused with one line naming it;
scikit-learn's SVC attributes (dual_coef_, intercept_, n_support_, coef_) come out with
SVC's shapes and signs.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from libsvm.svmutil import svm_load_model, svm_predict, svm_save_model, svm_train
from sklearn.datasets import load_iris, make_blobs
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel
from sklearn.svm import SVC

from randsvm_dist.data.filesystem import read_bytes
from randsvm_dist.data.publish import write_bytes_atomic
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import DataFormatError
from randsvm_dist.model_files.libsvm_text import (
    CLASSIFICATION_TYPES,
    OVR_SVM_TYPE,
    LibsvmModel,
    check_stock_text,
    format_model,
    format_model_file,
    parse_model_file,
)
from randsvm_dist.model_files.ovo_layout import (
    libsvm_to_pairs,
    linear_coef,
    ovo_pairs,
    ovo_to_libsvm,
    ovr_to_libsvm,
    sort_labels,
    svc_attributes,
)
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.numerics.multiclass import ovo_predict, pair_coef_matrix
from randsvm_dist.numerics.probability import predict_proba
from randsvm_dist.solvers.libsvm_adapter import solve_libsvm
from randsvm_dist.solvers.params import SolverParams


def coefficient_columns(model: LibsvmModel) -> np.ndarray:
    """(n_sv, n_rho) coefficients of each binary model over the shared SVs: one column per
    pair (c_svc, ``pair_coef_matrix``), per class (ovr) or the single column (SVR,
    one-class), so decision values are ``K(X, SV) @ columns - rho``."""
    coef = np.asarray(model.sv_coef, dtype=np.float64)
    if model.svm_type in CLASSIFICATION_TYPES:
        return pair_coef_matrix(coef, model.n_sv)
    return coef


def gram(A, B, k: Kernel):
    A = A.toarray() if sp.issparse(A) else np.asarray(A)
    B = B.toarray() if sp.issparse(B) else np.asarray(B)
    A, B = A.astype(np.float64), B.astype(np.float64)
    if k.name == "rbf":
        return rbf_kernel(A, B, gamma=k.gamma)
    if k.name == "poly":
        return polynomial_kernel(A, B, degree=k.degree, gamma=k.gamma, coef0=k.coef0)
    return linear_kernel(A, B)


def dec64(model: LibsvmModel, X) -> np.ndarray:
    """Decision values in float64 numpy, independently of the package's kernels."""
    S = model.support_vectors
    S = S.toarray() if sp.issparse(S) else S
    S = np.pad(S, ((0, 0), (0, X.shape[1] - S.shape[1])))
    return gram(X, S, model.kernel) @ coefficient_columns(model) - model.rho


def write_model_file(path, model: LibsvmModel, meta: dict | None = None) -> None:
    """``model`` on disk as the package writes an estimator's file (``save_estimator``)."""
    write_bytes_atomic(path, format_model_file(model, meta).encode())


def read_model_file(path) -> tuple[LibsvmModel, dict | None]:
    """A model file read back as the package reads one (``load_randsvm_model``)."""
    return parse_model_file(read_bytes(path).decode(), str(path))


def stock_predict(path, X, y=None, opts="-q"):
    m = svm_load_model(str(path))
    assert m is not None
    labels, _, vals = svm_predict([] if y is None else list(y), sp.csr_matrix(X), m, opts)
    return np.asarray(labels), np.asarray(vals)


def ovo_fit(X, cls, k, params):
    """Per-pair LIBSVM solves on rows of classes i and j (+1 = class i)."""
    rows, Xs, coef, icpt = [], [], [], []
    for i, j in ovo_pairs(k):
        idx = np.flatnonzero((cls == i) | (cls == j))
        sol = solve_libsvm(X[idx], np.where(cls[idx] == i, 1.0, -1.0), params)
        rows.append(idx[sol.support])
        Xs.append(X[idx[sol.support]])
        coef.append(sol.dual_coef)
        icpt.append(sol.intercept)
    return rows, Xs, coef, icpt


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(600, n_features=3, centers=5, cluster_std=2.5, random_state=0)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def two_blobs():
    X, y = make_blobs(200, n_features=3, centers=2, cluster_std=3, random_state=2)
    return X.astype(np.float32), y


# -- binary and one-vs-one multi-class ---------------------------------------------------------
@pytest.mark.parametrize("data, labels", [("two_blobs", (4, 9)), ("iris", (3, 7, 11)),
                                          ("blobs", (-2, 0, 1, 5, 9))])
def test_ovo_file_stock_libsvm_predicts_as_we_do(data, labels, request, tmp_path):
    X, cls = request.getfixturevalue(data)
    k = len(labels)
    kernel = Kernel("rbf", 0.5)
    model, support = ovo_to_libsvm(kernel, labels, *ovo_fit(X, cls, k, SolverParams(
        C=1.0, kernel=kernel)))
    assert model.n_sv and sum(model.n_sv) == len(support)
    assert len(np.unique(support)) == len(support)  # shared SVs listed once
    np.testing.assert_array_equal(cls[support], np.repeat(np.arange(k), model.n_sv))
    path = tmp_path / "ovo.model"
    write_model_file(path, model, {"classes": list(labels)})
    ours = np.asarray(labels)[ovo_predict(dec64(model, X), k)]
    got, vals = stock_predict(path, X)
    np.testing.assert_array_equal(got, ours)  # 100% of rows
    np.testing.assert_allclose(vals, dec64(model, X), atol=1e-6)
    back, meta = read_model_file(path)
    assert meta == {"classes": list(labels)} and back.labels == labels
    np.testing.assert_array_equal(back.sv_coef, model.sv_coef)
    np.testing.assert_array_equal(back.rho, model.rho)
    np.testing.assert_array_equal(back.support_vectors.toarray(), model.support_vectors)
    # per-pair models back from the shared layout
    pairs = libsvm_to_pairs(back)
    cols = coefficient_columns(back)
    for p, pm in enumerate(pairs):
        np.testing.assert_array_equal(pm.coef, cols[pm.sv, p])
        assert pm.intercept == -model.rho[p]
    # without our marker and trailer: a stock file, read by both readers alike
    stock = format_model(model)
    assert "\nSV\n" in stock and "#randsvm-dist" not in stock
    plain, meta = parse_model_file(stock, "stock.model")
    assert meta is None and plain.labels == labels
    np.testing.assert_array_equal(plain.sv_coef, model.sv_coef)
    np.testing.assert_array_equal(plain.rho, model.rho)
    (tmp_path / "stock.model").write_text(stock)
    np.testing.assert_array_equal(stock_predict(tmp_path / "stock.model", X)[0], ours)


def test_ovo_file_with_probabilities_stock_b1_agrees(blobs, tmp_path):
    X, cls = blobs
    k = 5
    kernel = Kernel("rbf", 0.5)
    rng = np.random.default_rng(0)
    A, B = -rng.uniform(0.5, 3, 10), rng.normal(0, 0.3, 10)
    model, _ = ovo_to_libsvm(kernel, range(k), *ovo_fit(X, cls, k, SolverParams(
        kernel=kernel)), prob_a=A, prob_b=B)
    path = tmp_path / "ovo_b.model"
    write_model_file(path, model)
    got, probs = stock_predict(path, X, opts="-b 1 -q")
    ours = predict_proba(dec64(model, X), A, B, k)
    np.testing.assert_allclose(probs, ours, atol=1e-6)
    np.testing.assert_array_equal(got, np.argmax(ours, axis=1))
    # without -b 1 the same file votes
    np.testing.assert_array_equal(stock_predict(path, X)[0], ovo_predict(dec64(model, X), k))


def test_layout_from_sparse_pairs_equals_dense(blobs):
    X, cls = blobs
    kernel = Kernel("rbf", 0.5)
    rows, Xs, coef, icpt = ovo_fit(X, cls, 5, SolverParams(kernel=kernel))
    dense, s1 = ovo_to_libsvm(kernel, range(5), rows, Xs, coef, icpt)
    sparse, s2 = ovo_to_libsvm(kernel, range(5), rows, [sp.csr_matrix(x) for x in Xs],
                               coef, icpt)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(sparse.support_vectors.toarray(), dense.support_vectors)
    np.testing.assert_array_equal(dense.support_vectors, X[s1])
    np.testing.assert_array_equal(sparse.sv_coef, dense.sv_coef)
    with pytest.raises(ValueError, match="pairs"):
        ovo_to_libsvm(kernel, range(5), rows[:3], Xs[:3], coef[:3], icpt[:3])


# -- scikit-learn's attributes ---------------------------------------------------------------
@pytest.mark.parametrize("binary", [False, True])
def test_svc_attributes_match_sklearn(iris, binary):
    X, cls = iris
    if binary:
        keep = cls > 0
        X, cls = X[keep], cls[keep] - 1
    k = len(np.unique(cls))
    kernel = Kernel("rbf", 0.5)
    params = SolverParams(C=1.0, kernel=kernel, tol=1e-8)
    model, support = ovo_to_libsvm(kernel, range(k), *ovo_fit(X, cls, k, params))
    att = svc_attributes(model)
    svc = SVC(C=1.0, gamma=0.5, tol=1e-8).fit(X.astype(np.float64), cls)
    np.testing.assert_array_equal(support, svc.support_)
    np.testing.assert_array_equal(att["n_support_"], svc.n_support_)
    assert att["dual_coef_"].shape == svc.dual_coef_.shape
    np.testing.assert_allclose(att["dual_coef_"], svc.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(att["intercept_"], svc.intercept_, atol=1e-6)
    # SVC's decision function from our attributes, SVC's own formula
    K = gram(X, X[support], kernel)
    if binary:
        f = K @ att["dual_coef_"][0] + att["intercept_"][0]
        np.testing.assert_allclose(f, svc.decision_function(X), atol=1e-5)
    else:
        np.testing.assert_allclose(dec64(model, X), SVC(
            C=1.0, gamma=0.5, tol=1e-8, decision_function_shape="ovo").fit(
            X.astype(np.float64), cls).decision_function(X), atol=1e-5)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_linear_coef_matches_sklearn(iris, binary, sparse):
    X, cls = iris
    if binary:
        keep = cls > 0
        X, cls = X[keep], cls[keep]
    Xf = sp.csr_matrix(X.astype(np.float64)) if sparse else X.astype(np.float64)
    svc = SVC(kernel="linear", C=0.5, tol=1e-8).fit(Xf, cls)
    coef = linear_coef(svc.dual_coef_, svc.n_support_, svc.support_vectors_)
    expect = svc.coef_.toarray() if sparse else svc.coef_
    got = coef.toarray() if sparse else coef
    assert got.shape == expect.shape
    np.testing.assert_allclose(got, expect, atol=1e-12)
    if not sparse:
        with pytest.raises(ValueError):
            coef[0, 0] = 1.0
    # from our own per-pair solves: the same w
    k = len(np.unique(cls))
    idx = np.searchsorted(np.unique(cls), cls)
    kernel = Kernel("linear")
    model, support = ovo_to_libsvm(kernel, range(k), *ovo_fit(
        X, idx, k, SolverParams(C=0.5, kernel=kernel, tol=1e-8)))
    att = svc_attributes(model)
    ours = linear_coef(att["dual_coef_"], att["n_support_"], X[support])
    np.testing.assert_allclose(ours, expect, atol=1e-4)


# -- stock files: label order, kernels, SVR, one-class ---------------------------------------
def test_stock_binary_label_0_1_loads_sorted_and_oriented(iris, tmp_path):
    """A stock binary file loads as an estimator with sorted classes whose decision
    function is positive towards ``classes_[1]``, whatever LIBSVM's label order."""
    X, cls = iris
    keep = cls < 2
    X, y = X[keep], cls[keep].astype(float)  # 0 comes first: LIBSVM writes 'label 0 1'
    m = svm_train(list(y), sp.csr_matrix(X), "-s 0 -t 2 -g 0.5 -c 0.1 -q")
    path = tmp_path / "stock01.model"
    svm_save_model(str(path), m)
    assert "label 0 1" in path.read_text()
    est = RandSVMClassifier.load(path)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    got, vals = stock_predict(path, X)
    np.testing.assert_array_equal(est.predict(X), got)
    np.testing.assert_allclose(est.decision_function(X), -vals[:, 0], atol=1e-4)
    # and LIBSVM's usual order (label 1 -1) keeps its orientation
    yy = np.where(y > 0, 1.0, -1.0)
    order = np.argsort(-yy, kind="stable")
    m2 = svm_train(list(yy[order]), sp.csr_matrix(X[order]), "-s 0 -t 2 -g 0.5 -q")
    svm_save_model(str(tmp_path / "s2.model"), m2)
    assert "label 1 -1" in (tmp_path / "s2.model").read_text()
    est2 = RandSVMClassifier.load(tmp_path / "s2.model")
    np.testing.assert_array_equal(est2.classes_, [-1, 1])
    got2, vals2 = stock_predict(tmp_path / "s2.model", X)
    np.testing.assert_array_equal(est2.predict(X), got2)
    np.testing.assert_allclose(est2.decision_function(X), vals2[:, 0], atol=1e-4)


def test_stock_multiclass_unsorted_labels_with_probabilities(iris, tmp_path):
    X, cls = iris
    order = np.r_[np.flatnonzero(cls == 2), np.flatnonzero(cls == 0), np.flatnonzero(cls == 1)]
    X, y = X[order], cls[order].astype(float)  # LIBSVM's label order: 2 0 1
    m = svm_train(list(y), sp.csr_matrix(X), "-s 0 -t 2 -g 0.5 -c 2 -e 1e-8 -b 1 -q")
    path = tmp_path / "stock201.model"
    svm_save_model(str(path), m)
    model, meta = read_model_file(path)
    assert meta is None and model.labels == (2, 0, 1)
    srt, file_order = sort_labels(model)
    assert srt.labels == (0, 1, 2)
    np.testing.assert_array_equal(srt.n_sv, [model.n_sv[1], model.n_sv[2], model.n_sv[0]])
    got, probs = stock_predict(path, X, opts="-b 1 -q")
    # LIBSVM couples in its label order (2, 0, 1): the sorted indices [2, 0, 1]
    coupling = np.searchsorted(srt.labels, model.labels)
    ours = predict_proba(dec64(srt, X), srt.prob_a, srt.prob_b, 3, coupling)
    np.testing.assert_allclose(probs[:, np.argsort(model.labels)], ours, atol=1e-6)
    np.testing.assert_array_equal(got, np.argmax(ours, axis=1))
    # coupling in sorted order instead differs by LIBSVM's stopping tolerance only
    sorted_order = predict_proba(dec64(srt, X), srt.prob_a, srt.prob_b, 3)
    np.testing.assert_allclose(sorted_order, ours, atol=0.005)
    labels_votes, _ = stock_predict(path, X)
    np.testing.assert_array_equal(labels_votes, ovo_predict(dec64(srt, X), 3))
    # and the sorted model, written by us, is read by stock LIBSVM identically
    write_model_file(tmp_path / "sorted.model", srt)
    np.testing.assert_allclose(stock_predict(tmp_path / "sorted.model", X, opts="-b 1 -q")[1],
                               sorted_order, atol=1e-6)
    # the same as scikit-learn's SVC on the same rows (classes sorted)
    svc = SVC(C=2, gamma=0.5, tol=1e-8).fit(X.astype(np.float64), y)
    att = svc_attributes(srt)
    np.testing.assert_array_equal(att["n_support_"], svc.n_support_)
    np.testing.assert_allclose(att["intercept_"], svc.intercept_, atol=1e-5)
    np.testing.assert_allclose(att["dual_coef_"], svc.dual_coef_, atol=1e-5)
    sv_rows = np.asarray(m.get_sv_indices()) - 1  # file order -> rows of X
    np.testing.assert_array_equal(sv_rows[file_order], svc.support_)


def test_polynomial_kernel_name(tmp_path):
    X, y = make_blobs(80, n_features=2, centers=2, random_state=1)
    X = X.astype(np.float32)
    kernel = Kernel("poly", 0.5, 2, 1.0)
    model, _ = ovo_to_libsvm(kernel, (0, 1), *ovo_fit(X, y, 2, SolverParams(kernel=kernel)))
    path = tmp_path / "poly.model"
    write_model_file(path, model)
    text = path.read_text()
    assert "kernel_type polynomial\n" in text and "kernel_type poly\n" not in text
    np.testing.assert_array_equal(stock_predict(path, X)[0],
                                  np.where(dec64(model, X)[:, 0] > 0, 0, 1))
    bad = format_model(model).replace("kernel_type polynomial", "kernel_type poly")
    with pytest.raises(DataFormatError, match="kernel_type 'poly'"):
        parse_model_file(bad, "bad.model")


@pytest.mark.parametrize("kind", ["svr", "one_class"])
def test_svr_and_one_class_files_both_ways(kind, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    t = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    if kind == "svr":
        params = SolverParams(C=2.0, kernel=Kernel("rbf", 0.5), svm_type=3, epsilon=0.1)
        opts, name = "-s 3 -t 2 -g 0.5 -c 2 -p 0.1 -q", "epsilon_svr"
    else:
        params = SolverParams(kernel=Kernel("poly", 0.5, 2, 1.0), svm_type=2, nu=0.2)
        opts, name = "-s 2 -t 1 -g 0.5 -d 2 -r 1 -n 0.2 -q", "one_class"
    sol = solve_libsvm(X, t, params)
    ours = LibsvmModel(name, params.kernel, X[sol.support], sol.dual_coef[:, None],
                       np.array([-sol.intercept]))
    path = tmp_path / "ours.model"
    write_model_file(path, ours)
    text = path.read_text()
    assert text.startswith(f"svm_type {name}\n") and "label" not in text
    got, vals = stock_predict(path, X, list(t))
    np.testing.assert_allclose(vals[:, 0], dec64(ours, X)[:, 0], atol=1e-6)
    if kind == "svr":
        np.testing.assert_allclose(got, dec64(ours, X)[:, 0], atol=1e-6)
    else:
        np.testing.assert_array_equal(got, np.where(dec64(ours, X)[:, 0] > 0, 1, -1))
    # a stock file of the same kind (SVR with probA) reads back to the same predictions
    m = svm_train(list(t), sp.csr_matrix(X), opts + (" -b 1" if kind == "svr" else ""))
    svm_save_model(str(tmp_path / "stock.model"), m)
    back, meta = read_model_file(tmp_path / "stock.model")
    assert meta is None and back.svm_type == name
    assert (back.prob_a is not None) == (kind == "svr")
    np.testing.assert_allclose(dec64(back, X)[:, 0],
                               stock_predict(tmp_path / "stock.model", X, list(t))[1][:, 0],
                               atol=1e-6)


# -- one-vs-rest: ours, refused by stock LIBSVM ----------------------------------------------
def test_ovr_form_is_refused_by_stock_libsvm_and_read_by_us(iris, tmp_path):
    X, cls = iris
    kernel = Kernel("rbf", 0.5)
    rows, Xs, coef, icpt = [], [], [], []
    for j in range(3):
        sol = solve_libsvm(X, np.where(cls == j, 1.0, -1.0), SolverParams(kernel=kernel))
        rows.append(sol.support)
        Xs.append(X[sol.support])
        coef.append(sol.dual_coef)
        icpt.append(sol.intercept)
    model, support = ovr_to_libsvm(kernel, (0, 1, 2), rows, Xs, coef, icpt)
    path = tmp_path / "ovr.model"
    write_model_file(path, model, {"multi_class": "ovr"})
    assert path.read_text().startswith(f"svm_type {OVR_SVM_TYPE}\n")
    assert svm_load_model(str(path)) is None  # "unknown svm type"
    back, meta = read_model_file(path)
    assert back.svm_type == OVR_SVM_TYPE and meta == {"multi_class": "ovr"}
    for j, pm in enumerate(libsvm_to_pairs(back)):
        np.testing.assert_array_equal(support[pm.sv], rows[j])
        np.testing.assert_allclose(pm.coef, coef[j], rtol=0, atol=0)
        assert pm.intercept == pytest.approx(icpt[j], abs=0)
    f = dec64(back, X)
    assert (np.argmax(f, axis=1) == cls).mean() > 0.9


# -- integrity: truncation anywhere, corruption ----------------------------------------------
def one_line_error(text: str, where: str):
    with pytest.raises(DataFormatError) as e:
        parse_model_file(text, where)
    assert where in str(e.value) and "\n" not in str(e.value)
    return str(e.value)


def test_our_file_cut_anywhere_is_refused(blobs):
    X, cls = blobs
    keep = cls < 3
    kernel = Kernel("rbf", 0.5)
    model, _ = ovo_to_libsvm(kernel, range(3), *ovo_fit(X[keep][:120], cls[keep][:120], 3,
                                                        SolverParams(kernel=kernel)))
    text = format_model_file(model, {"n_features": 3})
    assert parse_model_file(text, "m.model")[1] == {"n_features": 3}
    for cut in range(len(text)):  # every strict prefix
        one_line_error(text[:cut], "m.model")
    # the cut that loses exactly the trailer (a complete-looking stock model) included
    body_end = text.index("#randsvm-dist-meta")
    assert "truncated" in one_line_error(text[:body_end], "m.model")
    # one changed character in an SV line
    i = text.index("\n", text.index("SV randsvm-dist")) + 3
    flipped = text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
    one_line_error(flipped, "m.model")


def test_stock_file_cut_anywhere_is_refused(iris, tmp_path):
    X, cls = iris
    m = svm_train(list(cls.astype(float)), sp.csr_matrix(X[:, :2]), "-s 0 -t 2 -c 0.5 -q")
    svm_save_model(str(tmp_path / "s.model"), m)
    text = (tmp_path / "s.model").read_text()
    model, meta = parse_model_file(text, "s.model")
    assert meta is None and model.nr_class == 3
    for cut in range(len(text)):
        one_line_error(text[:cut], "s.model")
    with pytest.raises(DataFormatError, match="no newline"):
        check_stock_text(text[:-3], "s.model")
    check_stock_text(text, "s.model")


BASE = ("svm_type c_svc\nkernel_type rbf\ngamma 1\nnr_class 2\ntotal_sv 2\nrho 0.5\n"
        "label 1 -1\nnr_sv 1 1\nSV\n1 1:0.5\n-1 1:0.25\n")


@pytest.mark.parametrize("old, new, match", [
    ("1 1:0.5", "1 4294967297:0.5", "out of range"),
    ("label 1 -1", "label 1", "'label' needs 2"),
    ("nr_class 2", "nr_class 1", "needs 1 value"),
    ("total_sv 2", "total_sv 3", "truncated or corrupt"),
    ("rho 0.5", "rho x", "malformed 'rho'"),
    ("gamma 1", "gamma -1", "gamma"),
    ("1 1:0.5", "1 1:0.5 1:0.3", "line 10"),
    ("-1 1:0.25", "-1:1 1:0.25", "line 11"),
    ("svm_type c_svc", "svm_type nu_svx", "unsupported svm_type"),
    ("kernel_type rbf", "kernel_type precomputed", "unsupported kernel_type"),
    ("nr_sv 1 1", "nr_sv 2 1", "does not match|truncated"),
])
def test_crafted_headers_and_lines_are_one_line_errors(old, new, match):
    assert parse_model_file(BASE, "ok.model")[0].nr_class == 2
    with pytest.raises(DataFormatError, match=match) as e:
        parse_model_file(BASE.replace(old, new), "bad.model")
    assert str(e.value).startswith("bad.model") and "\n" not in str(e.value)
