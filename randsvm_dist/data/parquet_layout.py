"""Parquet as the ecosystem writes it: which files are data, which columns are not features.

- Index columns. pandas' ``to_parquet`` stores a DataFrame's index as a column
  (``__index_level_0__`` for an unnamed index that is not a plain RangeIndex, or the
  index's own name), Dask's ``to_parquet`` as ``__null_dask_index__``; the pandas metadata
  in the schema (``b"pandas"``: ``index_columns``) names them. They are never features
  (``index_columns``), unless the user lists one in ``feature_columns``.
- Hive-partitioned directories (``key=value/``, as pyarrow's ``write_to_dataset(...,
  partition_cols=)``, Spark, polars and DuckDB write them): the files under them, in
  sorted path order, are the data set's partitions (``hive_files``); the keys are not
  columns of the files and are not read. Files whose names start with ``_`` or ``.``
  (``_SUCCESS``, ``_metadata``, ``_common_metadata``, Spark's ``.crc`` checksums) and
  files not ending in ``.parquet`` are never data.
"""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pyarrow.fs as pafs

INDEX_NAMES = re.compile(r"^__index_level_\d+__$|^__null_dask_index__$")
HIVE_DIR = re.compile(r"^[^=/]+=[^/]*$")


def index_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` that hold a pandas or Dask index: those its pandas
    metadata lists in ``index_columns`` and any named ``__index_level_N__`` or
    ``__null_dask_index__``."""
    names = set(schema.names)
    found = [n for n in schema.names if INDEX_NAMES.match(n)]
    raw = (schema.metadata or {}).get(b"pandas")
    if raw:
        try:
            listed = json.loads(raw).get("index_columns", [])
        except (ValueError, AttributeError):
            listed = []
        found += [c for c in listed if isinstance(c, str) and c in names and c not in found]
    return found


def _is_data(path: str) -> bool:
    base = os.path.basename(path.rstrip("/"))
    return base.endswith(".parquet") and not base.startswith(("_", "."))


def hive_files(fs, root: str) -> list[str] | None:
    """The ``*.parquet`` files under the ``key=value/`` directories of ``root`` (any
    depth), sorted by path; None when ``root`` has no such directory."""
    entries = _entries(fs, root)
    if entries is None:
        return None
    dirs = [p for p, is_dir in entries if is_dir and HIVE_DIR.match(os.path.basename(p))]
    if not dirs:
        return None
    files: list[str] = []
    todo = sorted(dirs)
    while todo:
        d = todo.pop(0)
        for p, is_dir in _entries(fs, d) or []:
            name = os.path.basename(p.rstrip("/"))
            if is_dir and HIVE_DIR.match(name):
                todo.append(p)
            elif not is_dir and _is_data(p):
                files.append(p)
    return sorted(files)


def _entries(fs, path: str) -> list[tuple[str, bool]] | None:
    """(path, is a directory) of what is directly under ``path``; None: not a directory."""
    if isinstance(fs, pafs.FileSystem):
        if fs.get_file_info(path).type != pafs.FileType.Directory:
            return None
        return [(i.path, i.type == pafs.FileType.Directory)
                for i in fs.get_file_info(pafs.FileSelector(path, recursive=False))]
    if not fs.isdir(path):
        return None
    return [(d["name"], d.get("type") == "directory") for d in fs.ls(path, detail=True)]
