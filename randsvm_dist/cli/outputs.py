"""The one output rule, applied by every command (see :mod:`randsvm_dist.data.outputs`).

A command *claims* each of its outputs before any work: the path is checked (an existing
path needs ``--overwrite``, and must be a file or directory randsvm-dist wrote; no output
may be, lie inside, or hold an input or another output of the command; see
:mod:`.output_plan`) and locked (a second ``randsvm-dist`` writing the same path
fails at once). Files are then written with :func:`publish`, directories by the data
layer's :class:`~randsvm_dist.data.publish.AtomicDir`; the locks go when the command ends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from randsvm_dist.cli.output_plan import (
    check_checkpoint,
    check_distinct,
    check_ours,
    normalised,
)
from randsvm_dist.data.filesystem import is_url
from randsvm_dist.data.outputs import check_not_input, check_output_dir, check_output_file
from randsvm_dist.data.publish import OutputLock, publish_file


class Outputs:
    """The outputs one command line writes; ``release()`` drops their locks."""

    def __init__(self) -> None:
        self.locks: list[OutputLock] = []
        self.claimed: dict[str, str] = {}  # path -> what, for the plan's checks

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
        check_distinct(self.claimed, path, what)
        check_output_file(path, overwrite, what)
        if overwrite:
            check_ours(path, what)
        self.locks.append(OutputLock(path).acquire())
        self.claimed[normalised(path)] = what

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
        check_distinct(self.claimed, path, what)
        check_output_dir(path, overwrite)
        self.claimed[normalised(path)] = what
        if is_url(path) or os.path.isdir(os.path.dirname(os.path.abspath(os.fspath(path)))):
            self.locks.append(OutputLock(path).acquire())  # (URLs are not locked)

    def checkpoint(self, directory: str | os.PathLike | None, *, resume: bool,
                   overwrite: bool, inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        """Claim a checkpoint directory (``train --checkpoint DIR``) before any work: not
        an input, no other output's path, and its state used only as asked (see
        :func:`.output_plan.check_checkpoint`).

        Raises:
            DataFormatError: see those checks.
        """
        if not directory:
            return
        check_not_input(directory, inputs, "--checkpoint", directory=True)
        check_distinct(self.claimed, directory, "--checkpoint")
        check_checkpoint(directory, resume=resume, overwrite=overwrite)
        self.claimed[normalised(directory)] = "--checkpoint"

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

