"""``RandSVMOneClass``: exact one-class nu-SVM on Dask, as scikit-learn's OneClassSVM."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import OutlierMixin

from randsvm_dist.core.constraints import Interval
from randsvm_dist.core.parameter_texts import documented
from randsvm_dist.estimators.base import RandSVMBase
from randsvm_dist.exact.fit import fit as exact_fit
from randsvm_dist.exact.problems import OneClassProblem


@documented("nu")
class RandSVMOneClass(OutlierMixin, RandSVMBase):
    """Exact one-class SVM (Schölkopf's nu formulation, LIBSVM ``-s 2``) for novelty
    detection on data sets of millions of rows.

    The sampling driver with the one-class kind (``exact.kinds.OneClass``): the whole
    problem has box 1 and sum alpha = nu n over all n rows; a working set of m >= nu n rows
    is solved with nu_ws = nu n / m, so its solution is the whole problem's optimum
    restricted to it; a row outside violates when f(x) < -tol; the primal over all rows
    certifies the relative gap.

    Args:
        <parameters>
        The other parameters are ``RandSVMBase``'s (kernel, gamma, gap_tol, ...).

    Fitted attributes: those of ``RandSVMBase``; ``dual_coef_`` (1, n_SV): alpha in
    LIBSVM's scaling, ``intercept_`` (1,): -rho, ``offset_`` = rho (as OneClassSVM:
    decision_function = score_samples - offset_).
    ``n_support_`` (1,), ``coef_`` (linear kernel), as OneClassSVM; ``n_iter_`` counts
    the driver's iterations, not the solver's.

    Examples
    --------
    >>> import numpy as np
    >>> from randsvm_dist import RandSVMOneClass
    >>> X = np.array([[0.0], [0.44], [0.45], [0.46], [1.0]])
    >>> oc = RandSVMOneClass(gamma="auto").fit(X)
    >>> oc.predict([[0.45], [5.0]])
    array([ 1, -1])
    """

    _svm_type = "one_class"  # LIBSVM's name; the key of estimators.ESTIMATORS
    _task = "one_class"
    _parameter_constraints: dict = {
        **RandSVMBase._parameter_constraints,
        "nu": [Interval(Real, 0, 1, closed="right")],
    }

    def __init__(self, *, nu=0.5, kernel="rbf", gamma="scale", degree=3, coef0=0.0, k=None,
                 sample_size="auto", bound_epsilon=0.2, bound_delta=0.9, separable=False,
                 max_iter=50, tol=1e-3, violator_tol=0.0, gap_tol=1e-3, cache_size=200.0,
                 random_state=None, client=None, n_partitions=None, scale=None, seed=None,
                 route="auto", cache="auto",
                 solver="auto"):
        self._keep(locals())

    def fit(self, data, y=None, sample_weight=None, *, dataset_kwargs: dict | None = None,
            checkpoint: str | None = None, resume: bool = False):
        """Train on a Dataset, a Parquet path/URL, or X (labels, if any, are ignored).

        Args:
            data, dataset_kwargs, checkpoint, resume: as ``RandSVMClassifier.fit``.
            y: ignored (scikit-learn's convention).
            sample_weight: per-row weights for array input (a row's box is its weight).

        Returns:
            self

        Raises:
            ParameterError: an invalid parameter, a NaN or infinite sample weight.
            SchemaError: bad X, a sample_weight of the wrong length.
            ClusterError: the cluster cannot be reached.
        """
        y = None  # labels play no part in training a one-class SVM
        inputs, info = self._prepare(data, y, sample_weight, dataset_kwargs)
        return self._adopt_result(exact_fit(self.client, inputs, self._problem(),
                                            self._settings(checkpoint, resume)), info)

    def _problem(self) -> OneClassProblem:
        return OneClassProblem(float(self.nu))

    def _adopt(self, model, support, classes, n_features: int) -> None:
        super()._adopt(model, support, classes, n_features)
        self.offset_ = -float(self._problem_intercept[0])

    def decision_function(self, X) -> np.ndarray:
        """f(x) = sum_i alpha_i k(x_i, x) - rho: negative for outliers.

        Raises:
            NotFittedError, SchemaError (wrong feature count, NaN).
        """
        lazy = self._on_dask("decision_function", X)
        if lazy is not None:
            return lazy
        return self._problem_values(X)[:, 0]

    def score_samples(self, X) -> np.ndarray:
        """The raw scores sum_i alpha_i k(x_i, x) (decision_function + offset_)."""
        return self.decision_function(X) + self.offset_

    def evaluate(self, data, client=None, *, normal_label=None) -> dict:
        """Predicted outlier fraction and ROC AUC (normal rows: label ``normal_label``,
        default 1) on a Parquet data set, computed on the workers (see
        ``distributed.predict.evaluate_dataset``)."""
        from randsvm_dist.distributed.predict import evaluate_dataset

        self._check_fitted()
        out = evaluate_dataset(self, data, client if client is not None else self.client,
                               normal_label=normal_label)
        out["n_support"] = int(len(self.support_))
        return out

    def predict(self, X) -> np.ndarray:
        """+1 for inliers (f(x) >= 0), -1 for outliers, as OneClassSVM."""
        lazy = self._on_dask("predict", X)
        if lazy is not None:
            return lazy
        return np.where(self.decision_function(X) >= 0, 1, -1)

