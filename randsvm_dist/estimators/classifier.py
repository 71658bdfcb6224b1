"""``RandSVMClassifier``: exact kernel C-SVC on Dask (RandSVM-1), as scikit-learn's SVC."""

from __future__ import annotations

import copy
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if

from randsvm_dist.core.constraints import Interval, StrOptions
from randsvm_dist.core.parameter_texts import documented
from randsvm_dist.engine.client import dask_client
from randsvm_dist.engine.dask_collections import is_dask_collection
from randsvm_dist.engine.dask_predict import dask_accuracy
from randsvm_dist.estimators.base import RandSVMBase
from randsvm_dist.exact.fit import FitResult
from randsvm_dist.exact.fit import fit as exact_fit
from randsvm_dist.exact.problems import CSVCProblems
from randsvm_dist.exceptions import NotFittedError, ParameterError
from randsvm_dist.model_files.libsvm_text import CLASSIFICATION_TYPES, OVR_SVM_TYPE
from randsvm_dist.model_files.ovo_layout import (
    linear_coef,
    ovo_pairs,
    pair_coef_matrix,
    sort_labels,
    svc_attributes,
)
from randsvm_dist.numerics.multiclass import ovr_decision_function, ovr_predict, predict


@documented("C", "class_weight", "multi_class", "decision_function_shape", "break_ties",
            "probability")
class RandSVMClassifier(ClassifierMixin, RandSVMBase):
    """Exact kernel C-SVM for data sets of millions of rows: RandSVM-1 on Dask, LIBSVM solves.

    Args:
        <parameters>
        The other parameters are ``RandSVMBase``'s (kernel, gamma, gap_tol, ...).

    Fitted attributes: those of ``RandSVMBase`` and ``classes_``, ``problems_``
    ((positive, negative) class indices per problem; negative -1: one-vs-rest); for
    one-vs-one and binary models SVC's ``dual_coef_`` (k-1, n_SV), ``intercept_``
    (n_pairs,), ``n_support_`` (per class), ``coef_`` (linear kernel), support vectors
    grouped by class as LIBSVM lists them, ``probA_``/``probB_`` (probability=True); for
    one-vs-rest models ``dual_coef_`` (k, n_SV) and ``intercept_`` (k,), model j scoring
    class j against the rest. ``relative_gaps_`` holds each problem's (pair's) certified
    gap, ``relative_gap_`` the worst.

    Differences from SVC, by design: ``n_iter_`` counts the driver's solve/scan
    iterations (``history_`` holds each), not the solver's; a model fitted on dense rows
    also predicts sparse rows (and the other way round); ``support_`` is int64 (data sets
    beyond 2**31 rows).

    Examples
    --------
    >>> import numpy as np
    >>> from randsvm_dist import RandSVMClassifier
    >>> X = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]])
    >>> y = np.array([1, 1, 1, 2, 2, 2])
    >>> clf = RandSVMClassifier(kernel="linear", random_state=0).fit(X, y)
    >>> clf.predict([[-0.8, -1], [3, 2]])
    array([1, 2])
    >>> clf.support_vectors_
    array([[-1., -1.],
           [ 1.,  1.]])
    >>> clf.coef_
    array([[0.5, 0.5]])
    >>> clf.certified_
    True
    """

    _svm_type = "c_svc"  # LIBSVM's name; the key of estimators.ESTIMATORS
    _parameter_constraints: dict = {
        **RandSVMBase._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="right")],  # np.inf: a hard margin
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "multi_class": [StrOptions({"ovo", "ovr"})],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "break_ties": ["boolean"],
        "probability": ["boolean"],
    }

    def __init__(self, *, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0,
                 class_weight=None, multi_class="ovo", decision_function_shape="ovr",
                 break_ties=False, probability=False, k=None, sample_size="auto", bound_epsilon=0.2,
                 bound_delta=0.9, separable=False, max_iter=50, tol=1e-3, violator_tol=0.0,
                 gap_tol=1e-3, cache_size=200.0, random_state=None, client=None,
                 n_partitions=None, scale=None, seed=None, route="auto", cache="auto",
                 solver="auto"):
        self._keep(locals())

    def fit(self, data, y=None, sample_weight=None, *, dataset_kwargs: dict | None = None,
            checkpoint: str | None = None, resume: bool = False):
        """Train on a Dataset, a Parquet path/URL, or arrays (X, y).

        Args:
            data: Dataset, Parquet path/URL, or X (dense, scipy sparse or dask).
            y: labels when data is X.
            sample_weight: per-row weights for array input (a row's box is C x class
                weight x sample weight; rows weighing <= 0 take no part, as in SVC).
            dataset_kwargs: options of ``Dataset.open`` for a path/URL (label_column,
                feature_columns, n_features).
            checkpoint: a directory (path or URL) where the driver's state is written
                after every iteration (see ``randsvm_dist.exact.checkpoint``).
            resume: go on from the state in ``checkpoint`` if there is one (same data and
                settings, random_state included); the model is the uninterrupted run's.

        Returns:
            self

        Raises:
            ParameterError: an invalid parameter, a NaN or infinite sample weight.
            SchemaError: one class, bad X/y, a sample_weight of the wrong length, y with a
                Dataset.
            ClusterError: the cluster cannot be reached.
        """
        from randsvm_dist.estimators.cross_val_probability import calibrate_in_memory

        rows = (data, y, sample_weight) if self.probability else None
        self._calibrate_on_workers = rows is not None and not calibrate_in_memory(self, *rows,
                                                                                   dry=True)
        inputs, info = self._prepare(data, y, sample_weight, dataset_kwargs)
        self._adopt_result(exact_fit(self.client, inputs, self._problem(),
                                     self._settings(checkpoint, resume),
                                     after=(self._after_cluster_fit
                                            if self._calibrate_on_workers else None)), info)
        if rows is not None and not self._calibrate_on_workers:
            calibrate_in_memory(self, *rows)
        return self

    def _after_cluster_fit(self, client, parts, result: FitResult) -> tuple | None:
        """Platt's sigmoids on the workers when ``probability`` and the rows are not in
        memory (``estimators.calibration``): (probA, probB, method), or None."""
        if not (self.probability and getattr(self, "_calibrate_on_workers", True)):
            return None
        from randsvm_dist.estimators.calibration import fit_sigmoids

        fitted = copy.copy(self)._adopt_result(result)  # the folds reuse its seed and gamma
        # the 5 folds' fits at once, each started from the full run's final states
        return fit_sigmoids(client, parts, result.classes, fitted, list(result.states))

    def _adopt_result(self, result: FitResult, info: dict | None = None):
        """``RandSVMBase._adopt_result``, and the probabilities of ``_after_cluster_fit``."""
        super()._adopt_result(result, info)
        if result.after is not None:
            self._set_probabilities(*result.after)
        return self

    def _fold_estimator(self, **overrides) -> RandSVMClassifier:
        """A classifier of this one's parameters (``overrides`` applied) for Platt
        scaling's fold fits: always this class's own parameters, never a subclass's."""
        params = {k: v for k, v in self.get_params(deep=False).items()
                  if k in RandSVMClassifier._parameter_constraints}
        return RandSVMClassifier(**{**params, **overrides})

    def _set_probabilities(self, prob_a, prob_b, method: str) -> None:
        self._libsvm.prob_a, self._libsvm.prob_b = prob_a, prob_b
        self.probA_, self.probB_ = prob_a, prob_b
        self.probability_method_ = method

    def _problem(self) -> CSVCProblems:
        return CSVCProblems(float(self.C), self.class_weight, self.multi_class)

    def _class_weights(self, classes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each class's weight (``exact.problems.CSVCProblems.class_weights``)."""
        return self._problem().class_weights(classes, counts)

    def _adopt(self, model, support, classes, n_features: int) -> None:
        self._coupling_order = None  # LIBSVM couples probabilities in its label order
        if model.svm_type in CLASSIFICATION_TYPES:
            labels = np.asarray(model.labels)
            if np.any(labels[:-1] > labels[1:]):
                self._coupling_order = np.searchsorted(np.sort(labels), labels)
            model, order = sort_labels(model)
            support = np.asarray(support)[order]
        self._adopt_common(model, support, n_features)
        self.classes_ = (np.asarray(classes) if classes is not None
                         else np.asarray(model.labels))
        k = len(self.classes_)
        self.class_weight_ = getattr(self, "class_weight_", np.ones(k))
        if model.svm_type == OVR_SVM_TYPE:
            self.problems_ = [(j, -1) for j in range(k)]
            self.dual_coef_ = np.asarray(model.sv_coef, np.float64).T
            self.intercept_ = -np.asarray(model.rho, np.float64)
            owner = np.argmax(self.dual_coef_ > 0, axis=0)
            self.n_support_ = np.bincount(owner, minlength=k).astype(np.int32)
            self._problem_coef, self._problem_intercept = self.dual_coef_, self.intercept_
        else:
            self.problems_ = [(1, -1)] if k == 2 else ovo_pairs(k)
            attrs = svc_attributes(model)
            self.dual_coef_, self.intercept_ = attrs["dual_coef_"], attrs["intercept_"]
            self.n_support_ = attrs["n_support_"]
            if k == 2:
                self._problem_coef, self._problem_intercept = self.dual_coef_, self.intercept_
            else:
                self._problem_coef = pair_coef_matrix(model.sv_coef, model.n_sv).T
                self._problem_intercept = attrs["_intercept_"]
        self.probA_ = None if model.prob_a is None else np.asarray(model.prob_a)
        self.probB_ = None if model.prob_b is None else np.asarray(model.prob_b)

    @property
    def coef_(self) -> np.ndarray:
        """w of each problem for the linear kernel (read-only), as SVC's ``coef_``.

        Raises:
            AttributeError: not a linear kernel.
        """
        self._check_fitted()
        if self.kernel_.name != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        if self._libsvm.svm_type == OVR_SVM_TYPE:
            coef = self.dual_coef_ @ np.asarray(self.support_vectors_.todense()
                                                if hasattr(self.support_vectors_, "todense")
                                                else self.support_vectors_, np.float64)
            coef.flags.writeable = False
            return coef
        return linear_coef(self.dual_coef_, self.n_support_, self.support_vectors_)

    # -- prediction ------------------------------------------------------------------------
    @property
    def _ovo(self) -> bool:
        return len(self.classes_) > 2 and self.problems_[0][1] >= 0

    def decision_function(self, X) -> np.ndarray:
        """Decision values: (n,) for two classes (positive means classes_[1]); for more,
        (n, k) 'ovr' scores or (n, k(k-1)/2) pairwise values ('ovo' shape of a one-vs-one
        model), as SVC.

        Raises:
            NotFittedError, SchemaError (wrong feature count, NaN).
        """
        lazy = self._on_dask("decision_function", X)
        if lazy is not None:
            return lazy
        f = self._problem_values(X)
        if f.shape[1] == 1:
            return f[:, 0]
        if self._ovo and self.decision_function_shape == "ovr":
            return ovr_decision_function(f, len(self.classes_))
        return f

    def predict(self, X) -> np.ndarray:
        """Predicted labels of the rows of X (a lazy dask array for Dask input): LIBSVM's
        votes for one-vs-one models (ties to the lower class; ``break_ties`` as SVC)."""
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ParameterError("break_ties must be False when decision_function_shape is "
                                 "'ovo'")
        lazy = self._on_dask("predict", X)
        if lazy is not None:
            return lazy
        f = self._problem_values(X)
        if not self._ovo:
            return self.classes_[ovr_predict(f[:, 0] if f.shape[1] == 1 else f)]
        return self.classes_[predict(f, len(self.classes_), self.break_ties,
                                     self.decision_function_shape)]

    def _has_probabilities(self) -> bool:
        if getattr(self, "probA_", None) is not None:
            return True
        if not self.probability:
            raise AttributeError("predict_proba is available when fitted with "
                                 "probability=True")
        return True

    @available_if(_has_probabilities)
    def predict_proba(self, X) -> np.ndarray:
        """(n, k) class probabilities, as LIBSVM's ``svm_predict_probability`` (pairwise
        coupling of the pairs' sigmoids) and stock LIBSVM's ``-b 1`` on the saved file.

        Raises:
            NotFittedError, SchemaError; AttributeError without probability=True.
        """
        from randsvm_dist.numerics.probability import predict_proba

        lazy = self._on_dask("predict_proba", X)
        if lazy is not None:
            return lazy
        f = self._problem_values(X, float64=True)
        if getattr(self, "probA_", None) is None:
            raise NotFittedError("predict_proba is not available when fitted with "
                                 "probability=False")
        dec = -f if len(self.classes_) == 2 else f
        return predict_proba(dec, self.probA_, self.probB_, len(self.classes_),
                             getattr(self, "_coupling_order", None))

    @available_if(_has_probabilities)
    def predict_log_proba(self, X) -> np.ndarray:
        """log of ``predict_proba``."""
        return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on (X, y); Dask input is scored on the cluster, never gathered."""
        if is_dask_collection(X) and sample_weight is None:
            self._check_fitted()
            with dask_client(self.client) as client:
                return dask_accuracy(self, X, y, client)
        return super().score(X, y, sample_weight)

