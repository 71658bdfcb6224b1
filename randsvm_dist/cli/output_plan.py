"""The checks that make a command's outputs one plan, before any work (see :mod:`.outputs`).

- *Distinct*: no two outputs of one command share a path, or lie one inside the other (a
  model and its ``--report``, ``MODEL.range`` and ``--report``, a checkpoint directory and
  the model).
- *Ours to replace*: ``--overwrite`` replaces an existing file only when it is a file of the
  kind randsvm-dist writes there (a JSON report, an svm-scale range file, a picture, a
  grid-search CSV, a model file), and never a file of a data set (a directory holding
  ``_manifest.json``): a user's notes or another data set's manifest are refused.
- *Checkpoints*: ``--checkpoint DIR`` holding a state of an earlier run is used only with
  ``--resume`` (or replaced with ``--overwrite``); a ``state.npz`` randsvm-dist did not
  write is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from randsvm_dist.data.filesystem import is_url, local_path
from randsvm_dist.data.outputs import check_file_replaceable
from randsvm_dist.exceptions import DataFormatError

#: the first bytes of the picture formats ``report``/``grid`` write
PICTURE_MAGIC = {".png": (b"\x89PNG",), ".pdf": (b"%PDF",), ".svg": (b"<?xml", b"<svg"),
                 ".eps": (b"%!PS",), ".ps": (b"%!PS",)}


def normalised(path: str | os.PathLike) -> str:
    """The path as the plan compares it (absolute, no trailing slash; URLs as given)."""
    s = os.fspath(path)
    return s.rstrip("/") if is_url(s) else local_path(s).rstrip("/")


def check_distinct(claimed: dict[str, str], path: str | os.PathLike, what: str) -> None:
    """Refuse an output on the path of another output of the same command, or inside it,
    or holding it.

    Args:
        claimed: normalised path -> what, of the outputs claimed so far.
        path, what: the output being claimed.

    Raises:
        DataFormatError: naming both outputs.
    """
    new = normalised(path)
    for old, other in claimed.items():
        if new == old or new.startswith(old + "/") or old.startswith(new + "/"):
            raise DataFormatError(f"{what} {os.fspath(path)} and {other} {old} are the same "
                                  "path or one holds the other; give each output its own path")


def check_ours(path: str | os.PathLike, what: str) -> None:
    """With ``--overwrite``: refuse to replace an existing file that randsvm-dist did not
    write there (see the module docstring; :func:`check_file_replaceable`).

    Raises:
        DataFormatError: the file belongs to a data set, or is not of the output's kind.
    """
    check_file_replaceable(path, True, what, lambda full: _looks_written(full, what))


def _looks_written(full: Path, what: str) -> bool:
    """Whether ``full`` holds what randsvm-dist writes for the output ``what``."""
    head = full.read_bytes()[:4096]
    suffix = full.suffix.lower()
    if what == "--report" or (suffix == ".json" and what != "--model"):
        try:
            return isinstance(json.loads(full.read_text()), dict)
        except (UnicodeDecodeError, ValueError):
            return False
    if what in ("range file", "--range"):
        return head.split(b"\n", 1)[0].strip() in (b"x", b"y")
    if suffix in PICTURE_MAGIC:
        return head.startswith(PICTURE_MAGIC[suffix])
    if suffix == ".csv":
        return head.startswith((b"fold,", b"log2C,"))
    if what == "--model":
        from randsvm_dist.app.model_io import is_model_file

        return is_model_file(full)
    if what == "--checkpoint":
        from randsvm_dist.exact.checkpoint import is_checkpoint

        return is_checkpoint(full)
    return False


def check_checkpoint(directory: str | os.PathLike, *, resume: bool, overwrite: bool) -> None:
    """``--checkpoint DIR`` before any work: its ``state.npz`` must be a checkpoint this
    project wrote, and an earlier run's state is used only with ``--resume`` (replaced with
    ``--overwrite``).

    Raises:
        DataFormatError: a foreign ``state.npz``, or an earlier state without either flag.
    """
    from randsvm_dist.exact.checkpoint import STATE_FILE, is_checkpoint

    state = f"{os.fspath(directory).rstrip('/')}/{STATE_FILE}"
    if is_url(state) or not os.path.exists(local_path(state)):
        return
    if not is_checkpoint(state):
        raise DataFormatError(f"--checkpoint {os.fspath(directory)} holds a {STATE_FILE} "
                              "that is not a randsvm-dist checkpoint; choose another directory")
    if not (resume or overwrite):
        raise DataFormatError(f"--checkpoint {os.fspath(directory)} holds the state of an "
                              "earlier run: pass --resume to go on from it, or --overwrite "
                              "to start over")
