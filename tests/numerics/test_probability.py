"""Probabilities (randsvm_dist.numerics.probability) against LIBSVM itself.

- sigmoid_train: reproduces the probA/probB that libsvm-official's ``svm_train(-b 1)``
  writes, bit for bit up to rounding: LIBSVM fits them on 5-fold cross-validated decision
  values whose folds come from C's rand(); the test seeds the same rand() (glibc's, shared
  with LIBSVM's library in this process), redoes LIBSVM's folds and sub-trainings, and fits
  our sigmoid on the decision values. Also against a line-by-line scalar transcription of
  LIBSVM's C code.
- multiclass_probability / predict_proba: stock LIBSVM's ``svm_predict(..., '-b 1')``
  probabilities from the model's own pairwise decision values, to 1e-6.
"""

from __future__ import annotations

import ctypes
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from libsvm.svmutil import svm_predict, svm_train
from sklearn.datasets import load_iris, make_moons

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.probability import (
    multiclass_probability,
    pairwise_probabilities,
    predict_proba,
    sigmoid_predict,
    sigmoid_train,
)


def sigmoid_train_c(dec, labels):
    """LIBSVM's sigmoid_train (svm.cpp), transcribed line by line in scalar Python."""
    prior1 = float(sum(1 for v in labels if v > 0))
    prior0 = len(labels) - prior1
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    hi, lo = (prior1 + 1.0) / (prior1 + 2.0), 1 / (prior0 + 2.0)
    t = [hi if v > 0 else lo for v in labels]
    A, B = 0.0, math.log((prior0 + 1.0) / (prior1 + 1.0))

    def fv(a, b):
        s = 0.0
        for d, ti in zip(dec, t):
            z = d * a + b
            s += ti * z + math.log(1 + math.exp(-z)) if z >= 0 else \
                (ti - 1) * z + math.log(1 + math.exp(z))
        return s

    fval = fv(A, B)
    for _ in range(max_iter):
        h11, h22, h21, g1, g2 = sigma, sigma, 0.0, 0.0, 0.0
        for d, ti in zip(dec, t):
            z = d * A + B
            if z >= 0:
                p, q = math.exp(-z) / (1.0 + math.exp(-z)), 1.0 / (1.0 + math.exp(-z))
            else:
                p, q = 1.0 / (1.0 + math.exp(z)), math.exp(z) / (1.0 + math.exp(z))
            d2 = p * q
            h11 += d * d * d2
            h22 += d2
            h21 += d * d2
            g1 += d * (ti - p)
            g2 += ti - p
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nf = fv(nA, nB)
            if nf < fval + 0.0001 * step * gd:
                A, B, fval = nA, nB, nf
                break
            step /= 2.0
        if step < min_step:
            break
    return A, B


def multiclass_probability_c(r):
    """LIBSVM's multiclass_probability, transcribed in scalar Python."""
    k = len(r)
    p = [1.0 / k] * k
    Q = [[0.0] * k for _ in range(k)]
    for t in range(k):
        for j in range(t):
            Q[t][t] += r[j][t] * r[j][t]
            Q[t][j] = Q[j][t]
        for j in range(t + 1, k):
            Q[t][t] += r[j][t] * r[j][t]
            Q[t][j] = -r[j][t] * r[t][j]
    eps = 0.005 / k
    for _ in range(max(100, k)):
        Qp = [sum(Q[t][j] * p[j] for j in range(k)) for t in range(k)]
        pQp = sum(p[t] * Qp[t] for t in range(k))
        if max(abs(Qp[t] - pQp) for t in range(k)) < eps:
            break
        for t in range(k):
            diff = (-Qp[t] + pQp) / Q[t][t]
            p[t] += diff
            pQp = (pQp + diff * (diff * Q[t][t] + 2 * Qp[t])) / (1 + diff) / (1 + diff)
            for j in range(k):
                Qp[j] = (Qp[j] + diff * Q[t][j]) / (1 + diff)
                p[j] /= (1 + diff)
    return np.array(p)


@pytest.mark.parametrize("seed, scale", [(0, 1.0), (1, 30.0), (2, 0.01)])
def test_sigmoid_train_is_libsvms_algorithm(seed, scale):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(300) < 0.3, 1.0, -1.0)
    dec = scale * (y * rng.uniform(0, 2, 300) + rng.normal(0, 1, 300))
    A, B = sigmoid_train(dec, y)
    A0, B0 = sigmoid_train_c(dec.tolist(), y.tolist())
    assert A == pytest.approx(A0, rel=1e-9, abs=1e-12)
    assert B == pytest.approx(B0, rel=1e-9, abs=1e-12)
    assert A < 0  # P(+1) grows with f


def test_sigmoid_train_separable_and_weights():
    f = np.r_[np.linspace(1, 5, 50), np.linspace(-5, -1, 50)]
    y = np.r_[np.ones(50), -np.ones(50)]
    A, B = sigmoid_train(f, y)
    assert (A, B) == pytest.approx(sigmoid_train_c(f.tolist(), y.tolist()), rel=1e-9)
    p = sigmoid_predict(f, A, B)
    assert np.all(p[:50] > 0.5) and np.all(p[50:] < 0.5)
    # the prior-corrected targets keep p away from 0 and 1 on separable data
    assert p.max() < 1 and p.min() > 0
    # integer sample weights == repeated rows
    rng = np.random.default_rng(3)
    g = rng.normal(size=80) + np.r_[np.ones(40), -np.ones(40)]
    yy = np.r_[np.ones(40), -np.ones(40)]
    w = rng.integers(1, 4, 80)
    rep = np.repeat(np.arange(80), w)
    assert sigmoid_train(g, yy, sample_weight=w) == pytest.approx(
        sigmoid_train(g[rep], yy[rep]), rel=1e-9)
    with pytest.raises(ParameterError):
        sigmoid_train(f, y[:3])


def test_sigmoid_predict_is_stable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = sigmoid_predict(np.array([-1e6, -10.0, 0.0, 10.0, 1e6]), -2.0, 0.5)
    assert p[0] == 0.0 and p[-1] == 1.0
    np.testing.assert_allclose(p[1:4], 1 / (1 + np.exp(-2.0 * np.array([-10, 0, 10]) + 0.5)))


def test_multiclass_probability_is_libsvms_iteration():
    rng = np.random.default_rng(0)
    for k in (3, 4, 7):
        r = np.zeros((20, k, k))
        iu = np.triu_indices(k, 1)
        for n in range(20):
            v = rng.uniform(1e-7, 1 - 1e-7, len(iu[0]))
            r[n][iu] = v
            r[n][iu[1], iu[0]] = 1 - v
        p = multiclass_probability(r)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        for n in range(20):
            np.testing.assert_allclose(p[n], multiclass_probability_c(r[n].tolist()),
                                       rtol=0, atol=1e-13)
        np.testing.assert_allclose(multiclass_probability(r[0]), p[0], atol=0)


def _glibc_rand():
    try:
        libc = ctypes.CDLL(None)
        libc.rand.restype = ctypes.c_int
        return libc
    except (OSError, AttributeError):
        pytest.skip("no C library rand() to reproduce LIBSVM's folds")


def libsvm_cv_sigmoids(X, y, opts_no_c, C, labels, seed):
    """LIBSVM's svm_binary_svc_probability for every pair, redone (see the module doc)."""
    libc = _glibc_rand()
    libc.srand(seed)
    out = []
    for a in range(len(labels)):
        for b in range(a + 1, len(labels)):
            rows = np.r_[np.flatnonzero(y == labels[a]), np.flatnonzero(y == labels[b])]
            ys = np.where(y[rows] == labels[a], 1.0, -1.0)
            n = len(rows)
            perm = np.arange(n)
            for i in range(n):
                j = i + libc.rand() % (n - i)
                perm[i], perm[j] = perm[j], perm[i]
            dec = np.zeros(n)
            for f in range(5):
                lo, hi = f * n // 5, (f + 1) * n // 5
                tr = np.r_[perm[:lo], perm[hi:]]
                sub = svm_train(list(ys[tr]), sp.csr_matrix(X[rows][tr]),
                                f"{opts_no_c} -c 1 -w1 {C!r} -w-1 {C!r} -q")
                _, _, dv = svm_predict([], sp.csr_matrix(X[rows][perm[lo:hi]]), sub, "-q")
                dec[perm[lo:hi]] = np.asarray(dv)[:, 0] * sub.get_labels()[0]
            out.append(sigmoid_train(dec, ys))
    return np.array(out)


@pytest.mark.parametrize("data", ["moons", "iris"])
def test_sigmoid_train_reproduces_libsvm_probA_probB(data):
    if data == "moons":
        X, y = make_moons(200, noise=0.3, random_state=0)
        y = np.where(y == 1, 1.0, -1.0)
        opts, C = "-s 0 -t 2 -g 1", 2.0
    else:
        X, y = load_iris(return_X_y=True)
        y = y.astype(float)
        opts, C = "-s 0 -t 2 -g 0.5", 1.0
    libc = _glibc_rand()
    libc.srand(11)
    m = svm_train(list(y), sp.csr_matrix(X), f"{opts} -c {C!r} -b 1 -q")
    labels = m.get_labels()
    k = len(labels)
    ours = libsvm_cv_sigmoids(X, y, opts, C, labels, 11)
    npairs = k * (k - 1) // 2
    np.testing.assert_allclose(ours[:, 0], [m.probA[p] for p in range(npairs)], rtol=1e-9)
    np.testing.assert_allclose(ours[:, 1], [m.probB[p] for p in range(npairs)], rtol=1e-9,
                               atol=1e-12)


def test_predict_proba_matches_stock_b1():
    X, y = load_iris(return_X_y=True)
    Xs = sp.csr_matrix(X)
    m = svm_train(list(y.astype(float)), Xs, "-s 0 -t 2 -g 0.5 -c 0.3 -b 1 -q")
    _, _, probs = svm_predict([], Xs, m, "-b 1 -q")
    _, _, dec = svm_predict([], Xs, m, "-q")  # LIBSVM's pairwise values, its pair order
    A = [m.probA[p] for p in range(3)]
    B = [m.probB[p] for p in range(3)]
    ours = predict_proba(np.asarray(dec), A, B, 3)
    np.testing.assert_allclose(ours, np.asarray(probs), atol=1e-6)
    r = pairwise_probabilities(np.asarray(dec), A, B, 3)
    np.testing.assert_allclose(r + np.swapaxes(r, 1, 2),
                               np.broadcast_to(1 - np.eye(3), r.shape), atol=1e-15)
    with pytest.raises(ParameterError):
        predict_proba(np.asarray(dec), A[:2], B, 3)
    with pytest.raises(ParameterError, match="permutation"):
        predict_proba(np.asarray(dec), A, B, 3, coupling_order=[0, 0, 1])
    # two classes: LIBSVM returns the clipped pairwise sigmoid directly
    keep = y > 0
    m2 = svm_train(list(y[keep].astype(float)), Xs[keep], "-s 0 -t 2 -g 0.5 -b 1 -q")
    _, _, p2 = svm_predict([], Xs[keep], m2, "-b 1 -q")
    _, _, d2 = svm_predict([], Xs[keep], m2, "-q")
    np.testing.assert_allclose(predict_proba(np.asarray(d2), [m2.probA[0]], [m2.probB[0]],
                                             2), np.asarray(p2), atol=1e-12)
