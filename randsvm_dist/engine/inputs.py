"""Placing a fit's prepared input on the workers (``engine.fit_input.FitInput``; and what
``predict`` or ``score`` are given).

In-memory arrays are cut into chunks scattered to the workers once
(``chunk_store.ChunkStore``): a partition's task names its chunk by key, so no array
travels in a task graph, and a chunk lost with its worker is scattered again from the
caller's arrays, after which Dask rebuilds the partition from its task as usual. Dask
collections are never gathered on the client: each Dask partition (row block) becomes one
partition on the workers, checked there. Every source goes through the same two build
steps (``partition_build.load_rows`` and ``partition_build.finish``: duplicates collapsed,
layout by density, rows numbered).
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.targets import LabelCoding
from randsvm_dist.core.validation import check_features, check_labels
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.chunk_store import ChunkStore, loaded_chunk
from randsvm_dist.engine.dask_collections import (
    aligned_blocks,
    as_dask_array,
    is_dask_collection,  # noqa: F401 (re-export)
)
from randsvm_dist.engine.duplicate_exchange import exchange_pays, exchanged
from randsvm_dist.engine.duplicates import collapse_pays
from randsvm_dist.engine.fit_input import (
    FitInput,
    label_coding,
    open_dataset,  # noqa: F401 (re-export)
    prepare_fit_input,
)
from randsvm_dist.engine.partition_build import (
    Loaded,
    finish,
    load_rows,
    loaded_dataset_partition,
    preferred_layout,
    survey,
)
from randsvm_dist.engine.partitions import Partition, PartitionSet, make_array_partition, placed
from randsvm_dist.exceptions import ParameterError, SchemaError

log = logging.getLogger("randsvm_dist")


LAYOUTS = ("auto", "keep", "dense", "csr")


def load_partitions(client, data, y=None, n_partitions: int | None = None,
                    cache: bool = True, *, task: str = "classification", sample_weight=None,
                    collapse: bool = False, layout: str = "keep"):
    """Place raw input on the workers: ``engine.fit_input.prepare_fit_input``, then
    ``place``.

    Args:
        client: distributed.Client.
        data: Dataset, path/URL, or X (then y is required, except for one-class).
        y: labels (classification), targets (regression) or None (one-class) when data is X.
        n_partitions, cache, collapse, layout: see ``place``.
        task: 'classification', 'regression' or 'one_class' (how labels are coded).
        sample_weight: per-row weights for array input (None: all 1).

    Returns:
        (PartitionSet, classes ndarray or None when the task has no classes).

    Raises:
        SchemaError: y missing/extra, one class, bad X, bad targets or weights.
        ParameterError: an unknown layout.
    """
    inputs = prepare_fit_input(data, y, sample_weight, task=task)
    return place(client, inputs, task, n_partitions, cache, collapse, layout)


def place(client, inputs: FitInput, task: str, n_partitions: int | None = None,
          cache: bool = True, collapse: bool = False, layout: str = "keep"):
    """Place a prepared input on the workers.

    Args:
        client: distributed.Client.
        inputs: the FitInput (source 'arrays', 'dask' or 'dataset').
        task: 'classification', 'regression' or 'one_class' (how labels are coded).
        n_partitions: chunks for array input (default: 2 per worker).
        cache: for a Dataset, keep its partitions in worker memory (True) or re-read them
            from Parquet on every pass (False; ``exact.memory_plan.cache_fits`` decides
            for cache='auto'). Array input is always kept.
        collapse: collapse identical rows (same features and label; one-class: same
            features) into one weighted row, when ``duplicates.collapse_pays``; within each
            partition, and across partitions when ``duplicate_exchange.exchange_pays``
            (kept partitions only: a Dataset re-read every pass is left as it is). Off where
            rows must stay one to one with the user's (folds, a seed's row indices).
        layout: 'keep' (the input's), 'dense', 'csr', or 'auto' (``preferred_layout`` by
            the data's density; kept partitions only).

    Returns:
        (PartitionSet, classes ndarray or None when the task has no classes). Its
        ``n_collapsed`` counts the rows removed by collapsing.

    Raises:
        SchemaError: one class, bad rows of a Dask collection.
        ParameterError: an unknown layout.
    """
    if layout not in LAYOUTS:
        raise ParameterError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    if inputs.source == "dataset":
        return _dataset_partitions(client, inputs.dataset, cache, task, collapse, layout)
    if inputs.source == "dask":
        return _dask_partitions(client, inputs.X, inputs.y, task, collapse, layout)
    return _array_partitions(client, inputs, n_partitions, collapse, layout)


def _dataset_partitions(client, ds, cache, task: str, collapse: bool, layout: str):
    """``load_partitions`` of a Dataset: kept in worker memory when ``cache`` says so (then
    built: duplicates, layout), else a PartitionSet that re-reads its files every pass."""
    coding = label_coding(task, ds.classes if task == "classification" else None,
                          f"the labels of {ds}")
    sizes = np.asarray(ds.partition_rows, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    parts = PartitionSet(None, offsets, sizes, ds.n_features, ds.is_sparse, ds, coding,
                         weighted=ds.weight_column is not None)
    if cache:
        loaded = [client.submit(loaded_dataset_partition, ds, i, int(offsets[i]), coding,
                                collapse, pure=False, retries=2)
                  for i in range(len(sizes))]
        parts = built(client, parts, loaded, collapse, layout)
    return parts, coding.classes


def _array_partitions(client, inputs: FitInput, n_partitions: int | None, collapse: bool,
                      layout: str):
    """``place`` of checked in-memory arrays: cut into row chunks placed once on the
    workers (``ChunkStore``), each built into a partition where it lies."""
    X, y, coding, weight = inputs.X, inputs.y, inputs.coding, inputs.sample_weight
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    n_chunks = max(1, min(n_partitions or 2 * workers, X.shape[0]))
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(np.int64)
    store = ChunkStore(client, [(X[a:b], y[a:b], None if weight is None else weight[a:b])
                                for a, b in zip(bounds[:-1], bounds[1:])])
    loaded = [client.submit(loaded_chunk, key, int(a), coding, collapse, pure=False,
                            retries=2, **placed(store.holder(i)))
              for i, (key, a) in enumerate(zip(store.keys, bounds[:-1]))]
    parts = PartitionSet(None, bounds[:-1].copy(), np.diff(bounds), X.shape[1],
                         sp.issparse(X), coding=coding, weighted=weight is not None,
                         source=store)
    return built(client, parts, loaded, collapse, layout), coding.classes


def built(client, parts: PartitionSet, loaded: list, collapse: bool, layout: str
          ) -> PartitionSet:
    """``parts`` with its partitions finished from ``loaded`` (futures of
    ``partition_build.Loaded``): one small gather of their sizes decides, for the whole data
    set, whether duplicates are also looked for across partitions
    (``duplicate_exchange.exchange_pays``, then ``exchanged``), whether they collapse
    (``collapse_pays``) and the layout, then every partition is finished on its worker
    (``partition_build.finish``); partitions left without rows are dropped.

    Returns:
        a PartitionSet with the partitions' futures, their (collapsed) offsets and sizes,
        ``n_collapsed``, ``n_collapsed_across``, ``exchanged`` and ``is_sparse`` set.
    """
    stats = _surveyed(client, loaded, parts.names())
    n, distinct_within = int(stats[:, 0].sum()), int(stats[:, 1].sum())
    across = collapse and exchange_pays(client, loaded, stats, parts.weighted,
                                        parts.names())
    if across:
        loaded = exchanged(client, loaded, parts.offsets)
        stats = _surveyed(client, loaded, parts.names())
    n_unique = int(stats[:, 1].sum())
    do_collapse = collapse and collapse_pays(n, n_unique, parts.weighted)
    sizes = stats[:, 1] if do_collapse else stats[:, 0]
    nnz = int(stats[:, 3].sum() if do_collapse else stats[:, 2].sum())
    if layout == "auto":
        layout = preferred_layout(nnz, int(sizes.sum()), parts.n_features)
    is_sparse = parts.is_sparse if layout == "keep" else layout == "csr"
    loaded = [f for f, size in zip(loaded, sizes) if size]  # all rows copies of others'
    sizes = sizes[sizes > 0]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    futures = [client.submit(finish, f, int(o), do_collapse, layout, pure=False, retries=2)
               for f, o in zip(loaded, offsets)]
    if do_collapse:
        log.info("duplicates collapsed: %d of %d rows (%.1f%%) are copies of others (%d "
                 "of them in other partitions only); solving %d weighted rows",
                 n - n_unique, n, 100.0 * (n - n_unique) / n, distinct_within - n_unique,
                 n_unique)
    return replace(parts, futures=futures, offsets=offsets, sizes=sizes.astype(np.int64),
                   is_sparse=is_sparse, weighted=parts.weighted or do_collapse,
                   n_collapsed=n - n_unique if do_collapse else 0,
                   n_collapsed_across=distinct_within - n_unique if do_collapse else 0,
                   exchanged=across)


def _surveyed(client, loaded: list, names: list[str]) -> np.ndarray:
    """``partition_build.survey`` of every loaded partition, as an (n_partitions, 4) array."""
    return np.array(gather(client, [client.submit(survey, f, pure=False, retries=2)
                                    for f in loaded], "the partitions' sizes", names),
                    dtype=np.int64).reshape(-1, 4)


def make_checked_partition(X, y, offset: int, coding: LabelCoding) -> Partition:
    """A Partition from one Dask block, checked like in-memory input (runs on a worker).

    Raises:
        SchemaError: bad values (naming the global row) or a label outside classes.
    """
    try:
        X = check_features(X)
        y = np.zeros(X.shape[0]) if y is None else check_labels(y, X.shape[0])
    except SchemaError as e:
        raise SchemaError(f"rows from {offset}: {e}") from None
    return make_array_partition(X, y, offset, coding)


def loaded_block(X, y, offset: int, coding: LabelCoding, find_duplicates: bool) -> Loaded:
    """``partition_build.load_rows`` of one checked Dask block (runs on a worker)."""
    return load_rows(make_checked_partition(X, y, offset, coding), find_duplicates)


def _dask_partitions(client, data, y, task: str, collapse: bool = False,
                     layout: str = "keep"):
    import dask.array as da

    X, y = aligned_blocks(as_dask_array(data, "X"),
                          None if y is None else as_dask_array(y, "y"))
    labels = (client.compute(da.unique(y)).result() if task == "classification" else None)
    coding = label_coding(task, labels, "y")
    sizes = np.asarray(X.chunks[0], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    xb = client.compute(list(X.to_delayed().ravel()))
    yb = (client.compute(list(y.to_delayed().ravel())) if y is not None
          else [None] * len(xb))
    loaded = [client.submit(loaded_block, a, b, int(o), coding, collapse, pure=False,
                            retries=2) for a, b, o, n in zip(xb, yb, offsets, sizes) if n]
    keep = sizes > 0
    parts = PartitionSet(None, offsets[keep], sizes[keep], int(X.shape[1]),
                         sp.issparse(X._meta), coding=coding)
    return built(client, parts, loaded, collapse, layout), coding.classes


