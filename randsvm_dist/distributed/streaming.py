"""One-pass distributed training: a streaming learner per partition, tree-combined on Dask.

Every Parquet partition is read and learnt by its own task: a clone of the estimator with a
random_state derived from the estimator's and the partition index (so the result does not
depend on which worker ran what), fed the partition's rows in order with ``partial_fit``.
The per-partition learners are then combined by ``merge`` in a tree of fan-in ``fan_in``
(depth ``ceil(log_fan_in P)``), every merge a Dask task; only the final model travels back
to the client. Within a tree node the children merge left to right, in partition order, so
the result is a fixed function of the data set and the estimator's parameters.

Every task is pure and retried (``retries=2``): a task reads its own Parquet partition (or
takes its block of a Dask array from the graph) and nothing is scattered, so a dead
worker's results are recomputed from the same inputs.

A kernel width ``gamma='scale'`` is resolved once from the whole data set (one moments pass
over the partitions, then :func:`randsvm_dist.streaming.base.learner_gamma`, the same function
the learners use in-process) before the learners start: each learner resolving it from its
own partition would give learners that cannot be merged. ``class_weight='balanced'`` is
resolved the same way, from the label counts of the whole data set.

:class:`DaskStreamingClassifier` is the one Dask wrapper of a streaming learner (as dask-ml's
``Incremental`` and LightGBM's ``_DaskLGBMModel``): ``fit`` on a Parquet data set runs
:func:`fit_streaming`, on Dask arrays/DataFrames one pass over the row blocks in order;
``predict``/``decision_function`` of Dask input are lazy dask arrays, ``score`` runs on the
cluster. The learners themselves (:mod:`randsvm_dist.streaming`) know nothing of Dask.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from randsvm_dist.core.seeds import derive_seed, resolve_seed
from randsvm_dist.core.validation import check_classes, check_int, check_labels
from randsvm_dist.distributed._streaming_tasks import (
    fit_partition,
    merge_nodes,
    node_stats,
    partition_gamma_moments,
    partition_labels,
    uses_normalized_rows,
)
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import dask_client
from randsvm_dist.engine.dask_collections import aligned_blocks, as_dask_array, is_dask_collection
from randsvm_dist.engine.dask_predict import apply_to_dask, dask_accuracy
from randsvm_dist.engine.inputs import open_dataset
from randsvm_dist.exceptions import DataFormatError, NotFittedError, ParameterError, SchemaError
from randsvm_dist.streaming.base import (
    StreamingClassifier,
    learner_gamma,
    resolve_class_weight,
)

log = logging.getLogger("randsvm_dist")

# Second key of the per-partition seed (derive_seed(seed, PARTITION_STREAM, i)), so
# partition streams never coincide with the per-class streams derive_seed(seed, k).
PARTITION_STREAM = 0x5EED


# -- the driver -----------------------------------------------------------------------------
def _check_fan_in(fan_in) -> int:
    return check_int(fan_in, "fan_in", 2)


def _check_random_state(estimator) -> int | None:
    """The estimator's random_state resolved into a seed (None if it has none)."""
    params = estimator.get_params(deep=False)
    return resolve_seed(params["random_state"]) if "random_state" in params else None


def _check_against_fitted(estimator: StreamingClassifier, ds, classes: np.ndarray) -> None:
    if ds.n_features != estimator.n_features_in_:
        raise SchemaError(f"{ds} has {ds.n_features} features; the fitted "
                          f"{type(estimator).__name__} expects {estimator.n_features_in_}")
    if not np.array_equal(np.asarray(classes), np.asarray(estimator.classes_)):
        raise SchemaError(f"{ds} has labels {np.asarray(classes).tolist()}; the fitted "
                          f"{type(estimator).__name__} has classes "
                          f"{np.asarray(estimator.classes_).tolist()}")


def _data_gamma(client, estimator, ds, parts: list[int]):
    """A numeric gamma for the learners (via ``learner_gamma``), or None when the estimator
    needs none."""
    params = estimator.get_params(deep=False)
    gamma = params.get("gamma")
    if not isinstance(gamma, str) or params.get("kernel", "rbf") == "linear":
        return None
    if gamma != "scale":
        return learner_gamma(gamma, ds.n_features)  # 'auto', or ParameterError
    norm = uses_normalized_rows(estimator)
    got = gather(client, [client.submit(partition_gamma_moments, ds, i, norm, pure=False,
                                        retries=2) for i in parts],
                 "the feature moments (gamma='scale')", [f"partition {i}" for i in parts])
    return learner_gamma("scale", ds.n_features, got)


def _data_class_weight(client, estimator, ds, parts: list[int], classes: np.ndarray):
    """class_weight='balanced' as a dict from the whole data set's label counts (None when
    the estimator has another class_weight)."""
    if estimator.get_params(deep=False).get("class_weight") != "balanced":
        return None
    got = gather(client, [client.submit(partition_labels, ds, i, pure=False, retries=2)
                          for i in parts],
                 "the label counts (class_weight='balanced')",
                 [f"partition {i}" for i in parts])
    counts = dict.fromkeys(classes.tolist(), 0)
    for labels, c in got:
        for label, k in zip(labels.tolist(), c.tolist()):
            counts[label] = counts.get(label, 0) + int(k)
    y = np.repeat(np.array(list(counts), dtype=classes.dtype), list(counts.values()))
    w = resolve_class_weight("balanced", classes, y)
    return {label: float(v) for label, v in zip(classes.tolist(), w)}


def fit_streaming(estimator: StreamingClassifier, data, client=None,
                  fan_in: int = 2) -> StreamingClassifier:
    """Train a streaming learner on a Parquet data set in one distributed pass.

    Each partition is learnt by its own task (a clone of ``estimator`` with random_state
    ``derive_seed(seed, PARTITION_STREAM, i)``, seed = ``random_state`` resolved once),
    then the learners are merged by a tree of Dask tasks of fan-in ``fan_in``; only the
    final model is gathered.

    Args:
        estimator: a :class:`~randsvm_dist.streaming.StreamingClassifier` (StreamSVM,
            BlurredBallSVM, BudgetedSGD, OnlineRampSVM). Not modified. If it is already
            fitted, the data set must have its feature count and classes, and the result
            continues it: ``estimator.merge(<tree result>)``.
        data: Dataset or Parquet path/URL (readable by every worker).
        client: None (default client, else an embedded LocalCluster), a scheduler address,
            or a distributed.Client.
        fan_in: models merged per tree node (>= 2); >= the partition count gives one
            left-to-right chain of merges.

    Returns:
        A new fitted estimator with the original parameters (a string gamma is resolved
        once for the whole data set; the learners keep the number) and ``reduce_info_``:
        {"rows", "partitions", "fan_in", "depth", "seconds" (wall), "fit_seconds" /
        "merge_seconds" (summed over tasks), "gamma", "n_core_", "levels": one entry per
        tree level with per-node "rows", "n_core", "seconds", "worker"}.

    Raises:
        ParameterError: estimator not a StreamingClassifier, bad fan_in or random_state,
            bad hyper-parameters.
        SchemaError: one class only, labels/feature count unlike a fitted estimator's, or
            a partition holding a label outside the data set's classes.
        DataFormatError: data not a Dataset/path, or a data set without rows.
        ClusterError: the scheduler cannot be reached.
    """
    ds, fan_in, rs, classes, parts = _checked_inputs(estimator, data, fan_in)
    fitted = hasattr(estimator, "learners_")
    t0 = time.perf_counter()
    with dask_client(client) as c:
        template, gamma = _learner_template(c, estimator, ds, parts, classes, fitted)
        seeds = {i: None if "random_state" not in estimator.get_params(deep=False)
                 else derive_seed(rs, PARTITION_STREAM, i) for i in parts}
        root, tree = _submit_tree(c, template, ds, parts, seeds, classes, fan_in)
        stats = _gather_stats(c, tree, parts, ds)
        model = gather(c, [root], f"the merged model of {ds.url}")[0][0]
    seconds = time.perf_counter() - t0
    if fitted:
        model = estimator.merge(model)
    else:
        model.set_params(**estimator.get_params(deep=False))
        model.random_seed_ = rs
    model.reduce_info_ = _reduce_info(ds, parts, fan_in, stats, seconds, gamma, model)
    log.debug("fit_streaming: %d rows, %d partitions, tree depth %d, %.2f s, n_core %d",
              model.reduce_info_["rows"], len(parts), len(tree) - 1, seconds, model.n_core_)
    return model


def _checked_inputs(estimator, data, fan_in):
    """The checked inputs of fit_streaming.

    Returns:
        (Dataset, fan_in, seed (None without random_state), classes, indices of the
        partitions holding rows).

    Raises:
        as fit_streaming (everything but ClusterError).
    """
    if not isinstance(estimator, StreamingClassifier):
        raise ParameterError(
            "fit_streaming needs a randsvm_dist.streaming.StreamingClassifier (StreamSVM, "
            f"BlurredBallSVM, BudgetedSGD, OnlineRampSVM); got {type(estimator).__name__}")
    fan_in = _check_fan_in(fan_in)
    ds = open_dataset(data)
    if ds is None:
        raise DataFormatError("data must be a Dataset or a Parquet path/URL; got "
                              f"{type(data).__name__}")
    rs = _check_random_state(estimator)
    classes = check_classes(ds.classes, where=f"the labels of {ds}")
    if hasattr(estimator, "learners_"):
        _check_against_fitted(estimator, ds, classes)
    parts = [i for i, r in enumerate(ds.partition_rows) if r > 0]
    if not parts:
        raise DataFormatError(f"{ds} holds no rows")
    return ds, fan_in, rs, classes, parts


def _learner_template(client, estimator, ds, parts: list[int], classes: np.ndarray,
                      fitted: bool):
    """The unfitted estimator every partition clones, with gamma='scale' and
    class_weight='balanced' resolved from the whole data set (class weights only for a
    new fit: a fitted estimator keeps its own).

    Returns:
        (template, the resolved gamma or None).
    """
    gamma = _data_gamma(client, estimator, ds, parts)
    cw = None if fitted else _data_class_weight(client, estimator, ds, parts, classes)
    template = clone(estimator) if fitted else estimator
    if gamma is not None or cw is not None:
        template = clone(template)
        template.set_params(**({"gamma": gamma} if gamma is not None else {}),
                            **({"class_weight": cw} if cw is not None else {}))
    return template, gamma


def _submit_tree(client, template, ds, parts: list[int], seeds: dict, classes: np.ndarray,
                 fan_in: int):
    """Submit a learner per partition and their merge tree (children merged left to
    right; a lone child is carried up a level unmerged).

    Returns:
        (future of the root node, per level the futures of the nodes computed there).
    """
    level = [client.submit(fit_partition, template, ds, i, seeds[i], classes, pure=False,
                           retries=2) for i in parts]
    tree = [list(level)]
    while len(level) > 1:
        groups = [level[j:j + fan_in] for j in range(0, len(level), fan_in)]
        level = [client.submit(merge_nodes, *g, pure=False, retries=2) if len(g) > 1
                 else g[0] for g in groups]
        tree.append([f for f, g in zip(level, groups) if len(g) > 1])
    return level[0], tree


def _gather_stats(client, tree: list[list], parts: list[int], ds) -> list[list[dict]]:
    """The stats of every node of the tree, per level (the models stay on the workers)."""
    stat_futures = [[client.submit(node_stats, f, pure=False, retries=2) for f in lv]
                    for lv in tree]
    labels = [f"partition {i}" if d == 0 else f"merge node {j} of level {d}"
              for d, lv in enumerate(stat_futures)
              for j, i in enumerate(parts if d == 0 else range(len(lv)))]
    flat = gather(client, [f for lv in stat_futures for f in lv],
                  f"streaming fit of {ds.url}", labels)
    stats, at = [], 0
    for lv in stat_futures:
        stats.append(flat[at:at + len(lv)])
        at += len(lv)
    return stats


def _reduce_info(ds, parts: list[int], fan_in: int, stats: list[list[dict]],
                 seconds: float, gamma, model) -> dict:
    """fit_streaming's ``reduce_info_`` (see there)."""
    levels = [{"nodes": len(lv), "rows": [s["rows"] for s in lv],
               "n_core": [s["n_core"] for s in lv],
               "seconds": [s["seconds"] for s in lv],
               "worker": [s["worker"] for s in lv]} for lv in stats]
    return {
        "rows": int(sum(ds.partition_rows)), "partitions": ds.n_partitions,
        "partitions_used": len(parts), "fan_in": fan_in, "depth": len(stats) - 1,
        "seconds": seconds, "fit_seconds": float(sum(s["seconds"] for s in stats[0])),
        "merge_seconds": float(sum(s["seconds"] for lv in stats[1:] for s in lv)),
        "gamma": gamma, "n_core_": model.n_core_, "levels": levels,
    }


def _feed_blocks(est: StreamingClassifier, Xa, ya, sample_weight, classes) -> None:
    """``est.partial_fit`` on aligned Dask row blocks in order, one block (with its
    sample_weight block) in memory at a time."""
    import dask

    wb = None
    if sample_weight is not None:
        wa = as_dask_array(sample_weight, "sample_weight").rechunk((Xa.chunks[0],))
        wb = wa.to_delayed().ravel()
    for k, (xb, yb) in enumerate(zip(Xa.to_delayed().ravel(), ya.to_delayed().ravel())):
        got = dask.compute(xb, yb) if wb is None else dask.compute(xb, yb, wb[k])
        est.partial_fit(got[0], got[1], classes=classes,
                        sample_weight=got[2] if wb is not None else None)


# -- the one Dask wrapper of a streaming learner ------------------------------------------
class DaskStreamingClassifier(ClassifierMixin, BaseEstimator):
    """A streaming learner on Dask input (the only place the learners meet Dask).

    Modelled on dask-ml's ``Incremental`` and LightGBM's ``_DaskLGBMModel``: the wrapped
    learner stays a plain in-memory estimator (``estimator_`` after fitting); this class
    decides how Dask input reaches it.

    Args:
        estimator: an unfitted (or fitted, to continue it) StreamingClassifier.
        client: for Parquet data sets: None (default client, else an embedded
            LocalCluster), a scheduler address or a distributed.Client. Dask collections
            run on Dask's current scheduler.
        fan_in: merges per tree node of :func:`fit_streaming`.

    Fitted attributes: ``estimator_`` (the fitted learner), ``classes_``,
    ``n_features_in_``; any other fitted attribute of the learner is read through
    (``wrapper.n_core_`` is ``wrapper.estimator_.n_core_``).
    """

    def __init__(self, estimator=None, client=None, fan_in: int = 2):
        self.estimator = estimator
        self.client = client
        self.fan_in = fan_in

    def _template(self) -> StreamingClassifier:
        if not isinstance(self.estimator, StreamingClassifier):
            raise ParameterError("DaskStreamingClassifier needs a randsvm_dist.streaming "
                                 "learner (StreamSVM, BlurredBallSVM, BudgetedSGD, "
                                 f"OnlineRampSVM); got {type(self.estimator).__name__}")
        return self.estimator

    def fit(self, X, y=None, sample_weight=None) -> DaskStreamingClassifier:
        """One pass over the data.

        Args:
            X: a Dataset or Parquet path/URL (then y must be None: each partition is
                learnt on a worker and the learners tree-merged, :func:`fit_streaming`),
                a Dask array/DataFrame (one pass over its row blocks in order, one block in
                memory at a time), or in-memory arrays (the learner's own ``fit``).
            y: labels (not for a data set).
            sample_weight: per-row weights (arrays or a dask array aligned with X; not
                for a data set).

        Returns:
            self

        Raises:
            ParameterError: not a streaming learner; y or sample_weight with a data set.
            SchemaError, DataFormatError, ClusterError: as fit_streaming / the learner.
        """
        est = self._template()
        ds = open_dataset(X) if not is_dask_collection(X) else None
        if ds is not None:
            if y is not None or sample_weight is not None:
                raise ParameterError("a Parquet data set carries its own labels; y and "
                                     "sample_weight must be None")
            self.estimator_ = fit_streaming(est, ds, client=self.client, fan_in=self.fan_in)
        elif is_dask_collection(X) or is_dask_collection(y):
            self.estimator_ = self._fit_blocks(clone(est), X, y, sample_weight)
        else:
            self.estimator_ = clone(est).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.estimator_.classes_
        self.n_features_in_ = self.estimator_.n_features_in_
        return self

    @staticmethod
    def _fit_blocks(est: StreamingClassifier, X, y, sample_weight) -> StreamingClassifier:
        """One pass over aligned Dask row blocks in order."""
        import dask.array as da

        Xa, ya = aligned_blocks(as_dask_array(X, "X"), as_dask_array(y, "y"))
        classes = check_classes(da.unique(ya).compute(), where="y")
        _feed_blocks(est, Xa, ya, sample_weight, classes)
        return est

    def partial_fit(self, X, y, classes=None, sample_weight=None) -> DaskStreamingClassifier:
        """Continue the learner with one more batch: in-memory arrays, or Dask ones whose
        row blocks are fed in order.

        Returns:
            self

        Raises:
            as the learner's partial_fit (classes= is required on the first call).
        """
        if not hasattr(self, "estimator_"):
            self.estimator_ = clone(self._template())
        est = self.estimator_
        if is_dask_collection(X) or is_dask_collection(y):
            Xa, ya = aligned_blocks(as_dask_array(X, "X"), as_dask_array(y, "y"))
            _feed_blocks(est, Xa, ya, sample_weight, classes)
        else:
            est.partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        self.classes_ = est.classes_
        self.n_features_in_ = est.n_features_in_
        return self

    def _fitted(self) -> StreamingClassifier:
        if not hasattr(self, "estimator_"):
            raise NotFittedError("this DaskStreamingClassifier is not fitted yet")
        return self.estimator_

    def __getattr__(self, name: str):
        if name.endswith("_") and not name.startswith("_") and "estimator_" in self.__dict__:
            return getattr(self.__dict__["estimator_"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def decision_function(self, X):
        """Scores: a lazy dask array for Dask input, else the learner's own."""
        est = self._fitted()
        if is_dask_collection(X):
            return apply_to_dask(est, "decision_function", X)
        return est.decision_function(X)

    def predict(self, X):
        """Labels: a lazy dask array for Dask input, else the learner's own."""
        est = self._fitted()
        if is_dask_collection(X):
            return apply_to_dask(est, "predict", X)
        return est.predict(X)

    def score(self, X, y=None, sample_weight=None) -> float:
        """Accuracy: on the cluster for Dask input or a Parquet data set (then y=None),
        else in-process.

        Raises:
            NotFittedError; SchemaError (features/labels unlike the model's).
        """
        est = self._fitted()
        if is_dask_collection(X) and sample_weight is None:
            return dask_accuracy(est, X, y)
        ds = None if is_dask_collection(X) else open_dataset(X)
        if ds is not None:
            from randsvm_dist.distributed.predict import evaluate_dataset

            return float(evaluate_dataset(est, ds, client=self.client)["accuracy"])
        return est.score(X, check_labels(y, X.shape[0]), sample_weight=sample_weight)
