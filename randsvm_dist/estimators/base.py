"""What every RandSVM estimator shares: parameters, the fit on Dask, fitted attributes.

A concrete estimator (classifier, regressor, one-class) says which task its labels are
(``_task``), which problems a fit solves (``_problem``: an ``exact.problems`` set), and
how decision values become predictions. Its ``fit`` prepares the input in one step
(``_prepare``: ``engine.fit_input``), calls the functional core once
(``exact.fit.fit``) and adopts the result (``_adopt_result``), as scikit-learn's
``BaseLibSVM`` fits by one call of libsvm.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import fields
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from randsvm_dist.core.constraints import Interval, StrOptions, check_params
from randsvm_dist.core.parameter_texts import documented
from randsvm_dist.core.validation import check_features, same_width
from randsvm_dist.engine.dask_collections import is_dask_collection
from randsvm_dist.engine.dask_predict import apply_to_dask
from randsvm_dist.engine.fit_input import FitInput, on_workers, prepare_fit_input
from randsvm_dist.estimators.fitted_attributes import (
    check_feature_names,
    finish_attributes,
    one_column_coef,
    record_dataset_features,
    record_input,
)
from randsvm_dist.exact.fit import HARD_MARGIN_C, FitResult, FitSettings
from randsvm_dist.exact.fit import fit as exact_fit
from randsvm_dist.exact.problems import ProblemSet
from randsvm_dist.exceptions import NotFittedError, ParameterError
from randsvm_dist.numerics.kernels import (
    KERNELS,
    decision_values,
    decision_values_float64,
)
from randsvm_dist.solvers.onedal_backend import check_backend

__all__ = ["HARD_MARGIN_C", "RandSVMBase"]  # HARD_MARGIN_C: named by the texts of C

ADVICE = {
    "k_reached": "drop k (or raise it)",
    "violator_tol": "set violator_tol=0",
    "max_iter": "raise max_iter",
    "optimal": "lower tol (LIBSVM's stopping tolerance)",
}


@documented("kernel", "gamma", "degree", "coef0", "k", "sample_size", "bound_epsilon",
            "bound_delta", "separable", "max_iter", "tol", "violator_tol", "gap_tol", "seed",
            "route", "cache", "cache_size", "solver", "random_state", "client", "n_partitions",
            "scale")
class RandSVMBase(BaseEstimator):
    """Parameters and fitting machinery shared by the RandSVM estimators.

    Shared parameters (the subclasses document their own; texts: ``core.parameter_texts``):
        <parameters>

    Fitted attributes (every estimator): ``n_features_in_``, ``feature_names_in_`` (a
    DataFrame of string column names; checked at prediction as scikit-learn does),
    ``support_`` (global row indices), ``support_vectors_`` (dense for dense input, of its
    float dtype), ``dual_coef_``, ``intercept_``, ``n_support_``, ``coef_`` (linear
    kernel), ``fit_status_``, ``shape_fit_`` (see ``estimators.fitted_attributes``),
    ``history_``,
    ``n_iter_``, ``stop_reasons_``, ``optimal_``, ``relative_gap_`` (the largest certified
    relative gap over the problems), ``relative_gaps_`` (per problem), ``certified_``,
    ``seed_info_``, ``gamma_``, ``k_``, ``sample_size_``, ``fit_time_``, ``scaler_``,
    ``random_seed_``, ``phases_`` (seconds of the fit's phases: 'placement' (the data
    checked and placed, duplicates collapsed on the workers included), 'duplicates' (in
    the client's process only, where it is measured apart), 'setup' (scaling, gamma,
    the problems, seeds), 'iterations' (the solve/scan loop, per iteration in
    ``history_``), 'assembly' (the final model), 'after' (the classifier's Platt scaling
    on the workers, when it ran), 'attributes', 'total' (``fit_time_``)).
    """

    _task = "classification"
    _parameter_constraints: dict = {
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0, None, closed="neither")],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "coef0": [Real],
        "k": [None, StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "sample_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "bound_epsilon": [Interval(Real, 0, None, closed="neither")],
        "bound_delta": [Interval(Real, 0, None, closed="neither")],
        "separable": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left"), Interval(Integral, -1, -1)],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "violator_tol": [Interval(Real, 0, 1, closed="left")],
        "gap_tol": [Interval(Real, 0, 1, closed="left")],
        "cache_size": [Interval(Real, 0, None, closed="neither")],
        "random_state": [None, Interval(Integral, 0, None, closed="left")],
        "client": "no_validation",
        "n_partitions": [None, Interval(Integral, 1, None, closed="left")],
        "scale": "no_validation",
        "seed": "no_validation",
        "route": [StrOptions({"auto", "sample", "direct"})],
        "cache": [StrOptions({"auto"}), "boolean"],
        "solver": [StrOptions({"libsvm", "onedal", "auto"})],
    }

    def __init__(self, *, kernel="rbf", gamma="scale", degree=3, coef0=0.0, k=None,
                 sample_size="auto", bound_epsilon=0.2, bound_delta=0.9, separable=False,
                 max_iter=50, tol=1e-3, violator_tol=0.0, gap_tol=1e-3, cache_size=200.0,
                 random_state=None, client=None, n_partitions=None, scale=None, seed=None,
                 route="auto", cache="auto", solver="auto"):
        self._keep(locals())

    def _keep(self, args: dict) -> None:
        """Store an ``__init__``'s arguments as attributes, unchanged (scikit-learn's
        convention: validation happens in ``fit``)."""
        for name, value in args.items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)

    # -- pickling: the client never travels with the model -----------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        if state.get("client") is not None and not isinstance(state["client"], str):
            state["client"] = None
        return state

    def _check_params(self) -> None:
        """The parameters against ``_parameter_constraints`` (``core.constraints``).

        Raises:
            ParameterError: a parameter out of its constraints, or an unavailable solver.
        """
        check_params(self.get_params(deep=False), self._parameter_constraints,
                     type(self).__name__)
        check_backend(self.solver)  # 'onedal' without scikit-learn-intelex, before any data

    # -- what the subclasses say -------------------------------------------------------------
    def _problem(self) -> ProblemSet:
        """What a fit solves (``exact.problems``), from the estimator's parameters."""
        raise NotImplementedError

    def _adopt(self, model, support: np.ndarray, classes, n_features: int) -> None:
        """Take a LIBSVM model (``model_files.libsvm_text.LibsvmModel``) as the fitted model:
        ``support`` holds the global rows of its SVs in file order. Here: a one-column
        model (epsilon_svr, one_class); the classifier has its own."""
        self._adopt_common(model, support, n_features)
        self.dual_coef_ = np.asarray(model.sv_coef, np.float64).T
        self.intercept_ = -np.asarray(model.rho, np.float64)
        self._problem_coef, self._problem_intercept = self.dual_coef_, self.intercept_

    # -- fitting ---------------------------------------------------------------------------
    def _prepare(self, data, y, sample_weight, dataset_kwargs: dict | None
                 ) -> tuple[FitInput, dict]:
        """The parameters checked and the input prepared in one step, before any routing.

        Returns:
            (the ``engine.fit_input.FitInput``, what the fitted attributes need to know of
            the input: ``fitted_attributes.record_input``'s, and 'started', the fit's
            start).

        Raises:
            ParameterError, SchemaError, FileNotFoundError, DataFormatError: see ``fit``.
        """
        t0 = time.perf_counter()
        self._check_params()
        inputs = prepare_fit_input(data, y, sample_weight, dataset_kwargs, self._task)
        info = record_input(self, data, inputs.source == "arrays")
        record_dataset_features(self, inputs.dataset)
        return inputs, {**info, "started": t0}

    def _settings(self, checkpoint: str | None = None, resume: bool = False) -> FitSettings:
        """The fit's settings: the parameters ``exact.fit.FitSettings`` names."""
        params = self.get_params(deep=False)
        names = [f.name for f in fields(FitSettings) if f.name in params]
        return FitSettings(**{n: params[n] for n in names}, collapse=self._may_collapse(),
                           checkpoint=checkpoint, resume=resume)

    def _fit_partitions(self, client, parts, classes) -> None:
        """Fit on partitions already on the workers (grid-search and Platt scaling's
        folds): ``exact.fit.fit`` of ``engine.fit_input.on_workers``.

        Args:
            client: distributed.Client.
            parts: the partitions (coded for this estimator's task).
            classes: the sorted classes (classification) or None.
        """
        self._check_params()
        self._adopt_result(exact_fit(client, on_workers(parts, classes), self._problem(),
                                     self._settings(), after=self._after_cluster_fit))

    def _after_cluster_fit(self, client, parts, result: FitResult) -> object:
        """What an estimator adds to a model fitted on the workers while its partitions are
        there (``exact.fit.fit``'s ``after``; the classifier: its probabilities). Here:
        nothing (None)."""
        return None

    def _adopt_result(self, result: FitResult, info: dict | None = None):
        """Take the core's result as the fitted model and attributes; with ``info``
        (``_prepare``'s), also the attributes of the input, the fit's time, and the
        warning of a fit that stopped uncertified. ``phases_`` gets the seconds of the
        attributes (and the total).

        Returns:
            self
        """
        t = time.perf_counter()
        for name, value in result.attributes.items():
            setattr(self, name, value)
        self.random_seed_ = result.random_seed
        self.scaler_, self.seed_info_ = result.scaler, result.seed_info
        self._adopt(result.model, result.support, result.classes, result.n_features)
        self.history_ = result.history
        self.n_iter_ = max(h["iteration"] for h in result.history)
        self.stop_reasons_ = result.stop_reasons
        self.optimal_ = all(r == "optimal" for r in self.stop_reasons_)
        self.relative_gaps_ = result.relative_gaps
        self.relative_gap_ = float(self.relative_gaps_.max())
        self.certified_ = bool(self.gap_tol > 0 and self.relative_gap_ <= self.gap_tol)
        self.k_, self.gamma_ = result.k, result.gamma
        self.sample_size_ = min(result.sample_size, result.n_rows)
        self._n_rows_fit = result.n_rows
        self.phases_ = {**result.phases, "attributes": time.perf_counter() - t}
        if info is not None:
            self.fit_time_ = time.perf_counter() - info["started"]
            self.phases_["total"] = self.fit_time_
            finish_attributes(self, info)
            self._warn_uncertified()
        return self

    def _may_collapse(self) -> bool:
        """Whether identical rows may become one weighted row (``engine.duplicates``):
        not when a seed names rows by their index (a fitted model's ``support_``) nor
        when a scaling learns moments that count rows ('standard')."""
        return not hasattr(self.seed, "support_") and (self.scale is None
                                                       or self.scale == "minmax")

    def _warn_uncertified(self) -> None:
        """ConvergenceWarning when the fit stopped without its certificate (every such
        stop, as the README says; gap_tol=0's stop at no violator too: no finite run
        certifies a gap of 0)."""
        if self.certified_:
            return
        reasons = sorted(set(self.stop_reasons_))
        advice = "; ".join(ADVICE[r] for r in reasons if r in ADVICE)
        if self.gap_tol == 0:
            warnings.warn(
                f"RandSVM stopped ({', '.join(reasons)}) at a relative primal-dual gap of "
                f"{self.relative_gap_:.3g}; gap_tol=0 runs until no row violates the "
                "optimality conditions and certifies no gap (certified_ is False). To have "
                "the gap certified: set gap_tol > 0 (e.g. 1e-6).",
                ConvergenceWarning, stacklevel=3)
            return
        warnings.warn(
            f"RandSVM stopped ({', '.join(reasons)}) at a relative primal-dual gap of "
            f"{self.relative_gap_:.3g}, above gap_tol={self.gap_tol:g}: the model is not "
            f"certified to be that close to the optimum of all rows. To certify it: {advice}.",
            ConvergenceWarning, stacklevel=3)

    def _adopt_common(self, model, support: np.ndarray, n_features: int) -> None:
        """Attributes every estimator takes from its LIBSVM model."""
        self._libsvm = model
        self.kernel_ = model.kernel
        self.n_features_in_ = int(n_features)
        self.support_ = np.asarray(support, np.int64)
        self._sv = self.support_vectors_ = model.support_vectors  # fit: a copy as the input

    @property
    def coef_(self) -> np.ndarray:
        """w = dual_coef_ @ support_vectors_ for the linear kernel, (1, n_features),
        read-only, as SVR's and OneClassSVM's ``coef_`` (the classifier has its own).

        Raises:
            AttributeError: not a linear kernel.
        """
        return one_column_coef(self)

    def __sklearn_clone__(self):
        """scikit-learn's ``clone``: the parameters cloned (deep-copied where they are no
        estimators), except a ``distributed.Client``, which the clone shares: a client
        holds a connection and cannot be copied (``cross_val_score``, ``GridSearchCV``)."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        return type(self)(**{k: v if k == "client" else clone(v, safe=False)
                             for k, v in params.items()})

    # -- prediction ------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "_problem_coef")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_fitted(self) -> None:
        if not hasattr(self, "_problem_coef"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet")

    def _problem_values(self, X, float64: bool = False) -> np.ndarray:
        """(n, n_problems) decision values of every problem on the rows of X (``float64``:
        computed in float64 throughout from the rows as given, float64 rows unrounded, as
        LIBSVM does; always so for a model fitted on float64 arrays in memory, as SVC's,
        ``fitted_attributes.finish_attributes``).

        Raises:
            NotFittedError, SchemaError (wrong feature count, NaN).
        """
        self._check_fitted()
        check_feature_names(self, X)
        float64 = float64 or getattr(self, "_float64", False)  # fitted on float64 arrays
        sv = getattr(self, "_sv", self.support_vectors_)
        if getattr(self, "n_features_from_index_", False):  # a stock LIBSVM model
            X = check_features(X, model=type(self).__name__, keep_float64=float64)
            X, sv = same_width(X, sv)
        else:
            X = check_features(X, self.n_features_in_, model=type(self).__name__,
                               keep_float64=float64)
        if getattr(self, "scaler_", None) is not None:
            X = self.scaler_.transform(X)
        values = decision_values_float64 if float64 else decision_values
        return values(X, sv, self._problem_coef.T, self._problem_intercept, self.kernel_)

    def _on_dask(self, method: str, X):
        """``method`` applied lazily to each row block of a Dask collection, or None."""
        if not is_dask_collection(X):
            return None
        self._check_fitted()
        return apply_to_dask(self, method, X)

    # -- distributed prediction and model files ---------------------------------------------
    def predict_dataset(self, data, out_dir, client=None, *, overwrite: bool = False) -> dict:
        """Predict a Parquet data set on the workers; see
        ``distributed.predict.predict_dataset``."""
        from randsvm_dist.distributed.predict import predict_dataset

        self._check_fitted()
        return predict_dataset(self, data, out_dir, client if client is not None
                               else self.client, overwrite=overwrite)

    def evaluate(self, data, client=None) -> dict:
        """Quality figures on a Parquet data set, computed on the workers (see
        ``distributed.predict.evaluate_dataset``)."""
        from randsvm_dist.distributed.predict import evaluate_dataset

        self._check_fitted()
        out = evaluate_dataset(self, data, client if client is not None else self.client)
        out["n_support"] = int(len(self.support_))
        return out

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        """Save as one LIBSVM model file that stock LIBSVM reads, with this package's
        allow-listed metadata in a trailer (see ``randsvm_dist.model_files.estimator_files``), and
        ``PATH.range`` when fitted with ``scale``.

        Args:
            path: the model file.
            overwrite: replace an existing model (and range) file randsvm-dist wrote; a
                file of any other kind, or of a data set, is never replaced.

        Raises:
            NotFittedError: not fitted.
            DataFormatError: the file exists without ``overwrite``, or is not one to
                replace.
        """
        from randsvm_dist.model_files.estimator_files import save_estimator

        save_estimator(self, path, overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Load a model written by ``save`` (or a stock LIBSVM model file).

        Raises:
            FileNotFoundError, DataFormatError (truncated, corrupt or disallowed metadata),
            ParameterError (the file holds another kind of model than this class).
        """
        from randsvm_dist.estimators import ESTIMATORS  # the registry: the package's __init__
        from randsvm_dist.model_files.estimator_files import load_estimator

        est = load_estimator(path, ESTIMATORS)
        if not isinstance(est, cls):
            raise ParameterError(f"{os.fspath(path)} holds a {type(est).__name__}, not a "
                                 f"{cls.__name__}")
        return est
