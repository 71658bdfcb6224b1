"""The ``randsvm-dist`` command line: ``data``, ``train``, ``predict``, ``evaluate``, ...

Each command group lives in its own module exposing ``register(subparsers)``; a registered
parser sets ``func(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from .exceptions import RandSVMError

COMMAND_MODULES = (
    "randsvm_dist.data.commands",
    "randsvm_dist.commands",
    "randsvm_dist.stream_commands",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="randsvm-dist",
        description="Large-scale SVMs: RandSVM on Dask and one-pass streaming learners.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 on a user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("randsvm_dist").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if not args.verbose:  # Dask's own INFO chatter (also in the worker processes)
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
        import dask

        dask.config.set({"logging.distributed": "warning"})
        logging.getLogger("distributed").setLevel(logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except RandSVMError as e:
        print(f"randsvm-dist: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
