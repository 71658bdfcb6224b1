"""Filesystems: a local path or URL resolved to a filesystem, and the few file operations
every other data module needs on either kind.

Local paths use pyarrow's LocalFileSystem; URLs use pyarrow's own filesystems when it knows
the scheme (``s3://``, ``gs://``, ``hdfs://``, ``file://``) and fsspec otherwise
(``memory://``, ``abfs://``, ...). Both kinds pickle, so a Dataset can be shipped to workers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs as pafs

from randsvm_dist.exceptions import DataFormatError


def is_url(path: str | os.PathLike) -> bool:
    """True when ``path`` is a URL with a scheme (``s3://...``), False for a local path."""
    return "://" in str(path)


def url_fs(url: str | os.PathLike):
    """``(fsspec filesystem, path inside it)`` of a URL (``memory://x``, ``s3://b/k``).

    The one place that maps a URL to an fsspec filesystem; local paths use
    :func:`local_path` instead.

    Raises:
        DataFormatError: no filesystem knows the URL's scheme.
    """
    import fsspec.core

    try:
        return fsspec.core.url_to_fs(str(url))
    except (ImportError, ValueError) as e:
        raise DataFormatError(f"cannot open {url}: {e}") from None


def local_path(path: str | os.PathLike) -> str:
    """A local path made absolute (``~`` expanded, symbolic links resolved)."""
    return str(Path(path).expanduser().resolve())


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
        return url_fs(s)
    except DataFormatError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure means "cannot open this URL"
        raise DataFormatError(f"cannot open {s}: {e}") from None


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


def open_input(fs, path: str):
    """A binary input stream of file ``path`` on ``fs`` (pyarrow or fsspec)."""
    return fs.open_input_stream(path) if is_pyarrow_fs(fs) else fs.open(path, "rb")


def list_entries(fs, path: str) -> list[tuple[str, bool, int]]:
    """(name, is a file, bytes) of every entry directly under directory ``path``."""
    if is_pyarrow_fs(fs):
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        return [(os.path.basename(i.path), i.type == pafs.FileType.File, int(i.size or 0))
                for i in infos]
    return [(os.path.basename(e["name"].rstrip("/")), e.get("type") == "file",
             int(e.get("size") or 0)) for e in fs.ls(path, detail=True)]


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a local file or fsspec URL.

    Raises:
        FileNotFoundError: no such file.
    """
    s = os.fspath(path)
    if is_url(s):
        fs, p = url_fs(s)
        with fs.open(p, "rb") as f:
            return f.read()
    with open(s, "rb") as f:
        return f.read()


def makedirs(path: str | os.PathLike) -> str:
    """Create directory ``path`` (local or URL) and its parents if missing; returns it.

    Raises:
        DataFormatError: it cannot be created (a read-only parent, a file in the way).
    """
    s = os.fspath(path)
    try:
        if is_url(s):
            fs, p = url_fs(s)
            fs.makedirs(p, exist_ok=True)
        else:
            os.makedirs(s, exist_ok=True)
    except (OSError, FileExistsError) as e:
        raise DataFormatError(f"cannot create directory {s}: "
                              f"{getattr(e, 'strerror', None) or e}") from None
    return s
