"""One-pass distributed training: a streaming learner per partition, tree-combined on Dask.

Every Parquet partition is read and learnt by its own task: a clone of the estimator with a
random_state derived from the estimator's and the partition index (so the result does not
depend on which worker ran what), fed the partition's rows in order with ``partial_fit``.
The per-partition learners are then combined by ``merge`` in a tree of fan-in ``fan_in``
(depth ``ceil(log_fan_in P)``), every merge a Dask task; only the final model travels back
to the client. Within a tree node the children merge left to right, in partition order, so
the result is a fixed function of the data set and the estimator's parameters.

Every task is pure and retried (``retries=2``); inputs travel inside the tasks, never by
``scatter``, so a dead worker's results are recomputed from the same inputs.

A kernel width ``gamma='scale'`` is resolved once from the whole data set (one moments pass
over the partitions) before the learners start: each learner resolving it from its own
partition would give learners that cannot be merged.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import dask_client
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError
from randsvm_dist.kernels import moments_variance, resolve_gamma, row_sq_norms, value_moments
from randsvm_dist.seeds import derive_seed, resolve_seed
from randsvm_dist.streaming.base import StreamingClassifier
from randsvm_dist.validation import check_classes, check_int

log = logging.getLogger("randsvm_dist")

# Second key of the per-partition seed (derive_seed(seed, PARTITION_STREAM, i)), so
# partition streams never coincide with the per-class streams derive_seed(seed, k).
PARTITION_STREAM = 0x5EED


# -- tasks (run on the workers; pure functions of their inputs) ---------------------------
def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:  # not on a worker (called in-process)
        return "local"


def _normalizes(estimator) -> bool:
    """Whether the learner scales rows to unit norm before resolving gamma."""
    if getattr(estimator, "normalize", None) is None:
        return False
    from randsvm_dist.streaming.streamsvm import resolve_normalize

    return bool(resolve_normalize(estimator))


def partition_moments(ds, i: int, normalize: bool = False) -> tuple[int, float, float]:
    """Count, sum and sum of squares of all feature values of partition i.

    Args:
        ds: Dataset.
        i: partition index.
        normalize: scale rows to unit L2 norm first (as learners with normalize=True do).

    Returns:
        (values incl. implicit zeros, sum, sum of squares).
    """
    X, _ = ds.read_partition(i)
    if normalize and X.shape[0]:
        n = np.sqrt(row_sq_norms(X).astype(np.float64))
        inv = np.where(n > 0, 1.0 / np.maximum(n, 1e-30), 0.0)
        X = sp.diags(inv) @ X if sp.issparse(X) else X * inv[:, None]
    return value_moments(X)


def fit_partition(estimator: StreamingClassifier, ds, i: int, seed: int | None,
                  classes: np.ndarray) -> tuple[StreamingClassifier, dict]:
    """Learn partition i with a fresh clone of estimator (one pass, rows in file order).

    Args:
        estimator: unfitted template (its parameters are used, not its fitted state).
        ds: Dataset.
        i: partition index.
        seed: random_state of the clone (None: leave the estimator's).
        classes: every label of the data set.

    Returns:
        (fitted learner, stats {"rows", "n_core", "seconds", "worker", "partitions"}).

    Raises:
        SchemaError: a label outside classes, or bad rows (names the partition's file).
    """
    from sklearn.base import clone

    t0 = time.perf_counter()
    est = clone(estimator)
    if seed is not None:
        est.set_params(random_state=seed)
    X, y = ds.read_partition(i)
    try:
        est.partial_fit(X, np.asarray(y), classes=classes)
    except SchemaError as e:
        raise SchemaError(f"{ds.paths[i]} (partition {i}): {e}") from None
    return est, {"rows": int(X.shape[0]), "n_core": est.n_core_, "partitions": 1,
                 "seconds": time.perf_counter() - t0, "worker": _worker_name()}


def merge_nodes(*nodes: tuple[StreamingClassifier, dict]) -> tuple[StreamingClassifier, dict]:
    """Merge (learner, stats) nodes left to right into one node.

    Returns:
        (merged learner, stats {"rows", "n_core", "seconds", "worker", "partitions"}).
    """
    t0 = time.perf_counter()
    model = nodes[0][0]
    for other, _ in nodes[1:]:
        model = model.merge(other)
    return model, {"rows": int(sum(s["rows"] for _, s in nodes)), "n_core": model.n_core_,
                   "partitions": int(sum(s["partitions"] for _, s in nodes)),
                   "seconds": time.perf_counter() - t0, "worker": _worker_name()}


def node_stats(node: tuple[StreamingClassifier, dict]) -> dict:
    """The stats half of a node (so the client gathers numbers, not models)."""
    return node[1]


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


def _resolve_gamma(client, estimator, ds, parts: list[int]):
    """A numeric gamma for the learners, or None when the estimator needs none."""
    params = estimator.get_params(deep=False)
    gamma = params.get("gamma")
    if not isinstance(gamma, str) or params.get("kernel", "rbf") == "linear":
        return None
    if gamma == "auto":
        return resolve_gamma("auto", n_features=ds.n_features)
    if gamma != "scale":
        resolve_gamma(gamma)  # raises ParameterError naming the bad value
    norm = _normalizes(estimator)
    got = gather(client, [client.submit(partition_moments, ds, i, norm, pure=False,
                                        retries=2) for i in parts],
                 "the feature moments (gamma='scale')", [f"partition {i}" for i in parts])
    return resolve_gamma("scale", n_features=ds.n_features, x_var=moments_variance(got))


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
    from randsvm_dist.engine.inputs import open_dataset

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
    fitted = hasattr(estimator, "learners_")
    if fitted:
        _check_against_fitted(estimator, ds, classes)
    parts = [i for i, r in enumerate(ds.partition_rows) if r > 0]
    if not parts:
        raise DataFormatError(f"{ds} holds no rows")

    t0 = time.perf_counter()
    with dask_client(client) as c:
        gamma = _resolve_gamma(c, estimator, ds, parts)
        template = estimator if not fitted else _unfitted_copy(estimator)
        if gamma is not None:
            template = _unfitted_copy(template)
            template.set_params(gamma=gamma)
        seeds = {i: None if "random_state" not in estimator.get_params(deep=False)
                 else derive_seed(rs, PARTITION_STREAM, i) for i in parts}
        level = [c.submit(fit_partition, template, ds, i, seeds[i], classes, pure=False,
                          retries=2) for i in parts]
        tree = [list(level)]  # per level: the nodes computed there (not carried ones)
        while len(level) > 1:
            groups = [level[j:j + fan_in] for j in range(0, len(level), fan_in)]
            level = [c.submit(merge_nodes, *g, pure=False, retries=2) if len(g) > 1
                     else g[0] for g in groups]
            tree.append([f for f, g in zip(level, groups) if len(g) > 1])
        stat_futures = [[c.submit(node_stats, f, pure=False, retries=2) for f in lv]
                        for lv in tree]
        labels = [f"partition {i}" if d == 0 else f"merge node {j} of level {d}"
                  for d, lv in enumerate(stat_futures)
                  for j, i in enumerate(parts if d == 0 else range(len(lv)))]
        flat = gather(c, [f for lv in stat_futures for f in lv],
                      f"streaming fit of {ds.url}", labels)
        stats, at = [], 0
        for lv in stat_futures:
            stats.append(flat[at:at + len(lv)])
            at += len(lv)
        model = gather(c, [level[0]], f"the merged model of {ds.url}")[0][0]
    seconds = time.perf_counter() - t0

    if fitted:
        model = estimator.merge(model)
    else:
        model.set_params(**estimator.get_params(deep=False))
        model.random_seed_ = rs
    levels = [{"nodes": len(lv), "rows": [s["rows"] for s in lv],
               "n_core": [s["n_core"] for s in lv],
               "seconds": [s["seconds"] for s in lv],
               "worker": [s["worker"] for s in lv]} for lv in stats]
    model.reduce_info_ = {
        "rows": int(sum(ds.partition_rows)), "partitions": ds.n_partitions,
        "partitions_used": len(parts), "fan_in": fan_in, "depth": len(tree) - 1,
        "seconds": seconds, "fit_seconds": float(sum(stats[0][k]["seconds"]
                                                     for k in range(len(parts)))),
        "merge_seconds": float(sum(s["seconds"] for lv in stats[1:] for s in lv)),
        "gamma": gamma, "n_core_": model.n_core_, "levels": levels,
    }
    log.debug("fit_streaming: %d rows, %d partitions, tree depth %d, %.2f s, n_core %d",
              model.reduce_info_["rows"], len(parts), len(tree) - 1, seconds, model.n_core_)
    return model


def _unfitted_copy(estimator: StreamingClassifier) -> StreamingClassifier:
    from sklearn.base import clone

    return clone(estimator)

