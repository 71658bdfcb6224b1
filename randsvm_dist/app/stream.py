"""One-pass training as one library call: a streaming learner per partition on the
workers, tree-merged, saved (the ``stream`` command and a submitted ``stream`` job)."""

from __future__ import annotations

from dataclasses import dataclass, field

from randsvm_dist.app.model_output import save_model_file
from randsvm_dist.exceptions import ParameterError


def streaming_class(name: str) -> type:
    """The streaming learner class of ``randsvm_dist.streaming`` named ``name``.

    Raises:
        ParameterError: ``name`` is not a streaming learner there.
    """
    from randsvm_dist import streaming

    cls = getattr(streaming, name, None) if name in streaming.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, streaming.StreamingClassifier)):
        raise ParameterError(f"estimator {name!r} is not a streaming learner of "
                             "randsvm_dist.streaming")
    return cls


@dataclass
class StreamResult:
    """A tree-merged streaming learner (``estimator``), where it came from and went, and
    its evaluation on a test set (``test``, None until :meth:`evaluate`)."""

    estimator: object
    data: str
    model: str | None
    test: dict | None = field(default=None)

    def evaluate(self, data: str, client) -> dict:
        """Quality figures of the learner on the Parquet data set ``data`` (kept as
        ``test``).

        Returns:
            ``distributed.predict.evaluate_dataset``'s result.
        """
        from randsvm_dist.distributed.predict import evaluate_dataset

        self.test = evaluate_dataset(self.estimator, data, client=client)
        return self.test

    def as_dict(self) -> dict:
        """The result as ``randsvm-dist stream --json`` reports it (and a job's result)."""
        est = self.estimator
        out = {"data": self.data, "estimator": type(est).__name__, "model": self.model,
               "params": est.get_params(deep=False), "reduce": est.reduce_info_}
        if self.test is not None:
            out["test"] = self.test
        return out

    def summary(self) -> str:
        """One line: rows, partitions, tree depth, seconds, core points, the model file."""
        info = self.estimator.reduce_info_
        return (f"{type(self.estimator).__name__}: {info['rows']} rows, "
                f"{info['partitions_used']} partitions, tree depth {info['depth']}, "
                f"{info['seconds']:.1f} s, {info['n_core_']} core points"
                + (f"; model written to {self.model}" if self.model else ""))


def stream(estimator, data: str, *, client, fan_in: int = 2, model: str | None = None,
           overwrite: bool = False) -> StreamResult:
    """Fit an unfitted streaming learner per partition of ``data``, tree-merge, save.

    Args:
        estimator: an unfitted ``StreamingClassifier``.
        data: Parquet data set (path or URL, readable by the workers).
        client: a ``distributed.Client``.
        fan_in: models merged per tree node.
        model: where to write the merged learner (.npz), or None.
        overwrite: replace an existing model file written by randsvm-dist.

    Returns:
        the merged learner and its result (:class:`StreamResult`).

    Raises:
        RandSVMError: bad parameters, data or outputs.
    """
    from randsvm_dist.distributed.streaming import fit_streaming

    fitted = fit_streaming(estimator, data, client=client, fan_in=fan_in)
    if model:
        save_model_file(fitted, model, overwrite=overwrite)
    return StreamResult(fitted, data, model)
