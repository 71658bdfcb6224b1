"""Training a RandSVM estimator as one library call: fit, save, the result.

Used by the ``train`` command (``cli/train.py``) and by a submitted ``train`` job
(``jobs/runner.py``), so both report the same result. The estimator class of an svm type
comes from the one registry, :data:`randsvm_dist.estimators.ESTIMATORS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from randsvm_dist.app.model_output import save_model_file
from randsvm_dist.exceptions import ParameterError


def estimator_class(svm_type: str = "c_svc") -> type:
    """The estimator class of an svm type (LIBSVM's names: c_svc, epsilon_svr, one_class).

    Raises:
        ParameterError: an svm type the registry does not hold.
    """
    from randsvm_dist.estimators import ESTIMATORS

    if svm_type not in ESTIMATORS:
        raise ParameterError(f"svm_type must be one of {', '.join(ESTIMATORS)}; got "
                             f"{svm_type!r}")
    return ESTIMATORS[svm_type]


@dataclass
class TrainResult:
    """A fitted and saved RandSVM estimator (``estimator``), where it came from and went,
    and its evaluation on a test set (``test``, None until :meth:`evaluate`)."""

    estimator: object
    data: str
    model: str
    test: dict | None = field(default=None)

    def evaluate(self, data: str, client) -> dict:
        """Quality figures of the model on the Parquet data set ``data`` (kept as ``test``).

        Returns:
            the estimator's ``evaluate`` result.
        """
        self.test = self.estimator.evaluate(data, client=client)
        return self.test

    def as_dict(self) -> dict:
        """The result as ``randsvm-dist train --json`` reports it (and a job's result)."""
        est = self.estimator
        out = {"data": self.data, "model": self.model, "fit_seconds": est.fit_time_,
               "n_support": int(len(est.support_)), "n_iter": est.n_iter_,
               "stop_reasons": est.stop_reasons_, "optimal": est.optimal_, "k": est.k_,
               "sample_size": est.sample_size_, "gamma": est.gamma_,
               "relative_gap": est.relative_gap_, "certified": est.certified_,
               "seed": est.seed_info_, "history": est.history_}
        if self.test is not None:
            out["test"] = self.test
        return out

    def summary(self) -> str:
        """One line: fit time, support vectors, iterations, stop, gap, where it was saved."""
        est = self.estimator
        state = "certified" if est.certified_ else "NOT certified"
        return (f"trained in {est.fit_time_:.1f} s: {len(est.support_)} support vectors, "
                f"{est.n_iter_} iterations, stop: {', '.join(est.stop_reasons_)}, relative "
                f"gap {est.relative_gap_:.2e} ({state} <= {est.gap_tol:g}); "
                f"model written to {self.model}")


def train(data: str, model: str, *, client, svm_type: str = "c_svc",
          params: dict | None = None, weight_column: str | None = None,
          feature_columns: list[str] | None = None,
          one_hot_columns: list[str] | None = None, checkpoint: str | None = None,
          resume: bool = False, overwrite: bool = False) -> TrainResult:
    """Fit the ``svm_type``'s RandSVM estimator on a Parquet data set and save it.

    Args:
        data: Parquet data set (path or URL).
        model: where to write the model file (and ``MODEL.range`` with scaling).
        client: a ``distributed.Client`` (or what the estimator's ``client`` accepts).
        svm_type: c_svc, epsilon_svr or one_class (the registry's keys).
        params: the estimator's keyword arguments (``client`` aside).
        weight_column: a Parquet column of per-row sample weights.
        feature_columns: the feature columns of a dense data set (None: every column but
            the label, the weight column and a pandas/Dask index).
        one_hot_columns: feature columns to one-hot encode (``Dataset.open``).
        checkpoint, resume: see the estimators' ``fit``.
        overwrite: replace an existing model file written by randsvm-dist.

    Returns:
        the fitted estimator and its result (:class:`TrainResult`).

    Raises:
        RandSVMError: bad parameters, data or outputs.
    """
    est = estimator_class(svm_type)(**(params or {}), client=client)
    kwargs = {k: v for k, v in (("weight_column", weight_column),
                                ("feature_columns", feature_columns),
                                ("one_hot_columns", one_hot_columns)) if v}
    est.fit(data, dataset_kwargs=kwargs or None, checkpoint=checkpoint, resume=resume)
    save_model_file(est, model, overwrite=overwrite)
    return TrainResult(est, data, model)
