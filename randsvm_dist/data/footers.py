"""Opening a data set from its files' footers alone: which files are its partitions, their
common schema, the label, weight and feature columns checked, and what the package's own
metadata records (feature count, non-zeros, classes and their counts). Used by
:meth:`randsvm_dist.data.dataset.Dataset.open`; no row is read here.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from randsvm_dist.data.checksums import manifest_checksums, manifest_paths, read_manifest
from randsvm_dist.data.filesystem import file_exists, list_files
from randsvm_dist.data.parquet_layout import hive_files, index_columns
from randsvm_dist.data.schema import INDICES, LABEL, META_KEY, VALUES
from randsvm_dist.exceptions import DataFormatError, SchemaError


def partition_files(fs, root: str, url: str) -> tuple[list[str], dict | None, dict]:
    """The partition files of a data set: those its manifest lists, else every
    ``*.parquet`` directly under it, else the single file itself.

    Returns:
        (paths, the manifest or None, {path: crc32} from the manifest).

    Raises:
        DataFormatError: nothing there, no Parquet files, or a manifest listing a missing or
            changed file.
    """
    paths = list_files(fs, root)
    if paths == []:  # a hive-partitioned directory: key=value/ sub-directories
        paths = hive_files(fs, root) or []
    manifest = read_manifest(fs, root) if paths is not None else None
    checksums = {}
    if manifest is not None:  # a published output: exactly the files it lists
        paths = [p for p in manifest_paths(fs, root, manifest, url) if p.endswith(".parquet")]
        checksums = manifest_checksums(root, manifest)
    if paths is None:
        if not file_exists(fs, root):
            raise DataFormatError(f"data set {url} not found (no such file or directory)")
        paths = [root]
    if not paths:
        raise DataFormatError(f"data set {url} holds no *.parquet files")
    return paths, manifest, checksums


def read_footers(fs, paths: list[str]) -> tuple[list[int], list[dict | None], pa.Schema]:
    """(row count, package metadata or None) of every file, and their common schema.

    Raises:
        DataFormatError: a file is not readable Parquet.
        SchemaError: a file's columns differ from the first file's.
    """
    rows, metas, schema0 = [], [], None
    for p in paths:
        try:
            md = pq.read_metadata(p, filesystem=fs)
            schema = md.schema.to_arrow_schema()  # one footer read per file
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types here
            raise DataFormatError(f"{p}: not a readable Parquet file ({e})") from None
        if schema0 is None:
            schema0 = schema
        elif not schema.remove_metadata().equals(schema0.remove_metadata()):
            raise SchemaError(
                f"{p}: its columns differ from {paths[0]}'s "
                f"({schema_str(schema)} vs {schema_str(schema0)})"
            )
        rows.append(md.num_rows)
        raw = (schema.metadata or {}).get(META_KEY)
        metas.append(part_meta(raw, md.num_rows, p))
    return rows, metas, schema0


def check_label_and_weight(url: str, schema: pa.Schema, label_column: str,
                            weight_column: str | None) -> None:
    """Raises SchemaError: no label column, or a weight column that is the label column,
    missing, or not numeric (its type named)."""
    names = schema.names
    if label_column not in names:
        raise SchemaError(
            f"{url}: no label column {label_column!r}; columns are {names}"
        )
    if weight_column is None:
        return
    if weight_column == label_column:
        raise SchemaError(f"{url}: the weight column {weight_column!r} is the label column; "
                          "name a column of per-row weights")
    if weight_column not in names:
        raise SchemaError(f"{url}: no weight column {weight_column!r}; columns are {names}")
    kind = schema.field(weight_column).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise SchemaError(f"{url}: weight column {weight_column!r} holds {kind}, not numbers")


def stored_stats(metas: list[dict | None], schema: pa.Schema, label_column: str):
    """What the package's own metadata says of the whole data set.

    Returns:
        (the first partition's metadata, or {} when some file is not ours; the sorted
        classes and their counts, or None, None when not every file records them for
        ``label_column``, e.g. real-valued labels or another column chosen as label).
    """
    ours = all(m is not None and not m.get("_untrusted") for m in metas)
    if not ours:
        return {}, None, None
    ds_meta = dict(metas[0])
    if any(m.get("label_column", LABEL) != label_column for m in metas):
        return ds_meta, None, None  # another column as label: the stored stats do not apply
    if not all("classes" in m for m in metas):  # none for real-valued labels
        return ds_meta, None, None
    classes, counts = merge_class_stats(metas, schema.field(label_column).type)
    return ds_meta, classes, counts


def sparse_facts(url: str, schema: pa.Schema, metas: list[dict | None],
                  feature_columns, n_features: int | None) -> tuple[int | None, int | None]:
    """(feature count, non-zeros) of a sparse data set as far as its metadata knows them
    (None: to be scanned for, or unknown).

    Raises:
        SchemaError: ``feature_columns`` given, or indices/values that are not lists.
    """
    if feature_columns is not None:
        raise SchemaError(f"{url} is sparse (indices/values); feature_columns "
                          "applies to the dense layout only")
    for col in (INDICES, VALUES):
        t = schema.field(col).type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise SchemaError(f"{url}: column {col!r} must be a list; got {t}")
    if n_features is None and metas[0] is not None:
        n_features = max({int(m["n_features"]) for m in metas})
    nnz = None
    if all(m is not None and "nnz" in m for m in metas):
        nnz = sum(int(m["nnz"]) for m in metas)
    return n_features, nnz


def dense_features(url: str, schema: pa.Schema, label_column: str,
                    weight_column: str | None, feature_columns,
                    one_hot_columns=(), not_features=()) -> list[str]:
    """The feature columns of a dense data set (default: every column but the label and
    weight columns and a pandas/Dask index, ``parquet_layout.index_columns``, in schema
    order; nor ``not_features``: hive keys kept in the files), checked: numbers, or
    (``one_hot_columns``, the user's ask) strings, categorical (dictionary), integer or
    boolean columns to one-hot encode.

    Raises:
        SchemaError: a named column is missing or is the label, none is left, one is not
            numeric (strings and categoricals named with the one-hot option; timestamps
            and nested columns refused by name), or a one-hot column is not a feature.
    """
    names = schema.names
    one_hot = list(one_hot_columns or ())
    if feature_columns is None:
        skip = {label_column, weight_column, *index_columns(schema), *not_features}
        feature_columns = [n for n in names if n not in skip]
    else:
        feature_columns = list(feature_columns)
        missing = [c for c in feature_columns if c not in names]
        if missing:
            raise SchemaError(f"{url}: no feature column(s) {missing}; "
                              f"columns are {names}")
        if label_column in feature_columns:
            raise SchemaError(f"label column {label_column!r} is also listed as a "
                              "feature column")
    if not feature_columns:
        raise SchemaError(f"{url}: no feature columns besides {label_column!r}")
    outside = [c for c in one_hot if c not in feature_columns]
    if outside:
        raise SchemaError(f"{url}: one-hot column(s) {outside} are not among the feature "
                          f"columns {feature_columns}")
    unusable = [(c, schema.field(c).type) for c in feature_columns
                if _time_or_nested(schema.field(c).type)]
    bad = [(c, schema.field(c).type) for c in feature_columns
           if c not in one_hot and not _numeric(schema.field(c).type)
           and not _time_or_nested(schema.field(c).type)]
    said = []
    if bad:
        listed = ", ".join(f"{c!r} ({t})" for c, t in bad)
        said.append(
            f"feature column(s) {listed} do not hold numbers; expected numbers. One-hot "
            "encode string or categorical columns (one_hot_columns= / --one-hot "
            f"{','.join(c for c, _ in bad)}), choose the features (feature_columns= / "
            "--features) or leave these out (--exclude-columns)")
    if unusable:
        listed = ", ".join(f"{c!r} ({t})" for c, t in unusable)
        said.append(f"feature column(s) {listed} hold timestamps, dates or nested values, "
                    "which are neither numbers nor categories: leave them out "
                    "(--exclude-columns) or derive numeric columns from them")
    if said:
        raise SchemaError(f"{url}: " + "; ".join(said))
    wrong = [(c, schema.field(c).type) for c in one_hot if not one_hot_type(
        schema.field(c).type)]
    if wrong:
        listed = ", ".join(f"{c!r} ({t})" for c, t in wrong)
        raise SchemaError(f"{url}: one-hot column(s) {listed} hold neither strings, "
                          "categories, integers nor booleans")
    return feature_columns


def one_hot_type(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` may be one-hot encoded: strings, categoricals
    (dictionaries of those), integers, booleans."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_boolean(t))


def _time_or_nested(t: pa.DataType) -> bool:
    return (pa.types.is_temporal(t) or pa.types.is_nested(t))


def _numeric(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t))


def part_meta(raw: bytes | None, n_rows: int, path: str) -> dict | None:
    """The package's metadata of one part, or None when it has none or when its class
    counts do not add up to the part's rows (metadata copied from another file: the
    stats are then read from the label column instead)."""
    if not raw:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        raise DataFormatError(f"{path}: its {META_KEY!r} metadata is not JSON") from None
    if not isinstance(meta, dict):
        raise DataFormatError(f"{path}: its {META_KEY!r} metadata is not a JSON object")
    counts = meta.get("class_counts")
    if counts is not None and (not isinstance(counts, list)
                               or sum(int(c) for c in counts) != n_rows):
        logging.getLogger("randsvm_dist").warning(
            "%s: its metadata counts %s rows by class but the file holds %d rows (copied "
            "from another file?); reading its labels instead", path,
            sum(int(c) for c in counts) if isinstance(counts, list) else "?", n_rows)
        meta = {k: v for k, v in meta.items() if k not in ("classes", "class_counts", "nnz")}
        meta["_untrusted"] = True
    return meta


def merge_class_stats(metas: list[dict], label_type: pa.DataType):
    """The classes of several partitions' metadata and their summed counts.

    Returns:
        (sorted classes in the label column's dtype when pyarrow can give it, int64 counts).
    """
    agg: dict = {}
    for m in metas:
        for v, c in zip(m.get("classes", []), m.get("class_counts", []), strict=True):
            agg[v] = agg.get(v, 0) + int(c)
    keys = sorted(agg)
    try:  # the label column's own dtype (e.g. int64 stays int64), without pandas
        classes = pa.array(keys, type=label_type).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        classes = np.array(keys)
    return classes, np.array([agg[k] for k in keys], dtype=np.int64)


def schema_str(schema: pa.Schema) -> str:
    """A schema as ``name:type, ...`` for error messages."""
    return ", ".join(f"{f.name}: {f.type}" for f in schema)
