"""The output rule for one file, as the Python API applies it (``save(path, overwrite=)``)
and the command line's output plan does: an existing file is replaced only with
``overwrite``, only when randsvm-dist wrote it (the caller says how to recognise its own
kind of file), and never when it belongs to a data set (a directory with a manifest)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from randsvm_dist.data.storage import MANIFEST, is_url, local_path
from randsvm_dist.exceptions import DataFormatError


def in_data_set(path: str | os.PathLike) -> bool:
    """Whether the local file ``path`` is a data set's manifest or sits beside one."""
    full = Path(local_path(os.fspath(path)))
    return full.name == MANIFEST or (full.parent / MANIFEST).exists()


def check_replaceable(path: str | os.PathLike, overwrite: bool, what: str,
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
