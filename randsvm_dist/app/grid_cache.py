"""The key of a grid search's results file: everything that decides a fold's result.

A results file (``grid --out OUT``'s ``folds.csv``) is re-read to resume a search only when
it was written by the same search: the same data (each Parquet file's path, size,
modification time and stored checksum; arrays: a hash of their values), the same folds
(their number and seed) and the same settings (estimator, scoring, scaling, solver choice,
tolerances, epsilon, the normal label, the weight column). Each row of the file carries the
key; :func:`recorded_key` reads it back.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os

#: the column of the results file that holds the key
KEY_COLUMN = "search_key"
#: GridSearch's parameters that change a fold's result (the grid itself is per row)
SETTINGS = ("n_folds", "scale", "libsvm_max_rows", "solver", "tol", "gap_tol", "max_iter",
            "scoring", "epsilon", "normal_label")


def data_identity(data, y=None) -> list:
    """What identifies the data a search runs on.

    Args:
        data: a Dataset, a Parquet path/URL, or X (then y).

    Returns:
        a JSON-able list: per Parquet file (path, bytes, modification time, checksum) and
        the label/weight columns; for arrays their hash.
    """
    from randsvm_dist.engine.inputs import open_dataset

    ds = open_dataset(data)
    if ds is None:
        import joblib

        return ["arrays", joblib.hash((data, y))]
    files = []
    for path in ds.paths:
        info = ds.filesystem.get_file_info(path)
        files.append([path, info.size, info.mtime_ns, ds.checksums.get(path)])
    return [ds.url, ds.label_column, ds.weight_column, files]


def search_key(search, data, y=None) -> str:
    """The key of ``search`` (a GridSearch) on ``data``: a hex digest.

    Args:
        search: the GridSearch (its settings, estimator and resolved seed).
        data, y: as ``GridSearch.fit`` takes them.
    """
    scale = search.scale if search.scale is None or isinstance(search.scale, str) \
        else repr(search.scale)
    settings = {name: getattr(search, name) for name in SETTINGS}
    kind = getattr(search.estimator, "_svm_type", search.estimator) or "c_svc"
    settings.update(scale=scale, estimator=str(kind), random_state=search._seed(),
                    data=data_identity(data, y))
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def recorded_key(path: str | os.PathLike) -> str | None:
    """The key in a results file's first row; None when it has none (no file, no rows, or
    a file without the key column).

    Raises:
        OSError: the file cannot be read.
    """
    if not os.path.exists(path):
        return None
    with open(path, newline="") as fh:
        row = next(csv.DictReader(fh), None)
    return None if row is None else row.get(KEY_COLUMN)
