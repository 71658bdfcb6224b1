"""The certificate's floor (``exact.certificate.certify``, ``kinds.OneClass.objective_floor``):
a degenerate one-class problem (optimum ~0) is not reported at a relative gap of 1, and
no other gap moves."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.svm import OneClassSVM

from randsvm_dist import RandSVMOneClass
from randsvm_dist.exact.certificate import certify
from randsvm_dist.exact.kinds import CSVC, EpsilonSVR, OneClass
from randsvm_dist.exact.state import ProblemState, SupportModel
from randsvm_dist.numerics.kernels import Kernel, kernel_matrix
from randsvm_dist.solvers.params import SolverParams


def test_degenerate_one_class_agrees_with_one_class_svm_and_warns_nothing():
    X = make_classification(random_state=42)[0]  # centred: a linear one-class's w ~ 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test
        est = RandSVMOneClass(kernel="linear").fit(X)
    assert est.fit_status_ == 0 and est.certified_
    assert est.relative_gap_ <= est.gap_tol
    ref = OneClassSVM(kernel="linear").fit(X)
    assert (est.predict(X) == ref.predict(X)).mean() == 1.0
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                               atol=1e-4)


@pytest.mark.parametrize("kernel", [Kernel("rbf", 0.5), Kernel("rbf", 50.0)])
def test_the_floor_never_exceeds_the_dual_with_non_negative_kernel_values(kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    a = rng.uniform(0, 1, 60)
    dual = 0.5 * a @ kernel_matrix(X, X, kernel).astype(np.float64) @ a
    assert OneClass(0.3).objective_floor(a, X, kernel) <= dual * (1 + 1e-3)  # float32 K


def test_other_kinds_have_no_floor_and_their_gaps_do_not_move():
    X = np.ones((3, 2), np.float32)
    assert CSVC(1).objective_floor(np.ones(3), X, Kernel("linear")) == 0.0
    assert EpsilonSVR().objective_floor(np.ones(3), X, Kernel("linear")) == 0.0
    # a one-class certificate whose |D| dominates its floor: the gap relative to |P|, |D|
    X = np.array([[3.0, 0.0], [3.1, 0.2], [2.9, -0.1]], np.float32)
    coef = np.array([0.5, 0.7, 0.3])
    kernel = Kernel("linear")
    half = 0.5 * coef @ kernel_matrix(X, X, kernel).astype(np.float64) @ coef
    p = ProblemState(OneClass(0.5), SolverParams(1.0, kernel), n_rows=3, size=3.0,
                     model=SupportModel(np.arange(3), X, np.ones(3), np.ones(3), coef, -1.0,
                                        -half))
    cert = certify(p, {"loss": 0.02, "loss_ws": 0.01})
    primal = half + 0.5 * 3 * -1.0 + 0.02
    assert OneClass(0.5).objective_floor(coef, X, kernel) < max(abs(primal), half)
    assert cert.relative_gap == pytest.approx((primal + half) / max(abs(primal), half))
