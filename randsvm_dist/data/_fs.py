"""Filesystem helpers: resolve a local path or URL, and publish output atomically.

Local paths use pyarrow's LocalFileSystem; URLs use pyarrow's own filesystems when it knows
the scheme (``s3://``, ``gs://``, ``hdfs://``, ``file://``) and fsspec otherwise
(``memory://``, ``abfs://``, ...). Both kinds pickle, so a Dataset can be shipped to workers.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pyarrow.fs as pafs

from ..exceptions import DataFormatError


def is_url(path: str | os.PathLike) -> bool:
    """True when ``path`` is a URL with a scheme (``s3://...``), False for a local path."""
    return "://" in str(path)


def resolve(path_or_url: str | os.PathLike):
    """Return ``(filesystem, path)`` for a local path or filesystem URL.

    Raises:
        DataFormatError: the URL's scheme is known to neither pyarrow nor fsspec.
    """
    s = str(path_or_url)
    if not is_url(s):
        return pafs.LocalFileSystem(), str(Path(s).expanduser().resolve())
    try:
        return pafs.FileSystem.from_uri(s)
    except Exception:  # unknown to pyarrow: try fsspec (memory://, abfs://, ...)
        pass
    try:
        import fsspec.core

        fs, p = fsspec.core.url_to_fs(s)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot open this URL"
        raise DataFormatError(f"cannot open {s}: {e}") from None
    return fs, p


def is_pyarrow_fs(fs) -> bool:
    """True for a pyarrow filesystem, False for an fsspec one."""
    return isinstance(fs, pafs.FileSystem)


def list_files(fs, path: str, suffix: str = ".parquet") -> list[str] | None:
    """Sorted paths of the files ending in ``suffix`` directly under directory ``path``.

    Returns None when ``path`` is not a directory (it may be a single file, or missing).
    """
    if is_pyarrow_fs(fs):
        info = fs.get_file_info(path)
        if info.type != pafs.FileType.Directory:
            return None
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        names = [i.path for i in infos if i.type == pafs.FileType.File]
    else:
        if not fs.isdir(path):
            return None
        names = [p for p in fs.ls(path, detail=False)]
    return sorted(n for n in names if n.endswith(suffix)
                  and not os.path.basename(n).startswith(("_", ".")))


def file_exists(fs, path: str) -> bool:
    """True when ``path`` is an existing file on ``fs``."""
    if is_pyarrow_fs(fs):
        return fs.get_file_info(path).type == pafs.FileType.File
    return fs.isfile(path)


def file_size(fs, path: str) -> int:
    """Size of file ``path`` in bytes."""
    if is_pyarrow_fs(fs):
        return int(fs.get_file_info(path).size)
    return int(fs.size(path))


class AtomicDir:
    """A temporary output directory that becomes ``dst`` only when committed.

    Files are written under a hidden sibling ``.<name>.tmp-<id>``; ``commit()`` renames it to
    ``dst`` (replacing an existing ``dst`` only when ``overwrite``); ``abort()`` (or leaving a
    ``with`` block on an exception) deletes it, so no half-written output is left behind.
    Local paths are renamed atomically; remote URLs are copied into place by fsspec.

    Raises:
        DataFormatError: ``dst`` exists and ``overwrite`` is False.
    """

    def __init__(self, dst: str | os.PathLike, overwrite: bool = False):
        self.dst_str = str(dst)
        self.overwrite = overwrite
        self.local = not is_url(dst)
        if self.local:
            self.dst = Path(dst).expanduser().resolve()
            if self.dst.exists() and not overwrite and not _is_empty_dir(self.dst):
                raise DataFormatError(
                    f"output {self.dst} already exists; choose a new path or overwrite it"
                )
            self.dst.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = self.dst.parent / f".{self.dst.name}.tmp-{uuid.uuid4().hex[:8]}"
            self.tmp.mkdir()
            self.fs = pafs.LocalFileSystem()
            self.tmp_path = str(self.tmp)
        else:
            import fsspec.core

            self.fs, self.dst_path = fsspec.core.url_to_fs(self.dst_str)
            if self.fs.exists(self.dst_path) and not overwrite:
                raise DataFormatError(
                    f"output {self.dst_str} already exists; choose a new path or overwrite it"
                )
            base = self.dst_path.rstrip("/")
            self.tmp_path = f"{base}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(self.tmp_path, exist_ok=True)
        self.done = False

    def path(self, name: str) -> str:
        """Path of file ``name`` inside the temporary directory."""
        return f"{self.tmp_path}/{name}"

    def commit(self) -> str:
        """Move the finished directory to ``dst``; returns ``dst`` as given."""
        if self.local:
            if self.dst.exists():
                old = self.dst.parent / f".{self.dst.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(self.dst, old)
                os.replace(self.tmp, self.dst)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(self.tmp, self.dst)
        else:
            if self.fs.exists(self.dst_path):
                self.fs.rm(self.dst_path, recursive=True)
            self.fs.mv(self.tmp_path, self.dst_path, recursive=True)
        self.done = True
        return self.dst_str

    def abort(self) -> None:
        """Delete the temporary directory (idempotent)."""
        if self.done:
            return
        self.done = True
        if self.local:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            try:
                self.fs.rm(self.tmp_path, recursive=True)
            except FileNotFoundError:
                pass

    def __enter__(self) -> AtomicDir:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.done:
            self.abort()


def _is_empty_dir(p: Path) -> bool:
    return p.is_dir() and not any(p.iterdir())
