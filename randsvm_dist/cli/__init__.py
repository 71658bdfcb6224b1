"""The ``randsvm-dist`` command line: ``data``, ``train``, ``predict``, ``evaluate``, ...

Layout: one module per command (or command group) in this package, each exposing
``register(subparsers)``, which adds its parser(s) and sets ``func(args) -> int`` (the exit
code). Shared options live in :mod:`.options` (``--json`` always prints JSON to stdout,
``--report FILE`` always writes it to a file, ``--scheduler`` always names a Dask
scheduler); the one Dask client of an invocation is ``args.session.client()``
(:mod:`.session`), started on first use and closed when the command ends.

Adding a command ``foo``:

1. write ``randsvm_dist/cli/foo.py`` with ``register(subparsers)`` and the command function
   (use the helpers in :mod:`.options`; raise a ``RandSVMError`` subclass for user errors:
   it prints ``randsvm-dist: error: ...`` and exits with 2);
2. add ``"foo"`` to :data:`COMMANDS` below (its place there is its place in ``--help``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from randsvm_dist.cli.session import Session
from randsvm_dist.exceptions import RandSVMError
from randsvm_dist.security import make_security

#: the command modules of this package, in ``--help`` order
COMMANDS = (
    "data",
    "train",
    "predict",
    "evaluate",
    "stream",
    "grid",
    "jobs",
    "report",
    "cluster",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="randsvm-dist",
        description="Large-scale SVMs: RandSVM on Dask and one-pass streaming learners.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def _quiet_dask() -> None:
    # Dask's own INFO chatter, also in the worker processes (which inherit the variable)
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    import dask

    dask.config.set({"logging.distributed": "warning"})
    logging.getLogger("distributed").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        the exit code: 0 on success, 2 on a user error (printed to stderr).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("randsvm_dist").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if not args.verbose:
        _quiet_dask()
    args.session = None
    try:
        args.session = Session(getattr(args, "scheduler", None), security=make_security(
            *(getattr(args, k, None) for k in ("tls_ca_file", "tls_cert", "tls_key"))))
        return int(args.func(args) or 0)
    except RandSVMError as e:
        print(f"randsvm-dist: error: {e}", file=sys.stderr)
        return 2
    finally:
        if args.session is not None:
            args.session.close()
        from randsvm_dist.engine.client import close_embedded

        close_embedded()  # the embedded default, if this command started it
