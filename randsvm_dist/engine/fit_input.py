"""What a fit was given, prepared in one step before any routing: a path or URL opened as
its ``Dataset`` (with the caller's dataset options), arrays in the caller's memory checked
and converted (float32 rows, labels coded, weights checked), Dask collections recognised
(they are converted where they are placed, on the cluster: ``engine.inputs``), or
partitions already on the workers. Every route of a fit reads the one ``FitInput`` instead
of asking the same questions of the raw input again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from randsvm_dist.core.targets import LabelCoding, real_targets
from randsvm_dist.core.validation import (
    check_classes,
    check_features,
    check_labels,
    check_sample_weight,
)
from randsvm_dist.engine.dask_collections import is_dask_collection
from randsvm_dist.exceptions import ParameterError, SchemaError

TASKS = ("classification", "regression", "one_class")


@dataclass(frozen=True)
class FitInput:
    """A fit's input, prepared.

    Attributes:
        source: 'arrays' (in this process's memory), 'dask' (Dask collections), 'dataset'
            (Parquet files) or 'partitions' (already on the workers).
        X, y: arrays: checked (X float32, dense or CSR; y 1-D, None for one-class); dask:
            as given; otherwise None.
        sample_weight: arrays: the checked weights or None.
        coding: arrays: how the labels are coded (``core.targets.LabelCoding``).
        dataset: the opened ``Dataset`` (source 'dataset').
        partitions: the ``engine.partitions.PartitionSet`` (source 'partitions'), coded
            for the fit's task; classes: its sorted classes or None.
        n_bytes: the arrays' size as passed (before conversion; inf when unknown), by
            which the in-process route judges them (``exact.route.judged_by_shape``);
            None when they were passed without a 2-D shape (lists).
        seconds: the preparation's seconds (part of the fit's 'placement' phase).
    """

    source: str
    X: object = None
    y: object = None
    sample_weight: np.ndarray | None = None
    coding: LabelCoding | None = None
    dataset: object = None
    partitions: object = None
    classes: np.ndarray | None = None
    n_bytes: float | None = np.inf
    seconds: float = 0.0


def on_workers(parts, classes) -> FitInput:
    """The FitInput of partitions already on the workers (grid-search folds, Platt
    scaling's folds).

    Args:
        parts: an ``engine.partitions.PartitionSet`` coded for the fit's task.
        classes: its sorted classes (classification) or None.
    """
    return FitInput("partitions", partitions=parts, classes=classes)


def prepare_fit_input(data, y=None, sample_weight=None, dataset_kwargs: dict | None = None,
                      task: str = "classification") -> FitInput:
    """Open, check and convert what a fit was given, once.

    Args:
        data: a ``Dataset``, a path/URL of a Parquet data set, arrays, or Dask collections.
        y, sample_weight: labels and weights for arrays and Dask collections.
        dataset_kwargs: options of ``Dataset.open`` for a path/URL.
        task: 'classification', 'regression' or 'one_class' (how labels are coded).

    Returns:
        the FitInput.

    Raises:
        ParameterError: dataset options with something that is not a path/URL.
        FileNotFoundError, DataFormatError: a path that holds no readable data set.
        SchemaError: y or weights with a Dataset, y missing for arrays, bad X, labels,
            targets or weights.
    """
    t0 = time.perf_counter()
    if y is not None and not is_dask_collection(y) and np.asarray(y).ndim == 2:
        y = check_labels(y, int(np.size(y)))  # a column vector: its one warning
    dataset = open_dataset(data, **(dataset_kwargs or {}))
    if dataset is not None:
        if y is not None:
            raise SchemaError("y must not be given with a Dataset (labels are in its files)")
        if sample_weight is not None:
            raise SchemaError("sample_weight is for array input; a Dataset's weights come "
                              "from a weight column")
        return FitInput("dataset", dataset=dataset)
    if is_dask_collection(data) or is_dask_collection(y):
        require_targets(y, task)
        return FitInput("dask", data, y)
    shape = getattr(data, "shape", None)
    n_bytes = (getattr(data, "nbytes", np.inf) if shape is not None and len(shape) == 2
               and shape[0] > 0 else None)
    X, y, coding, weight = checked_arrays(data, y, task, sample_weight)
    return FitInput("arrays", X, y, weight, coding, n_bytes=n_bytes,
                    seconds=time.perf_counter() - t0)


def open_dataset(data, **kwargs):
    """A Dataset from a Dataset, a path or a URL (others: None).

    Args:
        data: Dataset, path/URL, or anything else (arrays: None is returned).
        kwargs: options of ``Dataset.open`` (label_column, feature_columns, n_features).

    Raises:
        ParameterError: kwargs given with something that is not a path/URL.
    """
    from randsvm_dist.data import Dataset

    if isinstance(data, (str, os.PathLike)):
        return Dataset.open(data, **kwargs)
    if kwargs:
        raise ParameterError(f"dataset options {sorted(kwargs)} apply to a Parquet path/URL "
                             f"only; got {type(data).__name__}")
    return data if isinstance(data, Dataset) else None


def label_coding(task: str, labels, where: str) -> LabelCoding:
    """How the labels of a task are coded (see ``LabelCoding``).

    Args:
        task: 'classification', 'regression' or 'one_class'.
        labels: the distinct labels (classification), else unused.
        where: names the labels in errors.

    Raises:
        SchemaError: fewer than two classes for classification.
    """
    if task == "classification":
        return LabelCoding(check_classes(labels, where=where))
    return LabelCoding(None, use_labels=task == "regression")


def require_targets(y, task: str) -> None:
    """Refuse array input without targets (every task but one-class needs them).

    Raises:
        SchemaError: y is None for a task that needs it.
    """
    if y is None and task != "one_class":
        raise SchemaError("this estimator requires y to be passed, but the target y is None "
                          "(y is required when fitting on arrays)")


def checked_arrays(data, y, task: str, sample_weight):
    """(X, y, LabelCoding, weight or None) of in-memory arrays, checked (X float32).

    Raises:
        SchemaError: y missing, bad X, labels, targets or weights.
    """
    require_targets(y, task)
    X = check_features(data, min_rows=1)
    y = np.zeros(X.shape[0]) if y is None else check_labels(y, X.shape[0])
    if task == "regression":
        y = real_targets(y, "y")
    coding = label_coding(task, np.unique(y) if task == "classification" else None, "y")
    return X, y, coding, check_sample_weight(sample_weight, X.shape[0])
