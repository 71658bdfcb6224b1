"""The one output rule, applied by every command (see :mod:`randsvm_dist.data.outputs`).

A command *claims* each of its outputs before any work: the path is checked (an existing
path needs ``--overwrite``; a directory output must be one randsvm-dist wrote; no output may
be, lie inside, or hold an input) and locked (a second ``randsvm-dist`` writing the same path
fails at once). Files are then written with :func:`publish`, directories by the data
layer's :class:`~randsvm_dist.data.publish.AtomicDir`; the locks go when the command ends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from randsvm_dist.data.filesystem import is_url
from randsvm_dist.data.outputs import check_not_input, check_output_dir, check_output_file
from randsvm_dist.data.publish import OutputLock, publish_file


class Outputs:
    """The outputs one command line writes; ``release()`` drops their locks."""

    def __init__(self) -> None:
        self.locks: list[OutputLock] = []

    def file(self, path: str | os.PathLike | None, *, overwrite: bool, what: str,
             inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        """Claim a file output (a model, report, range file, PNG, CSV).

        Raises:
            DataFormatError: see :func:`check_output_file` and :func:`check_not_input`;
                another process is writing it.
        """
        if not path:
            return
        check_not_input(path, inputs, what)
        check_output_file(path, overwrite, what)
        self.locks.append(OutputLock(path).acquire())

    def directory(self, path: str | os.PathLike | None, *, overwrite: bool, what: str,
                  inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        """Claim a directory output (a data set, predictions).

        Raises:
            DataFormatError: see :func:`check_output_dir` and :func:`check_not_input`;
                another process is writing it.
        """
        if not path:
            return
        check_not_input(path, inputs, what, directory=True)
        check_output_dir(path, overwrite)
        if is_url(path) or os.path.isdir(os.path.dirname(os.path.abspath(os.fspath(path)))):
            self.locks.append(OutputLock(path).acquire())  # (URLs are not locked)

    def release(self) -> None:
        """Release every lock taken (idempotent)."""
        while self.locks:
            self.locks.pop().release()


def publish(path: str | os.PathLike, data: bytes | str | Callable[[str], None], *,
            overwrite: bool, what: str) -> str:
    """Write one file output in one step (text, bytes, or a function drawing it at a
    temporary path); see :func:`randsvm_dist.data.publish.publish_file`.

    Raises:
        DataFormatError: it exists without ``overwrite``, or cannot be written.
    """
    if isinstance(data, str):
        data = data.encode()
    return publish_file(path, data, overwrite=overwrite, what=what)

