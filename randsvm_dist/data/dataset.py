"""The Dataset handle: a directory (local or any filesystem URL) of Parquet partitions.

A Dataset holds only paths, the filesystem and schema facts read from the Parquet footers,
never data: it pickles small, so Dask can ship it to workers that call
:meth:`Dataset.read_partition` there. Files are sorted by name; that order is the partition
order.

Two layouts are read:

* dense: feature columns (``f0`` .. by default: every column but the label, in schema
  order; or the user's own ``feature_columns=``) plus a label column;
* sparse: ``indices`` list<int32> (0-based) + ``values`` list<float32> + label.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from randsvm_dist.core.current_worker import worker_address
from randsvm_dist.core.validation import FLOAT32_MAX, check_classes, float32_range_message
from randsvm_dist.data.checksums import MANIFEST, verify_checksum
from randsvm_dist.data.dense_read import numbers, read_dense
from randsvm_dist.data.filesystem import file_size, resolve
from randsvm_dist.data.footers import (
    check_label_and_weight,
    dense_features,
    partition_files,
    read_footers,
    sparse_facts,
    stored_stats,
)
from randsvm_dist.data.parquet_layout import hive_keys, read_row_groups, split_row_groups
from randsvm_dist.data.schema import INDICES, LABEL, VALUES
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError

DEFAULT_MAX_BYTES = 2 << 30


class Dataset:
    """A partitioned Parquet data set; open it with :meth:`Dataset.open`."""

    def __init__(self, url: str, filesystem, paths: list[str], *, label_column: str,
                 feature_columns: list[str] | None, is_sparse: bool, n_features: int,
                 partition_rows: list[int], meta: dict | None,
                 classes: np.ndarray | None, class_counts: np.ndarray | None,
                 nnz: int | None, checksums: dict[str, str] | None = None,
                 weight_column: str | None = None, row_groups: list | None = None,
                 one_hot: dict | None = None):
        self.url = url
        self.filesystem = filesystem
        self.paths = list(paths)
        self.label_column = label_column
        self.feature_columns = feature_columns
        self.is_sparse = is_sparse
        self.n_features = int(n_features)
        self.partition_rows = [int(r) for r in partition_rows]
        self.meta = meta or {}
        self._classes = classes
        self._class_counts = class_counts
        self._nnz = nnz
        self.checksums = dict(checksums or {})  # path -> crc32 from _manifest.json
        self.weight_column = weight_column
        # per partition: the row groups of its file it reads (None: the whole file)
        self.row_groups = list(row_groups) if row_groups is not None else None
        # one-hot encoded feature columns: {column: its categories (strings), in order}
        self.one_hot = {c: list(v) for c, v in (one_hot or {}).items()}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path_or_url: str | os.PathLike, label_column: str = LABEL,
             feature_columns: list[str] | None = None,
             n_features: int | None = None, weight_column: str | None = None,
             one_hot_columns: list[str] | None = None,
             one_hot_categories: dict | None = None) -> Dataset:
        """Open a directory (or a single file) of Parquet partitions.

        Reads only the Parquet footers: row counts, schema, and the package's metadata.

        Args:
            path_or_url: local directory, single ``.parquet`` file, or filesystem URL
                (``s3://bucket/data``, ``memory://x``, ...). Files ``*.parquet`` directly
                under it, sorted by name, are the partitions.
            label_column: the label column's name.
            feature_columns: dense layout only: the feature columns, in order (default:
                every other column, in schema order).
            n_features: sparse layout only: the feature count, when the files do not record
                it (a user's own sparse table); else the highest index + 1 is read.
            weight_column: a numeric column of per-row sample weights (not a feature), or
                None.
            one_hot_columns: dense layout only: feature columns (strings, categoricals,
                integers or booleans) to one-hot encode: one 0/1 feature per category,
                the categories (as strings, sorted) those found in the data set's files.
            one_hot_categories: {column: categories}: one-hot encode these columns with
                exactly these categories (a fitted model's, ``one_hot_categories_``); a
                value outside them is refused when read.

        Returns:
            Dataset.

        Raises:
            DataFormatError: missing path, no Parquet files, unreadable file.
            SchemaError: missing label/feature columns, non-numeric features, partitions
                whose schemas differ.
        """
        url = str(path_or_url)
        fs, root = resolve(url)
        paths, manifest, checksums = partition_files(fs, root, url)
        rows, metas, schema0 = read_footers(fs, paths)
        if paths != [root] and manifest is None and any(
                m is not None and m.get("version", 1) >= 2 for m in metas):
            raise DataFormatError(f"{url} has no {MANIFEST}: its write did not finish (the "
                                  "writer was interrupted); write the data set again")
        paths, rows, groups = split_row_groups(fs, paths, rows, checksums)
        check_label_and_weight(url, schema0, label_column, weight_column)
        ds_meta, classes, counts = stored_stats(metas, schema0, label_column)
        names = schema0.names
        is_sparse = INDICES in names and VALUES in names and \
            pa.types.is_list(schema0.field(INDICES).type)
        nnz = None
        if is_sparse:
            n_features, nnz = sparse_facts(url, schema0, metas, feature_columns, n_features)
        one_hot = dict(one_hot_categories or {})
        wanted = list(dict.fromkeys([*(one_hot_columns or ()), *one_hot]))
        if is_sparse and wanted:
            raise SchemaError(f"{url} is sparse (indices/values); one-hot columns apply to "
                              "the dense layout only")
        if not is_sparse:
            feature_columns = dense_features(url, schema0, label_column, weight_column,
                                              feature_columns, wanted,
                                              hive_keys(paths, root))
            missing = [c for c in wanted if c not in one_hot]
            if missing:
                one_hot.update(_categories(fs, paths, missing))
            one_hot = {c: [str(v) for v in one_hot[c]] for c in wanted}
            n_features = sum(len(one_hot.get(c, (0,))) for c in feature_columns)
        ds = cls(url, fs, paths, label_column=label_column,
                 feature_columns=None if is_sparse else feature_columns,
                 is_sparse=is_sparse, n_features=-1 if n_features is None else n_features,
                 partition_rows=rows, meta=ds_meta, classes=classes,
                 class_counts=counts, nnz=nnz, checksums=checksums,
                 weight_column=weight_column,
                 row_groups=groups if any(g is not None for g in groups) else None,
                 one_hot=None if is_sparse else one_hot)
        if is_sparse and n_features is None:
            ds.n_features = ds._scan_max_index() + 1
        return ds

    # ------------------------------------------------------------------ facts
    @property
    def feature_names(self) -> list[str] | None:
        """The features' names, in order: the feature columns, a one-hot column as
        ``column=category`` per category (None: sparse)."""
        if self.feature_columns is None:
            return None
        one_hot = getattr(self, "one_hot", {})
        return [n for c in self.feature_columns
                for n in ([f"{c}={v}" for v in one_hot[c]] if c in one_hot else [c])]

    @property
    def n_rows(self) -> int:
        """Total rows, from the Parquet metadata."""
        return int(sum(self.partition_rows))

    @property
    def n_partitions(self) -> int:
        """Number of partitions (files)."""
        return len(self.paths)

    @property
    def classes(self) -> np.ndarray:
        """Sorted distinct label values (from metadata when we wrote the files)."""
        if self._classes is None:
            self._compute_class_stats()
        return self._classes

    @property
    def class_counts(self) -> np.ndarray:
        """Rows per class, aligned with :attr:`classes`."""
        if self._class_counts is None:
            self._compute_class_stats()
        return self._class_counts

    @cached_property
    def nbytes_on_disk(self) -> int:
        """Total size of the partition files in bytes."""
        return sum(file_size(self.filesystem, p) for p in dict.fromkeys(self.paths))

    def estimated_nbytes(self) -> int:
        """Bytes :meth:`to_arrays` would need for X and y (sparse: from the stored nnz)."""
        n, d = self.n_rows, self.n_features
        if not self.is_sparse:
            return n * d * 4 + n * 8
        nnz = self._nnz
        if nnz is None:
            nnz = 0
            for p in self.paths:
                md = pq.read_metadata(p, filesystem=self.filesystem)
                for rg in range(md.num_row_groups):
                    for c in range(md.num_columns):
                        col = md.row_group(rg).column(c)
                        if col.path_in_schema.startswith(VALUES):
                            nnz += col.num_values
        return nnz * 8 + (n + 1) * 4 + n * 8

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return (f"Dataset({self.url!r}, n_rows={self.n_rows}, n_features={self.n_features}, "
                f"n_partitions={self.n_partitions}, {kind})")

    # ------------------------------------------------------------------ reading
    def read_partition(self, i: int):
        """Read partition ``i``.

        Returns:
            ``(X, y)``: X float32 C-contiguous ndarray (dense) or float32 CSR matrix with
            shape (rows, n_features) (sparse); y the raw label values, 1-D ndarray.

        Raises:
            IndexError: no partition i.
            SchemaError: missing values, or an index outside [0, n_features).
        """
        return self._read(i)[:2]

    def read_weighted_partition(self, i: int):
        """``(X, y, w)`` of partition ``i``: w the ``weight_column``'s values (float64), or
        None without a weight column.

        Raises:
            IndexError, SchemaError: as ``read_partition``; a missing/non-finite weight.
        """
        return self._read(i)

    def _read(self, i: int):
        if not -self.n_partitions <= i < self.n_partitions:
            raise IndexError(f"partition {i} out of range (0..{self.n_partitions - 1})")
        path = self.paths[i]
        if self.is_sparse:
            cols = [INDICES, VALUES, self.label_column]
        else:
            cols = list(self.feature_columns) + [self.label_column]
        if self.weight_column is not None:
            cols.append(self.weight_column)
        expected = self.checksums.get(path)
        groups = self.row_groups[i] if self.row_groups else None
        try:
            with self.filesystem.open_input_file(path) if hasattr(
                    self.filesystem, "open_input_file") else self.filesystem.open(
                    path, "rb") as f:
                source = f
                if expected is not None and groups is None:  # one read: the bytes checked,
                    data = f.read()                           # then parsed from memory
                    verify_checksum(self.filesystem, path, expected, data)
                    source = pa.BufferReader(data)
                if self.is_sparse:  # a run of row groups of a large file, or the whole file
                    table = (read_row_groups(self.filesystem, path, groups, cols)
                             if groups is not None
                             else pq.read_table(source, columns=cols, use_threads=False))
                    X = self._sparse_from(table, path)
                else:
                    X, table = read_dense(source, cols, self.feature_columns, path, groups,
                                          getattr(self, "one_hot", None))
        except OSError as e:  # e.g. the path is not mounted on this worker
            raise DataFormatError(f"cannot read partition {i} ({path}) on {_where()}: {e}. "
                                  "Every worker must see the data set at the same path "
                                  "(a shared file system or a URL)") from None
        y = _label_numpy(table.column(self.label_column), path, self.label_column)
        w = None
        if self.weight_column is not None:
            w = _weights_numpy(table.column(self.weight_column), path, self.weight_column)
        return X, y, w

    def verify(self) -> int:
        """Check every partition file against the crc32 its ``_manifest.json`` records.

        Returns:
            the number of files checked (0 for a data set without checksums).

        Raises:
            DataFormatError: a file's content differs (named by path).
        """
        n = 0
        for p in self.paths:
            if self.checksums.get(p) is not None:
                verify_checksum(self.filesystem, p, self.checksums[p])
                n += 1
        return n

    def to_arrays(self, max_bytes: int = DEFAULT_MAX_BYTES):
        """The whole data set in memory as ``(X, y)`` (for small data).

        Args:
            max_bytes: refuse when X and y would need more than this many bytes.

        Raises:
            ParameterError: the data set is larger than ``max_bytes``.
        """
        need = self.estimated_nbytes()
        if need > max_bytes:
            raise ParameterError(
                f"{self.url}: {self.n_rows} rows x {self.n_features} features need about "
                f"{need / 2**20:.0f} MiB in memory, above max_bytes={max_bytes} "
                f"({max_bytes / 2**20:.0f} MiB); raise max_bytes or read partition by "
                "partition (read_partition)"
            )
        parts = [self.read_partition(i) for i in range(self.n_partitions)]
        ys = np.concatenate([y for _, y in parts]) if parts else np.empty(0)
        if self.is_sparse:
            X = sp.vstack([x for x, _ in parts], format="csr", dtype=np.float32)
        else:
            X = np.ascontiguousarray(np.concatenate([x for x, _ in parts], axis=0))
        return X, ys

    def encode_labels(self, y, binary: bool = True) -> np.ndarray:
        """Map raw labels to model labels using this data set's classes.

        Args:
            y: raw label values (e.g. from :meth:`read_partition`).
            binary: True: ``classes[0] -> -1.0``, ``classes[1] -> +1.0`` (float64);
                False: ``classes[k] -> k`` (int64).

        Raises:
            SchemaError: a label not among the classes; fewer than two classes; more than
                two classes when binary.
        """
        classes = check_classes(self.classes, where=f"the labels of {self.url}")
        if binary and len(classes) != 2:
            raise SchemaError(
                f"{self.url}: binary classification needs exactly two label values; "
                f"the label column {self.label_column!r} holds {len(classes)}: "
                f"{_short_list(classes)}"
            )
        y = np.asarray(y)
        pos = np.searchsorted(classes, y)
        pos_c = np.clip(pos, 0, len(classes) - 1)
        bad = classes[pos_c] != y
        if np.any(bad):
            k = int(np.argmax(bad))
            raise SchemaError(
                f"label {_py(y[k])!r} at position {k} is not one of the classes of {self.url} "
                f"({_short_list(classes)})"
            )
        if binary:
            return np.where(pos_c == 1, 1.0, -1.0)
        return pos_c.astype(np.int64)

    def label_mapping(self, binary: bool = True) -> dict:
        """``{raw label: encoded label}`` as :meth:`encode_labels` maps them.

        Raises:
            SchemaError: as :meth:`encode_labels` (one class; more than two when binary).
        """
        classes = self.classes
        codes = self.encode_labels(classes, binary=binary)
        return {_py(c): _py(v) for c, v in zip(classes, codes, strict=True)}

    # ------------------------------------------------------------------ internals
    def _sparse_from(self, table: pa.Table, path: str) -> sp.csr_matrix:
        idx = table.column(INDICES).combine_chunks()
        val = table.column(VALUES).combine_chunks()
        n = len(idx)
        if idx.null_count or val.null_count:
            row = _first_null(idx if idx.null_count else val)
            raise SchemaError(f"{path}: row {row} has a null indices/values list")
        off_i = _offsets(idx)
        off_v = _offsets(val)
        if not np.array_equal(off_i, off_v):
            row = int(np.argmax(off_i != off_v)) - 1
            raise SchemaError(f"{path}: row {max(row, 0)} has different numbers of indices "
                              "and values")
        indices = idx.flatten().to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
        values = val.flatten()
        if values.null_count:
            raise SchemaError(f"{path}: a null inside a values list")
        data = values.to_numpy(zero_copy_only=False)
        data = _float32_values(data, path, lambda i: (
            int(np.searchsorted(off_v, i, side="right")) - 1, int(indices[i]))
        ).astype(np.float32, copy=False)
        if not np.isfinite(data).all():
            bad = int(np.argmax(~np.isfinite(data)))
            row = int(np.searchsorted(off_i, bad, side="right")) - 1
            raise SchemaError(f"{path}: row {row} holds a NaN or infinite value; expected "
                              "finite numbers")
        if indices.size:
            lo, hi = int(indices.min()), int(indices.max())
            if lo < 0 or hi >= self.n_features:
                bad = int(np.argmax((indices < 0) | (indices >= self.n_features)))
                row = int(np.searchsorted(off_i, bad, side="right")) - 1
                raise SchemaError(
                    f"{path}: row {row} has feature index {int(indices[bad])}; expected "
                    f"0 <= index < n_features={self.n_features}"
                )
        # Same index dtype for indptr and indices, so scipy does not copy either.
        itype = np.int32 if len(data) < np.iinfo(np.int32).max else np.int64
        return sp.csr_matrix((data, indices.astype(itype, copy=False),
                              off_i.astype(itype, copy=False)), shape=(n, self.n_features))

    def _compute_class_stats(self) -> None:
        values, counts = None, None
        agg: dict = {}
        for p in self.paths:
            col = pq.read_table(p, columns=[self.label_column], filesystem=self.filesystem,
                                use_threads=False).column(self.label_column)
            y = _label_numpy(col, p, self.label_column)
            v, c = np.unique(y, return_counts=True)
            for a, b in zip(v.tolist(), c.tolist(), strict=True):
                agg[a] = agg.get(a, 0) + b
        keys = sorted(agg)
        values = np.array(keys)
        counts = np.array([agg[k] for k in keys], dtype=np.int64)
        self._classes, self._class_counts = values, counts

    def _scan_max_index(self) -> int:
        hi = -1
        for p in self.paths:
            col = pq.read_table(p, columns=[INDICES], filesystem=self.filesystem,
                                use_threads=False).column(INDICES)
            flat = col.combine_chunks().flatten().to_numpy(zero_copy_only=False)
            if flat.size:
                hi = max(hi, int(flat.max()))
        return hi


# ---------------------------------------------------------------------- helpers
def _where() -> str:
    """'worker ADDRESS' inside a Dask worker, else 'this machine'."""
    address = worker_address()
    return "this machine" if address is None else f"worker {address}"


def _offsets(arr: pa.Array) -> np.ndarray:
    off = arr.offsets.to_numpy()
    return off - off[0]


def _first_null(arr: pa.Array) -> int:
    return int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))


def _label_numpy(col: pa.ChunkedArray, path: str, name: str) -> np.ndarray:
    if col.null_count:
        row = _first_null(col.combine_chunks())
        raise SchemaError(f"{path}: row {row} has no value in label column {name!r}")
    y = np.array(numbers(col))  # writable, the file's buffers released
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        row = int(np.argmax(~np.isfinite(y)))
        raise SchemaError(f"{path}: row {row} has a NaN or infinite label in column {name!r}")
    return y


def _float32_values(v: np.ndarray, path: str, where) -> np.ndarray:
    """v unchanged, unless it holds a finite value a float32 cannot hold: SchemaError by
    ``float32_range_message`` (``where(i)``: the (row, feature) of v's i-th value)."""
    if v.dtype.kind == "f" and v.dtype.itemsize > 4 and v.size:
        big = np.abs(v) > FLOAT32_MAX
        big &= np.isfinite(v)
        if big.any():
            i = int(np.argmax(big))
            raise SchemaError(f"{path}: " + float32_range_message(float(v[i]), *where(i)))
    return v


def _short_list(a, k: int = 10) -> str:
    a = list(np.asarray(a).tolist())
    return str(a if len(a) <= k else a[:k] + ["..."])


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _weights_numpy(col: pa.ChunkedArray, path: str, name: str) -> np.ndarray:
    """A weight column as float64; a missing or non-finite weight is refused by row."""
    if col.null_count:
        row = _first_null(col.combine_chunks())
        raise SchemaError(f"{path}: row {row}: weight column {name!r} is missing a value")
    w = col.to_numpy().astype(np.float64)
    if not np.isfinite(w).all():
        row = int(np.flatnonzero(~np.isfinite(w))[0])
        raise SchemaError(f"{path}: row {row}: weight column {name!r} holds {w[row].item()!r}")
    return w


def _categories(fs, paths: list[str], columns: list[str]) -> dict[str, list[str]]:
    """The categories of one-hot columns: their distinct non-missing values over every
    file (as strings, ``dense_read.category_strings``), sorted."""
    import pyarrow.compute as pc

    from randsvm_dist.data.dense_read import category_strings

    found: dict[str, set] = {c: set() for c in columns}
    for path in dict.fromkeys(paths):
        table = pq.read_table(path, columns=columns, filesystem=fs, use_threads=False)
        for c in columns:
            values = pc.unique(category_strings(table.column(c).combine_chunks()))
            found[c].update(v for v in values.to_pylist() if v is not None)
    return {c: sorted(v) for c, v in found.items()}


def fitted_options(model, data) -> dict:
    """``Dataset.open``'s options that read a path's features as ``model`` was fitted on
    them (its ``feature_columns_`` and ``one_hot_categories_``, set by a fit on a dense
    Parquet data set): its feature columns, when the data set has them all or the model
    one-hot encodes (a data set of other column names keeps its default features, whose
    count is checked), and its one-hot categories; {} for a model fitted on other input,
    or data that is not a path."""
    columns = getattr(model, "feature_columns_", None)
    if columns is None or not isinstance(data, (str, os.PathLike)):
        return {}
    one_hot = getattr(model, "one_hot_categories_", None) or {}
    if not one_hot:
        fs, root = resolve(str(data))
        names = read_footers(fs, partition_files(fs, root, str(data))[0][:1])[2].names
        if not set(columns) <= set(names):
            return {}
        extra = [c for c in (Dataset.open(str(data)).feature_columns or []) if c not in columns]
        if extra:   # said, not silently dropped
            logging.getLogger("randsvm_dist").info(
                "%s: column(s) %s are not features of the model; read with the model's "
                "features %s", data, ", ".join(map(repr, extra)), ", ".join(map(repr, columns)))
    return {"feature_columns": list(columns),
            **({"one_hot_categories": dict(one_hot)} if one_hot else {})}
