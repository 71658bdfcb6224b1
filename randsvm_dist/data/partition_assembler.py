"""Partitions assembled from a stream of parsed rows: pieces gathered until a partition is
full, each written as soon as it is, and the few partitions written before the final
feature count or label kind was known rewritten at the end (see ``convert``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp

from randsvm_dist.data.writer import (
    DEFAULT_ROWS_PER_PARTITION,
    LABEL,
    PartitionWriter,
    feature_names,
    partition_table,
    write_table,
)
from randsvm_dist.exceptions import DataFormatError, SchemaError

MAX_PARTITION_CELLS = 1 << 23  # stored values per partition when R is not given (~32 MiB)


@dataclass
class _Written:
    path: str
    width: int
    label_kind: str


class PartitionAssembler:
    """Gathers parsed pieces of rows into partitions and writes each when full; at the end
    rewrites the partitions written before the final width or label kind was known."""

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
