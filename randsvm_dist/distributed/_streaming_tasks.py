"""The Dask tasks of :func:`randsvm_dist.distributed.streaming.fit_streaming`.

Each runs on a worker and is a pure function of its inputs (so a dead worker's task is
retried on another with the same result): the moments and label counts of a partition,
a partition learnt by a fresh clone of the estimator, and the merge of tree nodes. A node
is a pair (learner, stats); the client gathers only the stats, and the root's learner.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import clone

from randsvm_dist.core.current_worker import worker_address
from randsvm_dist.exceptions import SchemaError
from randsvm_dist.streaming.base import StreamingClassifier, gamma_moments
from randsvm_dist.streaming.meb.streamsvm import resolve_normalize


def uses_normalized_rows(estimator) -> bool:
    """Whether the learner scales rows to unit norm before resolving gamma."""
    if getattr(estimator, "normalize", None) is None:
        return False
    return bool(resolve_normalize(estimator))


def partition_gamma_moments(ds, i: int, normalize: bool = False) -> tuple[int, float, float]:
    """:func:`~randsvm_dist.streaming.base.gamma_moments` of partition i (runs on a worker).

    Args:
        ds: Dataset.
        i: partition index.
        normalize: scale rows to unit L2 norm first (as learners with normalize=True do).

    Returns:
        (values incl. implicit zeros, sum, sum of squares).
    """
    X, _ = ds.read_partition(i)
    return gamma_moments(X, normalize)


def partition_labels(ds, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct labels of partition i and their counts (runs on a worker)."""
    _, y = ds.read_partition(i)
    return np.unique(np.asarray(y), return_counts=True)


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
    t0 = time.perf_counter()
    est = clone(estimator)
    if seed is not None:
        est.set_params(random_state=seed)
    X, y = ds.read_partition(i)
    try:
        est.partial_fit(X, np.asarray(y), classes=classes)
    except SchemaError as e:
        raise SchemaError(f"{ds.paths[i]} (partition {i}): {e}") from None
    est.compact()  # what travels to the merge: what prediction and merging need
    return est, {"rows": int(X.shape[0]), "n_core": est.n_core_, "partitions": 1,
                 "seconds": time.perf_counter() - t0, "worker": worker_address() or "local"}


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
                   "seconds": time.perf_counter() - t0, "worker": worker_address() or "local"}


def node_stats(node: tuple[StreamingClassifier, dict]) -> dict:
    """The stats half of a node (so the client gathers numbers, not models)."""
    return node[1]
