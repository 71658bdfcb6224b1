"""The output policy: which paths randsvm-dist may write, checked before any work.

The one output rule (every file and directory randsvm-dist writes):

- an existing path is refused unless ``overwrite``; with it, a directory loses only the
  files its ``_manifest.json`` lists (anything else in it stays), and a directory without
  a manifest is replaced only when it holds nothing but ``part-N.parquet`` files
  (:func:`check_replaceable`, :func:`written_files`); an existing file is replaced only
  when it is of the kind randsvm-dist writes there and never when it belongs to a data set
  (:func:`check_file_replaceable`, which ``save(path, overwrite=)`` in the Python API and
  the command line's output plan both apply);
- an output may not be, lie inside, or (a directory) contain one of the command's inputs
  (:func:`check_not_input`);
- it is written under a temporary name and renamed into place in one step, while a lock
  file beside it makes a second writer of the same path fail at once
  (:mod:`randsvm_dist.data.publish`);
- a directory's manifest records every file's size and content checksum (crc32), which
  readers verify (:mod:`randsvm_dist.data.checksums`).

This module decides (the first two points); ``publish`` writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow.fs as pafs

from randsvm_dist.data.checksums import MANIFEST, read_manifest
from randsvm_dist.data.filesystem import (
    is_pyarrow_fs,
    is_url,
    list_entries,
    local_path,
    resolve,
    url_fs,
)
from randsvm_dist.exceptions import DataFormatError

_OUR_NAME = re.compile(r"part-\d+\.parquet$")


def written_files(fs, path: str, entries) -> list[str] | None:
    """The names of the files under ``path`` that randsvm-dist wrote (those its manifest
    lists; written before manifests: the ``part-N.parquet`` files when nothing else is
    there), or None when it is not an output of this project.

    Args:
        fs: the filesystem.
        path: the directory.
        entries: its ``list_entries``.

    Raises:
        DataFormatError: it has a manifest that is malformed.
    """
    manifest = read_manifest(fs, path)
    if manifest is not None:
        return [e["name"] for e in manifest["files"]]
    if all(is_file and _OUR_NAME.match(n) for n, is_file, _ in entries):
        return [n for n, _, _ in entries]
    return None


def check_replaceable(fs, path: str, overwrite: bool, shown: str) -> None:
    """Refuse an existing output unless ``overwrite`` and it is one this project wrote.

    Args:
        fs: the output's filesystem.
        path: the output directory on ``fs``.
        overwrite: an existing output of this project may be replaced.
        shown: the path as the user gave it (for the message).

    Raises:
        DataFormatError: it is a file, or a non-empty directory and ``overwrite`` is False,
            or a directory this project did not write.
    """
    if is_pyarrow_fs(fs):
        kind = fs.get_file_info(path).type
        exists, is_dir = kind != pafs.FileType.NotFound, kind == pafs.FileType.Directory
    else:
        exists, is_dir = fs.exists(path), fs.isdir(path)
    if not exists:
        return
    if not is_dir:
        raise DataFormatError(f"output {shown} exists and is a file, not an output directory")
    entries = list_entries(fs, path)
    if not entries:
        return
    if not overwrite:
        raise DataFormatError(f"output {shown} already exists; choose a new path or pass "
                              "--overwrite (overwrite=True)")
    if written_files(fs, path, entries) is None:
        raise DataFormatError(f"output {shown} was not written by randsvm-dist (no "
                              f"{MANIFEST}); --overwrite replaces only outputs this project "
                              "wrote, so remove it yourself if it should go")


def check_output_dir(path_or_url: str | os.PathLike, overwrite: bool = False) -> None:
    """Fail early (before any work) if output directory ``path_or_url`` may not be written.

    Raises:
        DataFormatError: it exists and ``overwrite`` is False, it is a file, it was not
            written by randsvm-dist, or its nearest existing parent is not writable.
    """
    if is_url(path_or_url):
        fs, path = resolve(path_or_url)
        check_replaceable(fs, path, overwrite, str(path_or_url))
        return
    path = local_path(path_or_url)
    check_replaceable(pafs.LocalFileSystem(), path, overwrite, str(path_or_url))
    parent = Path(path).parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise DataFormatError(f"output {path_or_url}: directory {parent} is not writable")


def check_output_file(path: str | os.PathLike, overwrite: bool = False,
                      what: str = "output") -> None:
    """Fail early if a file output (a report, range file, PNG, CSV, model) may not be
    written at ``path``.

    Raises:
        DataFormatError: it is a directory, its directory is missing or not writable, or
            it exists and ``overwrite`` is False.
    """
    s = os.fspath(path)
    if is_url(s):
        fs, p = url_fs(s)
        if not overwrite and fs.exists(p):
            raise DataFormatError(f"{what} {s} exists; choose a new path or pass --overwrite")
        return
    full = Path(local_path(s))
    if full.is_dir():
        raise DataFormatError(f"{what} {s} is a directory; give a file name")
    if not full.parent.is_dir():
        raise DataFormatError(f"{what} {s}: directory {full.parent} does not exist")
    if not os.access(full.parent, os.W_OK):
        raise DataFormatError(f"{what} {s}: directory {full.parent} is not writable")
    if full.exists() and not overwrite:
        raise DataFormatError(f"{what} {s} exists; choose a new path or pass --overwrite")


def _inside(a: str, b: str) -> bool:
    """True when path ``a`` is ``b`` or lies under directory ``b``."""
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/")


def check_not_input(output: str | os.PathLike, inputs: Iterable[str | os.PathLike | None],
                    what: str = "output", directory: bool = False) -> None:
    """Refuse an output that is one of the inputs or lies inside one (or, for a
    ``directory`` output, holds one): writing it would destroy or change what is read.

    Raises:
        DataFormatError: naming both paths.
    """
    def norm(p) -> str:
        p = os.fspath(p)
        return p.rstrip("/") if is_url(p) else local_path(p)

    out = norm(output)
    for given in inputs:
        if not given:
            continue
        inp = norm(given)
        if _inside(out, inp) or (directory and _inside(inp, out)):
            raise DataFormatError(f"{what} {os.fspath(output)} is, holds or lies inside the "
                                  f"input {os.fspath(given)}; write the output elsewhere")


def in_data_set(path: str | os.PathLike) -> bool:
    """Whether the local file ``path`` is a data set's manifest or sits beside one."""
    full = Path(local_path(os.fspath(path)))
    return full.name == MANIFEST or (full.parent / MANIFEST).exists()


def check_file_replaceable(path: str | os.PathLike, overwrite: bool, what: str,
                           ours: Callable[[Path], bool]) -> None:
    """Refuse to write the file ``path`` if that would replace what it should not.

    Args:
        path: the file to be written (URLs: only the existence rule applies, elsewhere).
        overwrite: whether an existing file may be replaced.
        what: the output's name for the message (e.g. ``model path``, ``--report``).
        ours: whether an existing file is of the kind randsvm-dist writes there.

    Raises:
        DataFormatError: it is a directory; it exists without ``overwrite``; it belongs to a
            data set; it is not a file randsvm-dist wrote.
    """
    s = os.fspath(path)
    if is_url(s):
        return
    full = Path(local_path(s))
    if full.is_dir():
        raise DataFormatError(f"{what} {s} is a directory; give a file name")
    if not full.exists():
        return
    if not overwrite:
        raise DataFormatError(f"{what} {s} exists; choose a new path or pass overwrite "
                              "(--overwrite) to replace it")
    if in_data_set(full):
        raise DataFormatError(f"{what} {s} is a file of the data set {full.parent}; "
                              "overwrite replaces only files randsvm-dist wrote as outputs")
    if not ours(full):
        raise DataFormatError(f"{what} {s} exists and is not a file randsvm-dist writes "
                              "there; overwrite replaces only files randsvm-dist wrote")
