"""Read text data files (plain, .gz, .bz2, .xz; local or URL) as chunks of whole lines.

A chunk is a bytes object of complete lines plus the 1-based number of its first line, so a
parser can name the exact line of any error. Memory stays at about one chunk.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from randsvm_dist.data.filesystem import is_url, url_fs
from randsvm_dist.exceptions import DataFormatError

_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")  # (no ^ alternative: it defeats re's scan)
_BLANK_FIRST = re.compile(rb"[ \t\r\f\v]*\n")
CHUNK_BYTES = 4 << 20  # parsing needs ~25x a chunk's size in temporaries

_DECOMPRESSORS = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),
    ".bz2": lambda f: bz2.BZ2File(f, mode="rb"),
    ".xz": lambda f: lzma.LZMAFile(f, mode="rb"),
}


@dataclass
class Chunk:
    """Complete lines ``data`` (ending in a newline) starting at 1-based line ``first_line``."""

    data: bytes
    first_line: int
    n_lines: int


class _CountingReader(io.RawIOBase):
    """Wrap a binary file, counting the (compressed) bytes read, for a progress bar."""

    def __init__(self, f):
        self.f = f
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.f.read(len(b))
        n = len(data)
        b[:n] = data
        self.count += n
        return n

    def close(self) -> None:
        self.f.close()
        super().close()


class TextSource:
    """A text data file opened for chunked reading.

    Args:
        path: local path or fsspec URL; ``.gz``, ``.bz2`` and ``.xz`` are decompressed.
        chunk_bytes: target chunk size (uncompressed; default ``CHUNK_BYTES``).

    Raises:
        DataFormatError: the file does not exist or cannot be opened.
    """

    def __init__(self, path: str | os.PathLike, chunk_bytes: int | None = None):
        self.path = str(path)
        self.chunk_bytes = int(chunk_bytes or CHUNK_BYTES)
        if is_url(self.path):
            self.fs, self.fs_path = url_fs(self.path)
        else:
            import fsspec.implementations.local

            self.fs = fsspec.implementations.local.LocalFileSystem()
            self.fs_path = os.path.abspath(os.path.expanduser(self.path))
        try:
            exists = self.fs.isfile(self.fs_path)
        except Exception:  # noqa: BLE001 - remote filesystems raise many types
            exists = False
        if not exists:
            what = "a directory, not a file" if self.fs.isdir(self.fs_path) else "not found"
            raise DataFormatError(f"{self.path}: {what}; expected a data file")
        self.size = int(self.fs.size(self.fs_path))
        self._counter: _CountingReader | None = None

    @property
    def compressed_bytes_read(self) -> int:
        """Bytes of the file (as stored) consumed so far by the open reader."""
        return self._counter.count if self._counter is not None else 0

    def open(self):
        """Open the (decompressed) binary stream."""
        raw = self.fs.open(self.fs_path, "rb")
        self._counter = _CountingReader(raw)
        buffered = io.BufferedReader(self._counter, buffer_size=1 << 20)
        ext = os.path.splitext(self.fs_path)[1].lower()
        if ext in _DECOMPRESSORS:
            return _DECOMPRESSORS[ext](buffered)
        return buffered

    def chunks(self) -> Iterator[Chunk]:
        """Yield the file as chunks of complete lines (the last line may lack a newline).

        Raises:
            DataFormatError: the file is not valid compressed data.
        """
        line = 1
        rest = b""
        with self.open() as f:
            while True:
                try:
                    block = f.read(self.chunk_bytes)
                except (OSError, EOFError, lzma.LZMAError, gzip.BadGzipFile) as e:
                    raise DataFormatError(
                        f"{self.path}: cannot decompress near line {line} ({e})") from None
                if not block:
                    break
                buf = rest + block
                cut = buf.rfind(b"\n")
                if cut < 0:
                    rest = buf
                    continue
                data, rest = buf[:cut + 1], buf[cut + 1:]
                n = data.count(b"\n")
                yield Chunk(data, line, n)
                line += n
        if rest:
            yield Chunk(rest + b"\n", line, 1)


def split_lines(data: bytes) -> pa.Array:
    """The lines of a chunk as an Arrow string array, each keeping its trailing newline.

    Zero-copy: the array's offsets point into ``data`` at every newline.

    Raises:
        pyarrow.ArrowInvalid: the bytes are not UTF-8 (callers fall back to the slow path).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10) + 1
    if not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    arr = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets),
                                           pa.py_buffer(data))
    arr.validate(full=True)  # UTF-8 check
    return arr


def data_line_mask(lines: pa.Array, comment: str | None = "#") -> np.ndarray:
    """Boolean mask of lines holding data (not blank, not a whole-line comment)."""
    trimmed = pc.ascii_trim_whitespace(lines)
    keep = pc.greater(pc.binary_length(trimmed), 0)
    if comment:
        keep = pc.and_(keep, pc.invert(pc.starts_with(trimmed, comment)))
    return keep.to_numpy(zero_copy_only=False)


def count_data_lines(path: str | os.PathLike, comment: str | None = "#") -> int:
    """Count the data lines of a text file (a cheap first pass for ``partitions=N``)."""
    n = 0
    mark = comment.encode() if comment else None
    for chunk in TextSource(path).chunks():
        blank = _BLANK_LINE.search(chunk.data) or _BLANK_FIRST.match(chunk.data)
        if not blank and not (mark and mark in chunk.data):
            n += chunk.n_lines  # the usual case: every line holds data
            continue
        try:
            n += int(data_line_mask(split_lines(chunk.data), comment).sum())
        except pa.ArrowInvalid:
            n += chunk.n_lines  # not UTF-8: the parse pass reports the bad line
    return n
