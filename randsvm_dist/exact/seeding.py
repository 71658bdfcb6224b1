"""Rows that join RandSVM's first sample: from a one-pass streaming model or an earlier fit.

A seed never changes the result, only how fast it is reached: the certificate is computed
from scans of all rows, whatever the first working set was.

- A fitted ``RandSVMClassifier`` (retraining with another C or gamma, or after new
  partitions were appended): its support vectors' global rows (those still in the data).
- A streaming learner (``'bsgd'``, ``'ramp'``, or an unfitted StreamingClassifier): trained
  per partition on the workers and tree-merged (``distributed.streaming.fit_streaming``).
  Its support or core vectors are not rows of the data set (BSGD
  merges points into new ones), so one scan maps the summary back to rows: the rows the
  streaming model puts on or inside its margin (y f(x) < 1 + SEED_MARGIN) are the support
  vector candidates, and a uniform draw of them (smallest keys, as every draw here) joins
  the first sample.
- A fitted streaming model: the same scan, without training.
"""

from __future__ import annotations

import time

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.sampling import row_keys, smallest_keys, stream_id
from randsvm_dist.exceptions import ParameterError

SEED_MARGIN = 0.5
SEED_STREAM = 0x5EED5


def seed_learner(name: str, C: float, gamma: float, n_rows: int, random_state: int):
    """The streaming learner a seed name stands for, with the RandSVM's C and RBF gamma.

    Raises:
        ParameterError: unknown name.
    """
    from randsvm_dist.streaming import BudgetedSGD, OnlineRampSVM

    if name == "bsgd":
        return BudgetedSGD(C=C, gamma=gamma, budget=500, n_rows=n_rows,
                           random_state=random_state)
    if name == "ramp":
        return OnlineRampSVM(C=C, gamma=gamma, kernel="rbf", random_state=random_state)
    raise ParameterError(f"seed must be None, 'bsgd', 'ramp' or an estimator; got {name!r}")


def seed_scan_partition(part: Partition, model, kinds: list, binary: bool,
                        stream: int, n_draw: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Rows of a partition inside the seed model's margin, per C-SVC problem (runs on a
    worker; a one-vs-one pair scores a row by the difference of its two classes' scores).

    Returns:
        per problem: (keys, global rows) of the n_draw smallest-key candidates, and the
        number of candidates.
    """
    f = np.asarray(model.decision_function(part.X), dtype=np.float64)
    f = f.reshape(part.n_rows, -1)
    keys = row_keys(stream, part.offset, part.n_rows)
    out = []
    for kind in kinds:
        t, mask = kind.targets(part.y)
        if binary:
            col = f[:, 0]
        elif kind.negative is None:
            col = f[:, kind.positive]
        else:
            col = f[:, kind.positive] - f[:, kind.negative]
        inside = t * col < 1.0 + SEED_MARGIN
        cand = np.flatnonzero(inside if mask is None else inside & mask)
        pick = cand[smallest_keys(keys[cand], n_draw)]
        out.append((keys[pick], part.offset + pick.astype(np.int64), len(cand)))
    return out


def seed_rows(client, parts, seed, classes: np.ndarray, kinds: list, r: int,
              C: float, gamma: float, random_state: int, dataset=None) -> tuple[list, dict]:
    """Per problem, the global rows a seed adds to the first sample.

    Args:
        client: distributed.Client.
        parts: the PartitionSet.
        seed: 'bsgd', 'ramp', a StreamingClassifier (unfitted: trained here), or a fitted
            classifier with ``decision_function`` (a RandSVMClassifier gives its support_).
        classes: the data set's classes; a fitted seed must have the same.
        kinds: the problems' kinds (``exact.kinds``; streaming seeds need C-SVC ones).
        r: most rows drawn per problem.
        C, gamma: the RandSVM's C and resolved RBF gamma (for a named seed).
        random_state: the run's seed.
        dataset: the Dataset (needed to train a streaming seed on the workers).

    Returns:
        (rows per problem, a flat info dict for the history: what the seed was, its rows
        (summed over problems), seconds).

    Raises:
        ParameterError: an unknown seed, a seed with other classes, or a streaming seed to
            train on array input.
    """
    t0 = time.perf_counter()
    model, info = _fitted_seed(client, seed, classes, C, gamma, parts.n_rows, random_state,
                               dataset)
    if hasattr(model, "support_"):  # an earlier RandSVM fit: its support vectors' rows
        rows = np.asarray(model.support_, np.int64)
        rows = rows[rows < parts.n_rows]
        info.update(seed_rows=int(len(rows)), seed_seconds=time.perf_counter() - t0)
        return [rows] * len(kinds), info
    if getattr(model, "classes_", None) is None:
        raise ParameterError(f"seed {type(model).__name__} is not fitted")
    if not all(isinstance(k, CSVC) for k in kinds):  # the scan reads C-SVC's classes
        raise ParameterError("a streaming seed applies to classification only; seed a "
                             "regression or one-class fit with a fitted RandSVM model")
    rows, n_candidates = _margin_rows(client, parts, model, kinds, len(classes) == 2,
                                      stream_id(random_state, SEED_STREAM), r)
    info.update(seed_candidates=n_candidates,
                seed_rows=int(sum(len(x) for x in rows)), seed_seconds=time.perf_counter() - t0)
    return rows, info


def _fitted_seed(client, seed, classes, C: float, gamma: float, n_rows: int,
                 random_state: int, dataset) -> tuple[object, dict]:
    """(the seed model, trained here when it is a name or an unfitted streaming learner;
    the history's info on it). Raises ParameterError as ``seed_rows``."""
    from sklearn.base import clone

    from randsvm_dist.distributed.streaming import fit_streaming
    from randsvm_dist.streaming.base import StreamingClassifier

    model = seed
    if isinstance(seed, str):
        model = seed_learner(seed, C, gamma, n_rows, random_state)
    info = {"seed": type(model).__name__}
    if isinstance(model, StreamingClassifier) and not hasattr(model, "classes_"):
        if dataset is None:
            raise ParameterError("a streaming seed is trained on the Parquet partitions: fit "
                                 "on a Dataset or path, or pass a fitted model as seed")
        model = fit_streaming(clone(model), dataset, client)
        info["seed_train_seconds"] = model.reduce_info_["seconds"]
        info["seed_n_core"] = int(model.n_core_)
    fitted_classes = getattr(model, "classes_", None)
    if fitted_classes is not None and classes is not None and (
            len(fitted_classes) != len(classes) or np.any(np.asarray(fitted_classes)
                                                          != classes)):
        raise ParameterError(f"seed model's classes {list(fitted_classes)} differ from the "
                             f"data's {list(classes)}")
    return model, info


def _margin_rows(client, parts, model, kinds: list, binary: bool, stream: int,
                 r: int) -> tuple[list, int]:
    """(per problem, the r rows nearest the seed model's margin by random key among its
    candidates; the candidates summed over problems), from a scan of every partition."""
    futures = [client.submit(seed_scan_partition, parts.partition(client, i), model, kinds,
                             binary, stream, r, pure=False, retries=2)
               for i in range(parts.n_partitions)]
    got = gather(client, futures, "the seed model's margin scan",
                 [f"partition {i}" for i in range(parts.n_partitions)])
    rows, candidates = [], []
    for j in range(len(kinds)):
        keys = np.concatenate([g[j][0] for g in got])
        cand = np.concatenate([g[j][1] for g in got])
        rows.append(np.sort(cand[np.argsort(keys, kind="stable")[:r]]))
        candidates.append(int(sum(g[j][2] for g in got)))
    return rows, int(sum(candidates))
