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

import numpy as np
import scipy.sparse as sp

from randsvm_dist.core.progress import progress_bar
from randsvm_dist.data import csvtext, svmlight
from randsvm_dist.data.filesystem import is_url
from randsvm_dist.data.partition_assembler import PartitionAssembler
from randsvm_dist.data.textio import TextSource, count_data_lines
from randsvm_dist.data.writer import (
    LABEL,
    PartitionWriter,
    _positive_int,
    partition_sizes,
    write_arrays,
)
from randsvm_dist.exceptions import DataFormatError, ParameterError, SchemaError

_COMPRESSION = (".gz", ".bz2", ".xz")
_CSV_EXT = {".csv": ",", ".tsv": "\t"}


def detect_format(src: str) -> str:
    """``"parquet"``, ``"csv"`` or ``"svmlight"`` from the name (svmlight by default)."""
    ext = _base_ext(str(src).rstrip("/"))
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
            up to 8M stored values (``partition_assembler.MAX_PARTITION_CELLS``; dense:
            rows x features; sparse: non-zeros), whichever comes first, so memory stays
            bounded for any width.
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
    """
    _check_sizes(partitions, rows_per_partition, n_features)
    if isinstance(src, tuple):
        return _convert_arrays(src, dst, partitions, rows_per_partition, dense, overwrite)
    src = str(src)
    fmt = _input_format(format, src)
    if fmt == "parquet":
        return _convert_parquet(src, dst, partitions, rows_per_partition, dense,
                                label_column or LABEL, feature_columns, overwrite, progress)
    return _convert_text(src, dst, fmt, partitions, rows_per_partition, dense, n_features,
                         label_column, header, delimiter, overwrite, progress)


def _check_sizes(partitions: int | None, rows_per_partition: int | None,
                 n_features: int | None) -> None:
    """Check ``convert``'s partitioning and feature-count arguments.

    Raises:
        ParameterError: both partitions and rows_per_partition given, or either (or
            n_features) not a positive integer.
    """
    if partitions is not None and rows_per_partition is not None:
        raise ParameterError("give either partitions or rows_per_partition, not both")
    for name, value in (("partitions", partitions), ("rows_per_partition", rows_per_partition)):
        if value is not None:
            _positive_int(value, name)
    if n_features is not None and (int(n_features) != n_features or n_features < 1):
        raise ParameterError(f"n_features must be a positive integer; got {n_features!r}")


def _convert_text(src: str, dst: str | os.PathLike, fmt: str, partitions: int | None,
                  rows_per_partition: int | None, dense: bool | None, n_features: int | None,
                  label_column: str | int | None, header, delimiter: str | None,
                  overwrite: bool, progress: bool):
    """``convert`` of an svmlight or CSV text file (``fmt``), streamed chunk by chunk into
    partitions; the arguments are ``convert``'s.

    Returns:
        The written :class:`~randsvm_dist.data.Dataset`.

    Raises:
        DataFormatError: empty input, a malformed line, existing ``dst``.
        SchemaError: labels/columns not as expected, an index beyond ``n_features``.
    """
    source = TextSource(src)
    layout = None
    if fmt == "csv":
        delim = delimiter or _CSV_EXT.get(_base_ext(src), ",")
        layout = _csv_layout(source, header, delim, label_column)
    target = None if partitions is None else _partition_target(src, fmt, layout, partitions)
    sparse_out = (fmt == "svmlight") if dense is None else not dense
    with PartitionWriter(dst, overwrite=overwrite) as writer:
        asm = PartitionAssembler(writer, src, sparse_out, n_features, target,
                                 rows_per_partition,
                                 source_meta={"source": os.path.basename(src.rstrip("/")),
                                              "source_format": fmt})
        if layout is not None:
            _fix_csv_features(asm, layout, src, n_features)
        _parse_text(source, src, fmt, layout, asm, progress)
        return asm.finish()


def _fix_csv_features(asm: PartitionAssembler, layout, src: str, n_features: int | None) -> None:
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


def _parse_text(source: TextSource, src: str, fmt: str, layout, asm: PartitionAssembler,
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
    """The extension of a file name, lower case, under any compression suffix."""
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
        asm = PartitionAssembler(writer, src, sparse_out, ds.n_features, target, rows_per_partition,
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
