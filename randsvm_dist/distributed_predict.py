"""Distributed prediction and evaluation of any fitted classifier over a Parquet data set.

The fitted estimator travels to the workers once (it is small: support vectors or a
summary); each partition is read, scored and, for ``predict_dataset``, written as one
Parquet file into a temporary directory that is published in one step with a completion
manifest (see :class:`randsvm_dist.data.storage.AtomicDir`); ``read_predictions`` requires it.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import dask_client, put
from randsvm_dist.exceptions import SchemaError
from randsvm_dist.validation import class_index


def _labels(ds) -> list[str]:
    return [f"partition {i} ({p})" for i, p in enumerate(ds.paths)]


def _check_features(estimator, ds) -> None:
    if ds.n_features != estimator.n_features_in_:
        raise SchemaError(f"{ds} has {ds.n_features} features; the model expects "
                          f"{estimator.n_features_in_}")


def _predict_partition(estimator, ds, i: int, path: str, filesystem) -> int:
    X, y = ds.read_partition(i)
    pred = estimator.predict(X)
    cols = {"prediction": pred}
    scores = estimator.decision_function(X)
    if scores.ndim == 1:
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
    from randsvm_dist.data.storage import AtomicDir
    from randsvm_dist.engine.inputs import open_dataset

    ds = open_dataset(data)
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
    from randsvm_dist.data.storage import MANIFEST, manifest_paths, read_manifest, resolve
    from randsvm_dist.exceptions import DataFormatError

    fs, root = resolve(out_dir)
    manifest = read_manifest(fs, root)
    if manifest is None:
        raise DataFormatError(f"{out_dir} has no {MANIFEST}: not a finished prediction "
                              "output of randsvm-dist")
    return pa.concat_tables([pq.read_table(p, filesystem=fs)
                             for p in manifest_paths(fs, root, manifest, str(out_dir))])


def _confusion_partition(estimator, ds, i: int) -> np.ndarray:
    X, y = ds.read_partition(i)
    classes = estimator.classes_
    pred = estimator.predict(X)
    t = class_index(np.asarray(y), classes, where=f"{ds}, partition {i}")
    p = np.searchsorted(classes, pred)
    cm = np.zeros((len(classes), len(classes)), dtype=np.int64)
    np.add.at(cm, (t, p), 1)
    return cm


def evaluate_dataset(estimator, data, client=None) -> dict:
    """Accuracy and confusion matrix of a fitted classifier on a Parquet data set.

    Returns:
        {"accuracy", "confusion_matrix" (rows: true, cols: predicted, in classes_ order),
         "classes", "rows", "seconds"}.

    Raises:
        SchemaError: feature count differs, or a label the model does not know.
    """
    from randsvm_dist.engine.inputs import open_dataset

    ds = open_dataset(data)
    _check_features(estimator, ds)
    t0 = time.perf_counter()
    with dask_client(client) as c:
        est = put(c, estimator)
        cms = gather(c, [c.submit(_confusion_partition, est, ds, i, pure=False, retries=2)
                         for i in range(ds.n_partitions)], f"evaluation on {ds.url}",
                     _labels(ds))
    cm = np.sum(cms, axis=0)
    return {"accuracy": float(np.trace(cm) / max(cm.sum(), 1)),
            "confusion_matrix": cm.tolist(), "classes": estimator.classes_.tolist(),
            "rows": int(cm.sum()), "seconds": time.perf_counter() - t0}
