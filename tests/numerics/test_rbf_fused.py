"""The scan's RBF decision values (``numerics.kernels.decision_values`` on
``numerics.rbf_fused``): within the stated float32 bound of a float64 reference, one value
per row whatever the rows are scanned with or the threads, and each model's column its own."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact.scan.screening import KERNEL_VALUE_ERROR
from randsvm_dist.exact.scan.values import evaluated
from randsvm_dist.numerics.kernels import (
    Kernel,
    block_rows,
    decision_values,
    decision_values_float64,
)


def _rows(d: int, n: int, seed: int, sparse: bool):
    rng = np.random.default_rng(seed)
    if sparse:  # one-hot-like: ~14 ones per row, as a9a
        X = sp.random(n, d, density=14 / d, format="csr", random_state=seed,
                      dtype=np.float32)
        X.data[:] = 1.0
        return X
    return rng.normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("d, sparse", [(2, False), (10, False), (20, False), (300, False),
                                       (123, True)],
                         ids=["direct_d2", "d10", "d20", "d300", "csr_one_hot"])
def test_values_are_the_float64_reference_within_the_kernel_value_error(d, sparse):
    """Every kernel value is within KERNEL_VALUE_ERROR of exp(-gamma |x - s|^2) (the bound
    screening pads its residual norms with), so a decision value is within
    KERNEL_VALUE_ERROR sum_j |coef_j| of the float64 one."""
    X, S = _rows(d, 1500, 1, sparse), _rows(d, 2500, 2, sparse)
    coef = np.random.default_rng(3).normal(size=(2500, 2)).astype(np.float32)
    kernel = Kernel("rbf", 1.0 / 14 if sparse else 1.0 / d)
    f = decision_values(X, S, coef, np.array([0.5, -0.5]), kernel)
    ref = decision_values_float64(X, S, coef, np.array([0.5, -0.5]), kernel)
    bound = KERNEL_VALUE_ERROR * np.abs(coef.astype(np.float64)).sum(axis=0)
    assert np.all(np.abs(f - ref) <= bound), np.abs(f - ref).max(axis=0) / bound


@pytest.mark.parametrize("d", [3, 10])
def test_a_rows_value_is_the_same_whatever_rows_it_is_scanned_with(d):
    """Rows cut at multiples of ``block_rows`` (as tasks and pieces cut them) get the bytes of
    one call over all rows."""
    X, S = _rows(d, 3000, 4, False), _rows(d, 4000, 5, False)
    coef = np.random.default_rng(6).normal(size=4000).astype(np.float32)
    kernel = Kernel("rbf", 0.3)
    whole = decision_values(X, S, coef, 0.1, kernel)
    step = 3 * block_rows(len(S))
    cut = np.concatenate([decision_values(X[a:a + step], S, coef, 0.1, kernel)
                          for a in range(0, len(X), step)])
    assert whole.tobytes() == cut.tobytes()


def test_each_models_column_is_its_own_call():
    """Several models' coefficients in one call give each model's values of a call of its
    own, to the bit."""
    X, S = _rows(10, 1000, 7, False), _rows(10, 3000, 8, False)
    coef = np.random.default_rng(9).normal(size=(3000, 3)).astype(np.float32)
    kernel = Kernel("rbf", 0.1)
    together = decision_values(X, S, coef, np.zeros(3), kernel)
    for q in range(3):
        alone = decision_values(X, S, coef[:, q], 0.0, kernel)
        assert together[:, q].tobytes() == alone.tobytes()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_the_scans_values_do_not_depend_on_its_threads(sparse):
    """``scan_values.evaluated`` on 1 and 3 threads: the same bytes."""
    d = 123 if sparse else 10
    X, S = _rows(d, 9000, 10, sparse), _rows(d, 1500, 11, sparse)
    coef = np.random.default_rng(12).normal(size=(1500, 1))
    part = Partition(X, np.zeros(9000, np.int32), 0)
    members = np.ones((9000, 1), bool)
    rows = np.arange(0, 9000, 2)
    kernel = Kernel("rbf", 0.05)
    one, evals = evaluated(part, S, coef, np.zeros(1), kernel, members, rows, threads=1)
    three, _ = evaluated(part, S, coef, np.zeros(1), kernel, members, rows, threads=3)
    assert evals == len(rows) * 1500
    assert one.tobytes() == three.tobytes()
