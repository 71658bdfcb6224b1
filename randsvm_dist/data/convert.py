"""Convert svmlight/LIBSVM text, CSV, Parquet tables and arrays to partitioned Parquet.

Text is streamed: chunks of lines are parsed and gathered into partitions, each written as
soon as it is full, so memory stays at about one partition plus one chunk. Output goes to a
temporary directory renamed into place at the end; on any error nothing is left behind.

Partitioning a stream of unknown length: ``rows_per_partition=R`` cuts as the rows arrive;
``partitions=N`` first counts the data lines (a cheap pass that decompresses but does not
parse), then cuts into N near-equal partitions (memory: one partition, so choose N with the
file's size in mind). With neither, partitions hold up to 1M rows and up to 8M stored values
(about 32 MiB of float32 dense, 64 MiB sparse), whichever comes first.

Single-pass fix-ups: when the feature count is not given, svmlight's width is known only at
the end, and labels that looked integral may turn out not to be; the few partitions already
written are then re-read and rewritten (dense: padded with zero columns; labels: widened to
float64), so the final files are consistent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp

from randsvm_dist.core.progress import progress_bar
from randsvm_dist.data import csvtext, svmlight
from randsvm_dist.data.filesystem import is_url
from randsvm_dist.data.textio import TextSource, count_data_lines
from randsvm_dist.data.writer import (
    DEFAULT_ROWS_PER_PARTITION,
    LABEL,
    PartitionWriter,
    _positive_int,
    feature_names,
    partition_sizes,
    partition_table,
    write_arrays,
    write_table,
)
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError

_COMPRESSION = (".gz", ".bz2", ".xz")
MAX_PARTITION_CELLS = 1 << 23  # stored values per partition when R is not given (~32 MiB)
_CSV_EXT = {".csv": ",", ".tsv": "\t"}


def detect_format(src: str) -> str:
    """``"parquet"``, ``"csv"`` or ``"svmlight"`` from the name (svmlight by default)."""
    name = str(src).rstrip("/").lower()
    for ext in _COMPRESSION:
        if name.endswith(ext):
            name = name[: -len(ext)]
    ext = os.path.splitext(name)[1]
    if ext == ".parquet":
        return "parquet"
    if ext in _CSV_EXT:
        return "csv"
    if not is_url(src) and os.path.isdir(os.path.expanduser(str(src))):
        return "parquet"
    return "svmlight"


def convert(src, dst: str | os.PathLike, partitions: int | None = None,
            rows_per_partition: int | None = None, dense: bool | None = None,
            n_features: int | None = None, label_column: str | int | None = None, *,
            format: str | None = None, header="auto", delimiter: str | None = None,
            feature_columns: list[str] | None = None, overwrite: bool = False,
            progress: bool = False):
    """Convert a data file (or arrays) to a partitioned Parquet data set at ``dst``.

    Args:
        src: path or URL of an svmlight/LIBSVM text file (plain, .gz, .bz2, .xz), a CSV/TSV
            file, a Parquet file or directory (a user's own table, re-partitioned); or a
            tuple ``(X, y)`` of numpy/scipy arrays.
        dst: output directory (local path or fsspec URL); must not exist unless overwrite.
        partitions: number of output partitions (text: counted in a first pass), or
        rows_per_partition: rows per output partition. Default: up to 1,000,000 rows and
            up to ``MAX_PARTITION_CELLS`` (8M) stored values (dense: rows x features;
            sparse: non-zeros), whichever comes first, so memory stays bounded for any width.
        dense: True for the dense layout (one float32 column per feature), False for sparse
            (indices/values lists); default: sparse for svmlight, as the input for Parquet,
            dense otherwise.
        n_features: the feature count (svmlight: at least the highest index; use it when a
            test file's highest index is lower than the train file's, e.g. a9a.t: 123).
        label_column: CSV: the label's name or 0-based index (default: a column named
            label/class/target/y, else the first); Parquet: the label's name (default
            "label"). The output's label column is always "label".
        format: "svmlight", "csv" or "parquet"; default from the file name.
        header: CSV: True, False or "auto".
        delimiter: CSV field separator (default "," or tab for .tsv).
        feature_columns: Parquet input, dense: the feature columns to keep, in order.
        overwrite: replace an existing ``dst``.
        progress: show a tqdm progress bar.

    Returns:
        The written :class:`~randsvm_dist.data.Dataset`.

    Raises:
        DataFormatError: missing/empty input, a malformed line (named with file and line),
            existing ``dst``.
        SchemaError: labels/columns not as expected, an index beyond ``n_features``.
        ParameterError: bad partitioning arguments or format.

    Above the 60-line guide only through this docstring (every option of
    ``randsvm-dist convert``); the body is about 30 lines that dispatch by input format.
    """
    if partitions is not None and rows_per_partition is not None:
        raise ParameterError("give either partitions or rows_per_partition, not both")
    for name, value in (("partitions", partitions), ("rows_per_partition", rows_per_partition)):
        if value is not None:
            _positive_int(value, name)
    if n_features is not None and (int(n_features) != n_features or n_features < 1):
        raise ParameterError(f"n_features must be a positive integer; got {n_features!r}")
    if isinstance(src, tuple):
        return _convert_arrays(src, dst, partitions, rows_per_partition, dense, overwrite)
    src = str(src)
    fmt = _input_format(format, src)
    if fmt == "parquet":
        return _convert_parquet(src, dst, partitions, rows_per_partition, dense,
                                label_column or LABEL, feature_columns, overwrite, progress)
    source = TextSource(src)
    layout = None
    if fmt == "csv":
        delim = delimiter or _CSV_EXT.get(_base_ext(src), ",")
        layout = _csv_layout(source, header, delim, label_column)
    target = None if partitions is None else _partition_target(src, fmt, layout, partitions)
    sparse_out = (fmt == "svmlight") if dense is None else not dense
    with PartitionWriter(dst, overwrite=overwrite) as writer:
        asm = _Assembler(writer, src, sparse_out, n_features, target, rows_per_partition,
                         source_meta={"source": os.path.basename(src.rstrip("/")),
                                      "source_format": fmt})
        if layout is not None:
            _fix_csv_features(asm, layout, src, n_features)
        _parse_text(source, src, fmt, layout, asm, progress)
        return asm.finish()


def _fix_csv_features(asm: _Assembler, layout, src: str, n_features: int | None) -> None:
    """Give the assembler a CSV layout's feature names and count.

    Raises:
        SchemaError: ``n_features`` differs from the CSV's feature columns.
    """
    d = len(layout.feature_indices)
    if n_features is not None and n_features != d:
        raise SchemaError(f"{src}: {d} feature columns; n_features={n_features} was asked")
    asm.feature_names = layout.feature_names
    asm.n_features_fixed = d


def _convert_arrays(src: tuple, dst, partitions, rows_per_partition, dense, overwrite: bool):
    """``convert`` of a tuple ``(X, y)``: X in the asked layout, then ``write_arrays``."""
    X, y = src
    if sp.issparse(X) and dense:
        X = X.toarray()
    elif not sp.issparse(X) and dense is False:
        X = sp.csr_matrix(np.asarray(X, dtype=np.float32))
    return write_arrays(X, y, dst, partitions, rows_per_partition, overwrite=overwrite)


def _input_format(format: str | None, src: str) -> str:
    """'svmlight', 'csv' or 'parquet': ``format`` ('libsvm' is svmlight) or, when None,
    guessed from the file name.

    Raises:
        ParameterError: another format.
    """
    fmt = (format or detect_format(src)).lower()
    if fmt == "libsvm":
        fmt = "svmlight"
    if fmt not in ("svmlight", "csv", "parquet"):
        raise ParameterError(f"unknown format {format!r}; expected svmlight, csv or parquet")
    return fmt


def _partition_target(src: str, fmt: str, layout, partitions: int) -> list[int]:
    """The sizes of ``partitions`` output partitions of a text file (its data lines counted
    in a first pass).

    Raises:
        DataFormatError: the file has no data rows.
    """
    rows = count_data_lines(src, comment="#" if fmt == "svmlight" else None)
    if layout is not None and layout.has_header:
        rows -= 1
    if rows <= 0:
        raise DataFormatError(f"{src}: empty: no data rows")
    return partition_sizes(rows, partitions=partitions)


def _parse_text(source: TextSource, src: str, fmt: str, layout, asm: _Assembler,
                progress: bool) -> None:
    """Parse a text file chunk by chunk into the assembler (svmlight, or CSV with
    ``layout``), with a progress bar in compressed bytes when asked."""
    bar = progress_bar(source.size, f"convert {os.path.basename(src)}", progress, "B")
    try:
        done = 0
        for chunk in source.chunks():
            if fmt == "svmlight":
                pc_ = svmlight.parse_chunk(chunk, src)
                if pc_.n_rows:
                    Xc = sp.csr_matrix((pc_.values, pc_.indices, pc_.indptr),
                                       shape=(pc_.n_rows, pc_.max_index + 1))
                    asm.add(Xc, pc_.labels, pc_.lines)
            else:
                rows_ = csvtext.parse_chunk(chunk, src, layout,
                                            skip_first=layout.has_header
                                            and chunk.first_line == 1)
                if len(rows_.labels):
                    asm.add(rows_.X, rows_.labels, rows_.lines)
            now = source.compressed_bytes_read
            bar.update(now - done)
            done = now
    finally:
        bar.close()


def _base_ext(src: str) -> str:
    name = src.lower()
    for ext in _COMPRESSION:
        if name.endswith(ext):
            name = name[: -len(ext)]
    return os.path.splitext(name)[1]


def _csv_layout(source: TextSource, header, delimiter, label_column) -> csvtext.CsvLayout:
    for chunk in source.chunks():
        first = chunk.data.split(b"\n", 1)[0]
        return csvtext.detect_layout(first, source.path, header=header, delimiter=delimiter,
                                     label_column=label_column)
    raise DataFormatError(f"{source.path}: empty: no data rows")


@dataclass
class _Written:
    path: str
    width: int
    label_kind: str


class _Assembler:
    """Gather parsed pieces into partitions and write each when full."""

    def __init__(self, writer: PartitionWriter, src: str, sparse_out: bool,
                 n_features: int | None, target: list[int] | None,
                 rows_per_partition: int | None,
                 source_meta: dict):
        self.writer = writer
        self.src = src
        self.sparse_out = sparse_out
        self.n_features_fixed = int(n_features) if n_features is not None else None
        self.target = target
        # Without an explicit rows_per_partition, also cut when the buffered partition
        # holds MAX_PARTITION_CELLS stored values, to bound memory for wide rows.
        self.explicit_rpp = rows_per_partition is not None
        self.rpp = int(rows_per_partition or DEFAULT_ROWS_PER_PARTITION)
        self.buffered_cells = 0
        self.meta = source_meta
        self.feature_names: list[str] | None = None
        self.pieces: list[tuple] = []
        self.buffered = 0
        self.width = 0  # widest row seen so far (feature count)
        self.label_kind: str | None = None  # "int", "float" or "str"
        self.written: list[_Written] = []
        self.rows = 0

    def _next_size(self) -> int:
        k = len(self.written)
        if self.target is not None:
            return self.target[k] if k < len(self.target) else self.target[-1]
        if self.explicit_rpp or self.buffered == 0:
            return self.rpp
        per_row = max(self.buffered_cells / self.buffered, 1.0)
        return max(1, min(self.rpp, int(MAX_PARTITION_CELLS // per_row)))

    def _cells(self, X) -> int:
        if self.sparse_out:
            return int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))
        return X.shape[0] * max(self.width, X.shape[1])

    def add(self, X, labels: np.ndarray, lines: np.ndarray) -> None:
        """Add rows (X CSR or dense, labels float64 or str objects, 1-based line numbers)."""
        d = X.shape[1]
        if self.n_features_fixed is not None and d > self.n_features_fixed:
            # Name the first line whose highest index is beyond the declared width.
            if sp.issparse(X):
                row_max = np.maximum.reduceat(X.indices, X.indptr[:-1]) if X.nnz else None
                empty = np.diff(X.indptr) == 0
                row_max = np.where(empty, -1, row_max)
                r = int(np.argmax(row_max >= self.n_features_fixed))
                raise SchemaError(
                    f"{self.src}:{int(lines[r])}: feature index {int(row_max[r]) + 1} is "
                    f"beyond n_features={self.n_features_fixed}; expected indices "
                    f"1..{self.n_features_fixed}")
            raise SchemaError(f"{self.src}: {d} features; expected {self.n_features_fixed}")
        self.width = max(self.width, d)
        self._check_label_kind(labels, lines)
        self.pieces.append((X, labels, lines))
        self.buffered += X.shape[0]
        self.buffered_cells += self._cells(X)
        self.rows += X.shape[0]
        while self.buffered >= self._next_size() and not self._last_target_partition():
            self._flush(self._next_size())

    def _last_target_partition(self) -> bool:
        # With a counted target, the last partition takes whatever remains at the end.
        return self.target is not None and len(self.written) >= len(self.target) - 1

    def _check_label_kind(self, labels: np.ndarray, lines: np.ndarray) -> None:
        if labels.dtype == object:
            if self.label_kind in ("int", "float"):
                raise DataFormatError(f"{self.src}:{int(lines[0])}..: label values are not all "
                                      "numbers (earlier labels were numeric); expected one "
                                      "kind of label throughout")
            self.label_kind = "str"
            return
        if self.label_kind == "str":
            return  # numeric-looking labels of a text-label column stay text
        integral = bool(np.all(np.abs(labels) < 2**53) and np.all(labels == np.round(labels)))
        if integral and self.label_kind in (None, "int"):
            self.label_kind = "int"
        else:
            self.label_kind = "float"

    def _take(self, n: int):
        Xs, ys, taken = [], [], 0
        while taken < n:
            X, y, lines = self.pieces[0]
            k = min(n - taken, X.shape[0])
            if k == X.shape[0]:
                self.pieces.pop(0)
            else:
                self.pieces[0] = (X[k:], y[k:], lines[k:])
                X, y = X[:k], y[:k]
            Xs.append(X)
            ys.append(y)
            taken += k
        self.buffered -= n
        self.buffered_cells = sum(self._cells(p[0]) for p in self.pieces)
        return Xs, ys

    def _labels_out(self, ys: list[np.ndarray]) -> np.ndarray:
        if self.label_kind == "str":
            return np.array([str(v) if not isinstance(v, str) else v
                             for y in ys for v in y], dtype=object)
        y = np.concatenate(ys).astype(np.float64)
        return y.astype(np.int64) if self.label_kind == "int" else y

    def _flush(self, n: int) -> None:
        Xs, ys = self._take(n)
        width = self.n_features_fixed or self.width
        X = _stack(Xs, width, sparse=self.sparse_out)
        y = self._labels_out(ys)
        path = self.writer.write(X, y, n_features=width, extra_meta=self._extra())
        self.written.append(_Written(path, width, self.label_kind))

    def _extra(self) -> dict:
        meta = dict(self.meta)
        if self.feature_names is not None:
            meta["feature_names"] = self.feature_names
        return meta

    def finish(self):
        """Write the remaining rows, fix up earlier partitions, publish; return the Dataset.

        Raises:
            DataFormatError: no data rows at all.
        """
        if self.rows == 0:
            raise DataFormatError(f"{self.src}: empty: no data rows")
        final_width = self.n_features_fixed or self.width
        if final_width == 0:
            raise SchemaError(f"{self.src}: no row has any feature; give n_features")
        if self.buffered:
            self._flush(self.buffered)
        for w in self.written:
            # Sparse files are rewritten too, so every file records the same n_features.
            if w.width != final_width or w.label_kind != self.label_kind:
                self._rewrite(w, final_width)
        return self.writer.close()

    def _rewrite(self, w: _Written, width: int) -> None:
        fs = self.writer.filesystem
        table = pq.read_table(w.path, filesystem=fs)
        y = table.column(LABEL).to_numpy()
        if self.label_kind == "float":
            y = y.astype(np.float64)
        if self.sparse_out:
            idx = table.column("indices").combine_chunks()
            val = table.column("values").combine_chunks()
            off = idx.offsets.to_numpy()
            X = sp.csr_matrix((val.flatten().to_numpy(), idx.flatten().to_numpy(), off - off[0]),
                              shape=(table.num_rows, width))
        else:
            X = np.zeros((table.num_rows, width), dtype=np.float32)
            for j, name in enumerate(feature_names(w.width)):
                X[:, j] = table.column(name).to_numpy()
        del table
        write_table(partition_table(X, y, n_features=width, extra_meta=self._extra()),
                    w.path, filesystem=fs)
        w.width, w.label_kind = width, self.label_kind


def _stack(Xs: list, width: int, sparse: bool):
    if sp.issparse(Xs[0]):
        mats = [sp.csr_matrix((x.data, x.indices, x.indptr), shape=(x.shape[0], width))
                for x in Xs]
        X = sp.vstack(mats, format="csr", dtype=np.float32) if len(mats) > 1 else mats[0]
        return X if sparse else X.toarray()
    X = np.concatenate(Xs, axis=0) if len(Xs) > 1 else Xs[0]
    if X.shape[1] < width:
        X = np.hstack([X, np.zeros((X.shape[0], width - X.shape[1]), dtype=X.dtype)])
    X = np.ascontiguousarray(X, dtype=np.float32)
    return sp.csr_matrix(X) if sparse else X


def _convert_parquet(src, dst, partitions, rows_per_partition, dense, label_column,
                     feature_columns, overwrite, progress):
    from randsvm_dist.data.dataset import Dataset

    ds = Dataset.open(src, label_column=label_column, feature_columns=feature_columns)
    sparse_out = ds.is_sparse if dense is None else not dense
    target = None
    if partitions is not None:
        target = partition_sizes(ds.n_rows, partitions=partitions)
    names = None if ds.is_sparse else ds.feature_columns
    with PartitionWriter(dst, overwrite=overwrite) as writer:
        asm = _Assembler(writer, src, sparse_out, ds.n_features, target, rows_per_partition,
                         source_meta={"source": os.path.basename(str(src).rstrip("/")),
                                      "source_format": "parquet"})
        asm.feature_names = names
        bar = progress_bar(ds.n_rows, f"convert {os.path.basename(str(src))}", progress)
        start = 0
        try:
            for i in range(ds.n_partitions):
                X, y = ds.read_partition(i)
                lines = np.arange(start, start + len(y))
                if y.dtype.kind not in "iufb":
                    y = np.asarray(y, dtype=object)
                asm.add(X, y if y.dtype == object else y.astype(np.float64), lines)
                start += len(y)
                bar.update(len(y))
        finally:
            bar.close()
        return asm.finish()
