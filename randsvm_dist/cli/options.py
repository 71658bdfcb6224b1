"""Option helpers shared by the commands: each option means the same thing everywhere.

- ``--json``: print the command's result as JSON on stdout, instead of the text summary.
- ``--report FILE``: also write the result as a JSON file (the text summary still prints).
- ``--scheduler ADDRESS``: the Dask scheduler to use; default ``$RANDSVM_DIST_SCHEDULER``
  (e.g. one started by ``randsvm-dist cluster start``), else the embedded default.
- ``--random-state N``: the one seed of every random choice.
- ``--overwrite`` / ``--no-progress``: replace an existing output / no progress bar.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def number_or_name(value: str) -> float | str:
    """A number, else the name as given (``--gamma 0.5`` or ``--gamma scale``)."""
    try:
        return float(value)
    except ValueError:
        return value


def int_or_auto(value: str) -> int | str:
    """``'auto'`` or an integer."""
    return value if value == "auto" else int(value)


def bound(value: str) -> int | str | None:
    """``'none'`` (no bound), ``'auto'`` or an integer."""
    return None if value == "none" else int_or_auto(value)


def add_scheduler(p: argparse.ArgumentParser) -> None:
    """``--scheduler ADDRESS``; read it back with ``args.session.client()``."""
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler address (default: $RANDSVM_DIST_SCHEDULER, else an "
                        "embedded local cluster, one per command line)")
    p.add_argument("--tls-ca-file", default=None, metavar="PEM",
                   help="TLS: the CA of the cluster (with --tls-cert and --tls-key; default: "
                        "Dask's config distributed.comm.tls.*)")
    p.add_argument("--tls-cert", default=None, metavar="PEM", help="TLS: client certificate")
    p.add_argument("--tls-key", default=None, metavar="PEM", help="TLS: client private key")


def add_output(p: argparse.ArgumentParser, *, report: bool = True) -> None:
    """``--json`` (print JSON to stdout) and, if ``report``, ``--report FILE``."""
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON on stdout instead of the text summary")
    if report:
        p.add_argument("--report", default=None, metavar="FILE",
                       help="also write the result as a JSON file")


def add_random_state(p: argparse.ArgumentParser) -> None:
    """``--random-state N`` (default 0, so a command line is reproducible)."""
    p.add_argument("--random-state", type=int, default=0, metavar="N",
                   help="seed of every random choice")


def add_overwrite_progress(p: argparse.ArgumentParser) -> None:
    """``--overwrite`` and ``--no-progress`` of the commands that write a data set."""
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing DST written by randsvm-dist (only the files its "
                        "_manifest.json lists)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar")


def check_report_path(args: argparse.Namespace, inputs=()) -> None:
    """Claim ``--report FILE`` before any work (see :mod:`.outputs`): its directory must
    exist, it may not be an input, and an existing file needs ``--overwrite``.

    Raises:
        DataFormatError: the report path may not be written.
    """
    outputs = getattr(args, "outputs", None)
    path = getattr(args, "report", None)
    if outputs is not None and path:
        outputs.file(path, overwrite=getattr(args, "overwrite", False), what="--report",
                     inputs=inputs)


def to_json(result: dict[str, Any]) -> str:
    """The result as indented JSON (numpy scalars and paths as their plain values)."""
    return json.dumps(result, indent=2, default=_plain)


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else str(value)


def emit(args: argparse.Namespace, result: dict[str, Any], summary: str) -> None:
    """Print the text summary or, with ``--json``, the JSON; write ``--report`` if given.

    Args:
        args: the parsed command line (``json`` and optionally ``report``).
        result: the JSON-able result.
        summary: the human-readable text (printed without ``--json``).
    """
    text = to_json(result)
    if getattr(args, "json", False):
        print(text)
    elif summary:
        print(summary)
    path = getattr(args, "report", None)
    if path:
        from randsvm_dist.cli.outputs import publish

        publish(path, text + "\n", overwrite=getattr(args, "overwrite", False),
                what="--report")


def say(args: argparse.Namespace, line: str) -> None:
    """Print a progress line, to stderr under ``--json`` so stdout stays pure JSON."""
    print(line, file=sys.stderr if getattr(args, "json", False) else sys.stdout)
