"""Distributed prediction and evaluation of any fitted classifier over a Parquet data set.

The fitted estimator travels to the workers once (it is small: support vectors or a
summary); each partition is read, scored and, for ``predict_dataset``, written as one
Parquet file into a temporary directory that is published in one step with a completion
manifest (see :class:`randsvm_dist.data.publish.AtomicDir`); ``read_predictions`` requires it.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from randsvm_dist.core.validation import class_index, short_labels, unknown_labels
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import dask_client, put
from randsvm_dist.exceptions import SchemaError

log = logging.getLogger("randsvm_dist")


def _labels(ds) -> list[str]:
    return [f"partition {i} ({p})" for i, p in enumerate(ds.paths)]


def _check_features(estimator, ds) -> None:
    """Refuse data of another width than the model's, except for a model that knows only
    its support vectors' highest index (a stock LIBSVM file): it takes data of any width
    by LIBSVM's rule (a missing index is a zero; ``core.validation.same_width``), said
    once on the ``randsvm_dist`` logger."""
    n_model = estimator.n_features_in_
    if ds.n_features == n_model:
        return
    if getattr(estimator, "n_features_from_index_", False):
        what = (f"features {n_model + 1}..{ds.n_features} are beyond the model's highest "
                "feature index and taken as zeros in its support vectors"
                if ds.n_features > n_model else
                f"the model's features {ds.n_features + 1}..{n_model} are taken as zeros "
                "in the data")
        log.info("%s has %d features, the model's support vectors use features up to %d "
                 "(a stock LIBSVM model): %s, as LIBSVM's svm-predict does", ds,
                 ds.n_features, n_model, what)
        return
    raise SchemaError(f"{ds} has {ds.n_features} features; the model expects {n_model}")


def check_labels_known(classes, ds, whose: str = "the model's classes") -> None:
    """Refuse, before any work, a data set whose labels are not all among ``classes`` (a
    classifier's), naming both label sets in one line.

    Args:
        classes: the classes the labels must be among.
        ds: the Dataset (its labels: from its metadata, or one pass over its label column).
        whose: what to call ``classes`` in the message.

    Raises:
        SchemaError: a label of ds not among classes.
    """
    labels = ds.classes
    unknown = unknown_labels(labels, classes)
    if len(unknown):
        raise SchemaError(f"{ds} has labels {short_labels(labels)}, {whose} are "
                          f"{short_labels(classes)}: labels {short_labels(unknown)} are "
                          "not among them")


def check_test_set(data, test, *, classify: bool = True, options: dict | None = None
                   ) -> None:
    """Check a ``--test`` set against the training set before any work: the same feature
    count and (``classify``) labels all among the training set's. The training set is
    opened with ``options`` (``Dataset.open``'s: the training run's features), the test
    set with the same feature columns and one-hot categories (``fitted_options``), as
    the trained model reads it.

    Raises:
        SchemaError: the feature counts differ, or a test label is not a training label.
    """
    from types import SimpleNamespace

    from randsvm_dist.data.dataset import fitted_options
    from randsvm_dist.engine.inputs import open_dataset

    train_ds = open_dataset(data, **{k: v for k, v in (options or {}).items() if v})
    fitted = SimpleNamespace(feature_columns_=None if train_ds.is_sparse
                             else train_ds.feature_columns,
                             one_hot_categories_=getattr(train_ds, "one_hot", None))
    test_ds = open_dataset(test, **fitted_options(fitted, test))
    if train_ds.n_features != test_ds.n_features:
        raise SchemaError(f"--test {test_ds} has {test_ds.n_features} features; the "
                          f"training set has {train_ds.n_features}")
    if classify:
        check_labels_known(train_ds.classes, test_ds,
                           f"the labels of the training set {train_ds}")


def _predict_partition(estimator, ds, i: int, path: str, filesystem) -> int:
    X, y = ds.read_partition(i)
    pred = estimator.predict(X)
    cols = {"prediction": pred}
    scores = (estimator.decision_function(X) if hasattr(estimator, "decision_function")
              else None)   # a regressor's prediction is its decision value
    if scores is not None and scores.ndim == 1:
        cols["decision"] = scores
    cols["label"] = np.asarray(y)
    pq.write_table(pa.table(cols), path, filesystem=filesystem, use_dictionary=False)
    return len(pred)


def predict_dataset(estimator, data, out_dir: str | os.PathLike, client=None, *,
                    overwrite: bool = False) -> dict:
    """Write predictions (and binary decision values, and the true label) per partition.

    Args:
        estimator: fitted classifier with predict/decision_function/n_features_in_.
        data: Dataset or path/URL.
        out_dir: output directory (local path or URL the workers can write), published
            with its manifest only when every partition is written.
        client: see ``dask_client``.
        overwrite: replace an existing ``out_dir`` written by randsvm-dist.

    Returns:
        {"rows": n, "partitions": p, "seconds": t, "out": out_dir}.

    Raises:
        SchemaError: feature count differs from the model's.
        DataFormatError: ``out_dir`` exists (without ``overwrite``) or was not written by
            randsvm-dist; checked before any prediction.
    """
    from randsvm_dist.data.dataset import fitted_options
    from randsvm_dist.data.publish import AtomicDir
    from randsvm_dist.engine.inputs import open_dataset

    ds = open_dataset(data, **fitted_options(estimator, data))
    _check_features(estimator, ds)
    out_dir = os.fspath(out_dir)
    t0 = time.perf_counter()
    with AtomicDir(out_dir, overwrite=overwrite) as out, dask_client(client) as c:
        est = put(c, estimator)
        rows = gather(c, [c.submit(_predict_partition, est, ds, i,
                                   out.path(f"part-{i:05d}.parquet"), out.fs, pure=False,
                                   retries=2) for i in range(ds.n_partitions)],
                      f"predictions of {ds.url}", _labels(ds))
        out.commit()
    return {"rows": int(sum(rows)), "partitions": ds.n_partitions,
            "seconds": time.perf_counter() - t0, "out": out_dir}


def read_predictions(out_dir: str | os.PathLike) -> pa.Table:
    """The predictions ``predict_dataset`` published at ``out_dir``, partitions in order.

    Raises:
        DataFormatError: no manifest (the write did not finish, or not our output), or a
            listed file is missing or changed.
    """
    from randsvm_dist.data.checksums import MANIFEST, manifest_paths, read_manifest
    from randsvm_dist.data.filesystem import resolve
    from randsvm_dist.exceptions import DataFormatError

    fs, root = resolve(out_dir)
    manifest = read_manifest(fs, root)
    if manifest is None:
        raise DataFormatError(f"{out_dir} has no {MANIFEST}: not a finished prediction "
                              "output of randsvm-dist")
    return pa.concat_tables([pq.read_table(p, filesystem=fs)
                             for p in manifest_paths(fs, root, manifest, str(out_dir))])


def _confusion_partition(estimator, ds, i: int, proba: bool = False):
    """The partition's confusion matrix; with ``proba``, (matrix, sum over its rows of the
    log loss, sum over its rows and classes of the squared probability errors)."""
    X, y = ds.read_partition(i)
    classes = estimator.classes_
    pred = estimator.predict(X)
    t = class_index(np.asarray(y), classes, where=f"{ds}, partition {i}")
    p = np.searchsorted(classes, pred)
    cm = np.zeros((len(classes), len(classes)), dtype=np.int64)
    np.add.at(cm, (t, p), 1)
    if not proba:
        return cm
    P = np.asarray(estimator.predict_proba(X), np.float64)
    eps = np.finfo(np.float64).eps  # scikit-learn's log_loss clips so
    log_loss = -np.log(np.clip(P[np.arange(len(t)), t], eps, 1 - eps)).sum()
    P[np.arange(len(t)), t] -= 1.0
    return cm, float(log_loss), float(np.sum(P * P))


def probability_metrics(parts: list[tuple]) -> dict:
    """Log loss and Brier score from ``_confusion_partition(..., proba=True)`` results, as
    scikit-learn's ``log_loss`` and ``brier_score_loss`` (two classes: the mean squared
    error of the second class's probability; more: of all classes' probabilities, summed)."""
    cm = np.sum([g[0] for g in parts], axis=0)
    n, k = max(int(cm.sum()), 1), cm.shape[0]
    brier = sum(g[2] for g in parts) / n
    return {"log_loss": sum(g[1] for g in parts) / n,
            "brier_score": brier / 2 if k == 2 else brier}


def _regression_partition(estimator, ds, i: int) -> tuple:
    """(n, mean of y, sum of squares about it, sum of squared errors, sum of |errors|)."""
    from randsvm_dist.core.targets import real_targets

    X, y = ds.read_partition(i)
    y = real_targets(y, f"partition {i} ({ds.paths[i]})")
    err = y - estimator.predict(X)
    n = len(y)
    mean = float(y.mean()) if n else 0.0
    return (n, mean, float(((y - mean) ** 2).sum()), float(err @ err),
            float(np.abs(err).sum()))


def regression_metrics(stats: list[tuple]) -> dict:
    """RMSE, MAE and R^2 from per-partition ``_regression_partition`` sums (Chan et al.'s
    pairwise merge of the target's mean and sum of squares)."""
    n, mean, m2, sse, sae = 0, 0.0, 0.0, 0.0, 0.0
    for nb, mb, m2b, sseb, saeb in stats:
        if not nb:
            continue
        delta, tot = mb - mean, n + nb
        mean += delta * nb / tot
        m2 += m2b + delta * delta * n * nb / tot
        n, sse, sae = tot, sse + sseb, sae + saeb
    return {"rmse": float(np.sqrt(sse / max(n, 1))), "mae": sae / max(n, 1),
            "r2": float(1.0 - sse / m2) if m2 > 0 else float("nan"), "rows": int(n)}


def _one_class_partition(estimator, ds, i: int) -> tuple:
    """(decision values float32, raw labels) of a partition (scores stay float32: 4 bytes a
    row travel to the client for the exact ROC AUC)."""
    X, y = ds.read_partition(i)
    return estimator.decision_function(X).astype(np.float32), np.asarray(y)


def normal_label_of(labels: np.ndarray, normal_label=None):
    """The label of normal rows for a one-class evaluation, by this rule: ``normal_label``
    when given; else 1 (LIBSVM's and scikit-learn's inlier label) when the labels hold it;
    else None (no ROC AUC: which rows are normal is not known)."""
    if normal_label is not None:
        return normal_label
    values = np.unique(labels)
    return 1 if np.isin(1, values).item() else None


def one_class_metrics(scores: np.ndarray, labels: np.ndarray, normal_label=None) -> dict:
    """Predicted outlier fraction and, when both normal and other rows are present, the
    ROC AUC of the decision values with the normal rows as positives.

    Args:
        normal_label: the label of normal rows (see ``normal_label_of``); a string label
            from the command line matches a numeric label column by value.
    """
    out = {"outlier_fraction": float((scores < 0).mean()) if len(scores) else 0.0,
           "rows": int(len(scores))}
    normal = normal_label_of(labels, normal_label)
    if normal is not None and labels.dtype.kind in "iuf" and isinstance(normal, str):
        try:
            normal = float(normal)
        except ValueError:
            pass
    out["normal_label"] = normal.item() if isinstance(normal, np.generic) else normal
    is_normal = labels == normal if normal is not None else np.zeros(len(labels), bool)
    out["true_outlier_fraction"] = (float(1.0 - is_normal.mean()) if normal is not None
                                    and len(labels) else None)
    if normal is not None and 0 < is_normal.sum() < len(labels):
        from sklearn.metrics import roc_auc_score

        out["roc_auc"] = float(roc_auc_score(is_normal, scores))
    else:
        out["roc_auc"] = None
        out["roc_auc_note"] = ("no ROC AUC: the labels hold " + (
            "no rows other than the normal label" if normal is not None and is_normal.all()
            else f"no rows of the normal label {normal!r}" if normal is not None
            else "no label 1; name the normal label (normal_label= / --normal-label)"))
    return out


def evaluate_dataset(estimator, data, client=None, *, normal_label=None) -> dict:
    """Quality figures of a fitted model on a Parquet data set, computed on the workers.

    Classifiers: accuracy and the full confusion matrix (every class); with probabilities
    (``predict_proba``), also log loss and Brier score as scikit-learn's ``log_loss`` and
    ``brier_score_loss`` (per-partition sums). Regressors: RMSE, MAE and R^2 (partition
    sums merged on the client). One-class models: the predicted outlier fraction and, when
    the labels name normal and other rows, the ROC AUC of the decision values (normal rows
    positive; ``normal_label`` says which label is normal, default 1, see
    ``normal_label_of``).

    Returns:
        classifiers: {"accuracy", "confusion_matrix" (rows: true, cols: predicted, in
        classes_ order), "classes", "log_loss" and "brier_score" (models with
        probabilities only), "rows", "seconds"}; regressors: {"task": "regression",
        "rmse", "mae", "r2", "rows", "seconds"}; one-class: {"task": "one_class",
        "outlier_fraction", "roc_auc" (or None with "roc_auc_note"), "normal_label",
        "true_outlier_fraction", "rows", "seconds"}.

    Raises:
        SchemaError: feature count differs, a label the model does not know, or a target
            that is missing or not a number (regression).
    """
    from sklearn.base import is_outlier_detector, is_regressor

    from randsvm_dist.data.dataset import fitted_options
    from randsvm_dist.engine.inputs import open_dataset

    ds = open_dataset(data, **fitted_options(estimator, data))
    _check_features(estimator, ds)
    t0 = time.perf_counter()
    if is_regressor(estimator) or is_outlier_detector(estimator):
        reg = is_regressor(estimator)
        with dask_client(client) as c:
            est = put(c, estimator)
            fn = _regression_partition if reg else _one_class_partition
            got = gather(c, [c.submit(fn, est, ds, i, pure=False, retries=2)
                             for i in range(ds.n_partitions)], f"evaluation on {ds.url}",
                         _labels(ds))
        if reg:
            out = {"task": "regression", **regression_metrics(got)}
        else:
            scores = np.concatenate([g[0] for g in got]) if got else np.empty(0)
            labels = np.concatenate([g[1] for g in got]) if got else np.empty(0)
            out = {"task": "one_class", **one_class_metrics(scores, labels, normal_label)}
        out["seconds"] = time.perf_counter() - t0
        return out
    check_labels_known(estimator.classes_, ds)
    proba = hasattr(estimator, "predict_proba")  # False without probabilities
    with dask_client(client) as c:
        est = put(c, estimator)
        cms = gather(c, [c.submit(_confusion_partition, est, ds, i, proba, pure=False,
                                  retries=2)
                         for i in range(ds.n_partitions)], f"evaluation on {ds.url}",
                     _labels(ds))
    extra = probability_metrics(cms) if proba else {}
    cm = np.sum([g[0] for g in cms] if proba else cms, axis=0)
    return {"accuracy": float(np.trace(cm) / max(cm.sum(), 1)),
            "confusion_matrix": cm.tolist(), "classes": estimator.classes_.tolist(),
            **extra, "rows": int(cm.sum()), "seconds": time.perf_counter() - t0}
