"""A fitted estimator applied to Dask collections: lazily per row block (``predict``,
``decision_function``, ...) and its accuracy computed on the cluster."""

from __future__ import annotations

import numpy as np

from randsvm_dist.engine.dask_collections import aligned_blocks, as_dask_array


def apply_to_dask(estimator, method: str, X):
    """``estimator.<method>`` on each row block of a Dask collection, lazily.

    Returns:
        a dask array: labels, targets or (n,) scores per row; (n, k) scores or
        probabilities of k classes.
    """
    X, _ = aligned_blocks(as_dask_array(X, "X"), None)
    fn = getattr(estimator, method)
    classes = getattr(estimator, "classes_", None)
    if method == "predict":
        dtype = np.asarray(classes).dtype if classes is not None else np.float64
        return X.map_blocks(fn, drop_axis=1, dtype=dtype)
    k = len(classes) if classes is not None else 1
    if method != "predict_proba" and k <= 2:
        return X.map_blocks(fn, drop_axis=1, dtype=np.float64)
    return X.map_blocks(fn, chunks=(X.chunks[0], (k,)), dtype=np.float64)


def dask_accuracy(estimator, X, y, client=None) -> float:
    """Accuracy of ``estimator.predict`` on Dask X, y, computed on the cluster.

    Args:
        client: None (the default Dask client / scheduler) or a distributed.Client.
    """
    Xa, ya = aligned_blocks(as_dask_array(X, "X"), as_dask_array(y, "y"))
    hits = (apply_to_dask(estimator, "predict", Xa) == ya).mean()
    return float(client.compute(hits).result() if client is not None else hits.compute())
