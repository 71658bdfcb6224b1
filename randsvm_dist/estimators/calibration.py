"""Platt scaling for ``RandSVMClassifier(probability=True)`` on data on the workers.

LIBSVM fits each pair's sigmoid (probA, probB) on decision values from an internal 5-fold
cross-validation. Rows in the client's memory get exactly that
(``estimators.cross_val_probability``). Here, for partitions on the workers (Parquet, Dask
input, arrays too large for memory's route), the rows are split into 5 folds by their
random keys (``row_keys``: the same split for any partitioning); ``probability_method``
says what is fitted:

- 'cv5' (at most ``CV_MAX_ROWS`` rows): for each fold, the same classifier (the full fit's
  kernel and gamma) is fitted on the other four on the workers, and its decision values
  of the fold's rows computed there: five RandSVM fits of 80% of the rows, as LIBSVM;
- 'holdout' (more rows): one fold (a fifth of the rows, each class in proportion) is held
  out and one fit of the other 80% gives its decision values: about 0.8 of a fit instead
  of 4. Its sigmoids are fitted on a fifth of the values LIBSVM would use: at these sizes
  (hundreds of thousands of held-out rows) the sigmoid's two parameters are determined
  well, and differ from 5-fold's mainly in that one model's values are fitted instead of
  five models'.

The estimator records the choice in ``probability_method_``. Each pair's sigmoid is fitted
to the held-out values by LIBSVM's ``sigmoid_train`` (``numerics.probability``). The
final model is still trained on all rows.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, PartitionSet
from randsvm_dist.exact.sampling import row_keys, stream_id
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.probability import sigmoid_train

N_FOLDS = 5
CV_MAX_ROWS = 200_000  # more rows on the workers: one hold-out fold instead of 5 folds
CALIBRATION_STREAM = 0xCA11B


def probability_method(n_rows: int) -> str:
    """'cv5' (LIBSVM's 5-fold cross-validation) or 'holdout' (one fold, > CV_MAX_ROWS)."""
    return "cv5" if n_rows <= CV_MAX_ROWS else "holdout"


def _held_out(part: Partition, stream: int, fold: int = 0) -> np.ndarray:
    keys = row_keys(stream, part.offset, part.n_rows)
    return np.minimum((keys * N_FOLDS).astype(np.int64), N_FOLDS - 1) == fold


def _training_rows(part: Partition, stream: int, offset: int, fold: int = 0) -> Partition:
    keep = ~_held_out(part, stream, fold)
    return replace(part, X=part.X[keep], y=part.y[keep], offset=offset,
                   weight=None if part.weight is None else part.weight[keep])


def _training_count(part: Partition, stream: int, fold: int = 0) -> int:
    return int((~_held_out(part, stream, fold)).sum())


def _held_out_values(part: Partition, stream: int, model, fold: int = 0) -> tuple:
    held = _held_out(part, stream, fold)
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
    method = probability_method(parts.n_rows)
    got = []
    for fold in range(N_FOLDS if method == "cv5" else 1):
        got += _fold_values(client, parts, classes, est, stream, fold)
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


def _fold_values(client, parts: PartitionSet, classes, est, stream: int, fold: int) -> list:
    """Per partition: (decision values, coded labels, weights) of the fold's rows, from a
    fit of the other rows on the workers."""
    futures = parts.all(client)
    sizes = np.asarray(gather(client, [client.submit(_training_count, f, stream, fold,
                                                     pure=False, retries=2)
                                       for f in futures],
                              "the calibration split", parts.names()), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    train = PartitionSet(
        [client.submit(_training_rows, f, stream, int(o), fold, pure=False, retries=2)
         for f, o in zip(futures, offsets)], offsets, sizes, parts.n_features,
        parts.is_sparse, coding=parts.coding, weighted=parts.weighted)
    aux = est._fold_estimator(probability=False, client=None, seed=None,
                              random_state=est.random_seed_,
                              gamma=est.gamma_ if est.kernel != "linear" else est.gamma)
    aux._fit_partitions(client, train, classes)
    return gather(client, [client.submit(_held_out_values, f, stream, aux, fold, pure=False,
                                         retries=2) for f in futures],
                  "the held-out decision values", parts.names())


def _pairs(k: int) -> list[tuple[int, int]]:
    from randsvm_dist.numerics.multiclass import ovo_pairs

    return ovo_pairs(k)
