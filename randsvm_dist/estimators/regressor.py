"""``RandSVMRegressor``: exact epsilon-SVR on Dask (RandSVM sampling), as scikit-learn's SVR."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin

from randsvm_dist.core.constraints import Interval
from randsvm_dist.core.parameter_texts import documented
from randsvm_dist.estimators.base import RandSVMBase
from randsvm_dist.exact.fit import fit as exact_fit
from randsvm_dist.exact.problems import EpsilonSVRProblem


@documented("C", "epsilon")
class RandSVMRegressor(RegressorMixin, RandSVMBase):
    """Exact kernel epsilon-SVR for data sets of millions of rows.

    The sampling driver of ``RandSVMClassifier`` with the epsilon-SVR kind
    (``exact.kinds.EpsilonSVR``): LIBSVM ``-s 3`` solves each working set; a row outside
    it violates when |y - f(x)| > epsilon + tol; the primal over all rows, 1/2 |w|^2 +
    sum_i C_i max(0, |y_i - f(x_i)| - epsilon), against the working set's dual certifies
    the relative gap (``gap_tol``).

    Args:
        <parameters>
        The other parameters are ``RandSVMBase``'s (kernel, gamma, gap_tol, ...).

    Fitted attributes: those of ``RandSVMBase``; ``dual_coef_`` (1, n_SV): alpha - alpha*,
    ``intercept_`` (1,): f(x) = dual_coef_ k(support_vectors_, x) + intercept_.
    ``n_support_`` (1,), ``coef_`` (linear kernel), as SVR; ``n_iter_`` counts the
    driver's iterations, not the solver's.

    Examples
    --------
    >>> import numpy as np
    >>> from randsvm_dist import RandSVMRegressor
    >>> X = np.arange(10.0).reshape(-1, 1)
    >>> y = 2 * X.ravel() + 1
    >>> reg = RandSVMRegressor(kernel="linear", C=100.0, epsilon=0.1).fit(X, y)
    >>> reg.predict([[11.0]]).round(0)
    array([23.])
    >>> reg.coef_.round(1)
    array([[2.]])
    """

    _svm_type = "epsilon_svr"  # LIBSVM's name; the key of estimators.ESTIMATORS
    _task = "regression"
    _parameter_constraints: dict = {
        **RandSVMBase._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="right")],  # np.inf: a hard margin
        "epsilon": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, C=1.0, epsilon=0.1, kernel="rbf", gamma="scale", degree=3,
                 coef0=0.0, k=None, sample_size="auto", bound_epsilon=0.2, bound_delta=0.9,
                 separable=False, max_iter=50, tol=1e-3, violator_tol=0.0, gap_tol=1e-3,
                 cache_size=200.0, random_state=None, client=None, n_partitions=None,
                 scale=None, seed=None, route="auto", cache="auto",
                 solver="auto"):
        self._keep(locals())

    def fit(self, data, y=None, sample_weight=None, *, dataset_kwargs: dict | None = None,
            checkpoint: str | None = None, resume: bool = False):
        """Train on a Dataset, a Parquet path/URL (float label column), or arrays (X, y).

        Args:
            data, dataset_kwargs, checkpoint, resume: as ``RandSVMClassifier.fit``.
            y: real-valued targets when data is X.
            sample_weight: per-row weights for array input (a row's box is C x weight).

        Returns:
            self

        Raises:
            ParameterError: an invalid parameter, a NaN or infinite sample weight.
            SchemaError: a missing, non-numeric or non-finite target (naming file/row), a
                sample_weight of the wrong length.
            ClusterError: the cluster cannot be reached.
        """
        inputs, info = self._prepare(data, y, sample_weight, dataset_kwargs)
        return self._adopt_result(exact_fit(self.client, inputs, self._problem(),
                                            self._settings(checkpoint, resume)), info)

    def _problem(self) -> EpsilonSVRProblem:
        return EpsilonSVRProblem(float(self.C), float(self.epsilon))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def predict(self, X) -> np.ndarray:
        """f(x) for the rows of X (a lazy dask array for Dask input).

        Raises:
            NotFittedError, SchemaError (wrong feature count, NaN).
        """
        lazy = self._on_dask("predict", X)
        if lazy is not None:
            return lazy
        return self._problem_values(X)[:, 0]
