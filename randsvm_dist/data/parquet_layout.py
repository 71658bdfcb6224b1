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
  files not ending in ``.parquet`` are never data. polars' ``write_parquet(...,
  partition_by=)`` also keeps the key as a column of every file: a column named as a
  hive key is not a default feature either (``hive_keys``), so polars', pyarrow's and
  DuckDB's hive directories give the same features.
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


def hive_keys(paths: list[str], root: str) -> set[str]:
    """The keys of the ``key=value`` directories between ``root`` and ``paths``."""
    keys = set()
    base = root.rstrip("/")
    for p in paths:
        rel = p[len(base):] if p.startswith(base) else p
        keys.update(part.split("=", 1)[0] for part in rel.strip("/").split("/")[:-1]
                    if HIVE_DIR.match(part))
    return keys


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


# A file of more rows than this with several row groups is read as several partitions
# (consecutive whole row groups, each partition at least this many rows where the groups
# allow): one large file written by pandas, polars, DuckDB or Spark's coalesce(1).
SPLIT_ROWS = 1_000_000


def split_row_groups(fs, paths: list[str], rows: list[int], checksums: dict,
                     split_rows: int | None = None):
    """Partitions from files: a file of more than ``split_rows`` rows and several row
    groups becomes one partition per run of consecutive whole row groups of at least
    ``split_rows`` rows (the last takes the remainder); files with a checksum (the
    package's own, written one partition per file) are never split.

    Returns:
        (paths, rows, groups): per partition its file, its rows (from the footers) and the
        row groups it reads (None: the whole file).
    """
    import pyarrow.parquet as pq

    limit = SPLIT_ROWS if split_rows is None else int(split_rows)
    out_paths, out_rows, out_groups = [], [], []
    for path, n in zip(paths, rows):
        if n <= limit or path in checksums:
            out_paths.append(path)
            out_rows.append(n)
            out_groups.append(None)
            continue
        md = pq.read_metadata(path, filesystem=fs)
        runs: list[tuple[list[int], int]] = []
        run, run_rows = [], 0
        for g in range(md.num_row_groups):
            run.append(g)
            run_rows += md.row_group(g).num_rows
            if run_rows >= limit:
                runs.append((run, run_rows))
                run, run_rows = [], 0
        if run:
            if runs and run_rows < limit // 2:  # a short tail joins the run before it
                last, last_rows = runs.pop()
                run, run_rows = last + run, last_rows + run_rows
            runs.append((run, run_rows))
        for groups, k in runs:
            out_paths.append(path)
            out_rows.append(k)
            out_groups.append(None if len(runs) == 1 else tuple(groups))
    return out_paths, out_rows, out_groups


def read_row_groups(fs, path: str, groups, columns: list[str]):
    """The ``columns`` of row groups ``groups`` of one file (pyarrow's
    read_row_groups of its ParquetFile: only those groups' bytes are read)."""
    import pyarrow.parquet as pq

    f = fs.open_input_file(path) if isinstance(fs, pafs.FileSystem) else fs.open(path, "rb")
    with f:
        return pq.ParquetFile(f).read_row_groups(list(groups), columns=columns,
                                                 use_threads=False)
