"""Platt scaling for ``RandSVMClassifier(probability=True)``, fitted on held-out rows.

LIBSVM fits each pair's sigmoid (probA, probB) on decision values from an internal 5-fold
cross-validation: five more trainings. Here a random fifth of the rows (``HOLDOUT``, by the
rows' random keys, so the split is the same for any partitioning) is held out, the same
classifier is fitted on the other rows (one more RandSVM fit of 80% of the data, on the
workers), its decision values of the held-out rows are computed on the workers, and each
pair's sigmoid is fitted to them (LIBSVM's ``sigmoid_train``, Lin, Lin & Weng's stable
Newton method, ``randsvm_dist.numerics.probability``). Cost: about 0.8 of a fit plus one pass over
the held-out rows, instead of LIBSVM's five fits. The final model is still trained on all
rows; like LIBSVM's cross-validation models, the calibration model differs from it only by
the rows it did not see.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, PartitionSet
from randsvm_dist.exact.sampling import row_keys, stream_id
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.probability import sigmoid_train

HOLDOUT = 0.2
CALIBRATION_STREAM = 0xCA11B


def _held_out(part: Partition, stream: int) -> np.ndarray:
    return row_keys(stream, part.offset, part.n_rows) < HOLDOUT


def _training_rows(part: Partition, stream: int, offset: int) -> Partition:
    keep = ~_held_out(part, stream)
    return replace(part, X=part.X[keep], y=part.y[keep], offset=offset,
                   weight=None if part.weight is None else part.weight[keep])


def _training_count(part: Partition, stream: int) -> int:
    return int((~_held_out(part, stream)).sum())


def _held_out_values(part: Partition, stream: int, model) -> tuple:
    held = _held_out(part, stream)
    if not held.any():
        return np.empty((0, len(model.problems_))), np.empty(0, np.int64), np.empty(0)
    X = part.X[held]
    return (model._problem_values(X), part.y[held].astype(np.int64),
            np.maximum(part.weights()[held], 0.0))


def fit_sigmoids(client, parts: PartitionSet, classes, est) -> tuple[np.ndarray, np.ndarray]:
    """(probA, probB) per pair in LIBSVM's order and orientation, from held-out rows.

    Args:
        client: distributed.Client.
        parts: the training partitions (unscaled; the calibration model scales as ``est``).
        classes: the sorted classes.
        est: the fitted classifier (its parameters are reused; one-vs-one or binary).

    Returns:
        (prob_a, prob_b), each (n_pairs,).

    Raises:
        ParameterError: a one-vs-rest model (LIBSVM's probabilities are one-vs-one), or a
            pair without held-out rows of both classes.
    """
    if len(classes) > 2 and est.problems_[0][1] < 0:
        raise ParameterError("probability=True needs multi_class='ovo' (LIBSVM's pairwise "
                             "coupling); got multi_class='ovr'")
    stream = stream_id(est.random_seed_, CALIBRATION_STREAM)
    futures = parts.all(client)
    sizes = np.asarray(gather(client, [client.submit(_training_count, f, stream, pure=False,
                                                     retries=2) for f in futures],
                              "the calibration split", parts.names()), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    train = PartitionSet(
        [client.submit(_training_rows, f, stream, int(o), pure=False, retries=2)
         for f, o in zip(futures, offsets)], offsets, sizes, parts.n_features,
        parts.is_sparse, coding=parts.coding, weighted=parts.weighted)
    aux = est.__class__(**{**est.get_params(), "probability": False, "client": None,
                           "seed": None, "random_state": est.random_seed_})
    aux._fit_partitions(client, train, classes)
    got = gather(client, [client.submit(_held_out_values, f, stream, aux, pure=False,
                                        retries=2) for f in futures],
                 "the held-out decision values", parts.names())
    dec = np.concatenate([g[0] for g in got])
    y = np.concatenate([g[1] for g in got])
    w = np.concatenate([g[2] for g in got])
    if len(classes) == 2:
        dec = -dec  # LIBSVM's pair (0, 1) is positive towards class 0
    prob_a, prob_b = [], []
    for p, (i, j) in enumerate(_pairs(len(classes))):
        rows = (y == i) | (y == j)
        if not ((y[rows] == i).any() and (y[rows] == j).any()):
            first, second = np.asarray(classes)[[i, j]].tolist()
            raise ParameterError(f"probability=True: the held-out rows lack class {first!r} "
                                 f"or {second!r}; too few rows to calibrate")
        a, b = sigmoid_train(dec[rows, p], np.where(y[rows] == i, 1.0, -1.0), w[rows])
        prob_a.append(a)
        prob_b.append(b)
    return np.array(prob_a), np.array(prob_b)


def _pairs(k: int) -> list[tuple[int, int]]:
    from randsvm_dist.numerics.multiclass import ovo_pairs

    return ovo_pairs(k)
