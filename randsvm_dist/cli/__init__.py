"""The ``randsvm-dist`` command line: ``data``, ``train``, ``predict``, ``evaluate``, ...

Layout: one module per command (or command group) in this package, each exposing
``register(subparsers)``, which adds its parser(s) and sets ``func(args) -> int`` (the exit
code). Shared options live in :mod:`.options` (``--json`` always prints JSON to stdout,
``--report FILE`` always writes it to a file, ``--scheduler`` always names a Dask
scheduler); the one Dask client of an invocation is ``args.session.client()``
(:mod:`.session`), started on first use and closed when the command ends.

Adding a command ``foo``:

1. write ``randsvm_dist/cli/foo.py`` with ``register(subparsers)`` and the command function
   (use the helpers in :mod:`.options`; claim every output with ``args.outputs`` and write
   files with :func:`.outputs.publish` (:mod:`.outputs`); raise a ``RandSVMError`` subclass
   for user errors: it prints ``randsvm-dist: error: ...`` and exits with 2);
2. add ``"foo"`` to :data:`COMMANDS` below (its place there is its place in ``--help``);
3. import dask, numba, scikit-learn and the estimators inside the command function, never
   at module level: ``--help`` and argument errors must stay fast (``benchmarks/
   bench_startup.py`` measures them).

Errors: a user error (``RandSVMError``, a missing or unreadable file) is one line on
stderr and exit code 2; anything else is a bug: one line naming it and exit code 1, with the
traceback only under ``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading

from randsvm_dist.exceptions import RandSVMError

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
    "compile",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="randsvm-dist",
        description="Large-scale SVMs: RandSVM on Dask and one-pass streaming learners.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of an unexpected error")
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


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C, so locks and the embedded cluster go too."""


def _terminated(signum, frame) -> None:
    raise Terminated()


def _os_error(e: OSError) -> str:
    """One line for an OSError: what failed on which path."""
    what = e.strerror or str(e) or type(e).__name__
    return f"{e.filename}: {what}" if e.filename else what


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        the exit code: 0 on success, 2 on a user error, 1 on an unexpected error (each
        printed as one line on stderr; ``--debug`` adds the traceback), 130 on Ctrl-C, 143
        on SIGTERM (the command's locks and embedded cluster released either way); some
        commands define more (``jobs status``: 1 for a failed job).
    """
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    from randsvm_dist.cli.outputs import Outputs

    args.session = None
    args.outputs = Outputs()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if in_main else None
    logs_before = (logging.root.manager.disable, logging.raiseExceptions)
    stopped = None  # the exit code of an interrupt or SIGTERM
    try:
        _outputs_free(args)
        args.session = _session(args)
        return int(args.func(args) or 0)
    except (Terminated, KeyboardInterrupt) as e:
        stopped = 143 if isinstance(e, Terminated) else 130
        _quiet_from_now(in_main)  # one line however many interrupts follow
        print("randsvm-dist: terminated (SIGTERM)" if stopped == 143
              else "randsvm-dist: interrupted", file=sys.stderr)
        return stopped
    except Exception as e:  # noqa: BLE001 - a bug: one line, the traceback with --debug
        if args.debug:
            raise
        line, code = _error_line(e)
        if _lost_scheduler(e) is not None:
            # the client's reconnect attempts (and their tracebacks) echo this one line
            logging.disable(logging.CRITICAL)
        print(line, file=sys.stderr)
        return code
    finally:
        try:
            if in_main:
                signal.signal(signal.SIGTERM, previous)
            _release(args)
        except (Terminated, KeyboardInterrupt):  # interrupted again while releasing
            if stopped is None:
                stopped = 130
                _quiet_from_now(in_main)
                print("randsvm-dist: interrupted", file=sys.stderr)
        if stopped is not None and argv is None:  # the console script: no shutdown noise
            _exit_now(stopped)
        if argv is not None:  # called in a process that goes on: its logging as it was
            logging.disable(logs_before[0])
            logging.raiseExceptions = logs_before[1]


def _quiet_from_now(in_main: bool) -> None:
    """After an interrupt: further Ctrl-C (SIGINT) and SIGTERM are ignored while the
    command releases its locks and cluster, and the logs of Dask's threads (cancelled
    tasks, closed comms) are silenced, so the interrupt stays one line."""
    if in_main:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.disable(logging.CRITICAL)
    logging.raiseExceptions = False


def _exit_now(code: int) -> None:
    """End the console script's process with ``code`` once everything is released,
    without the interpreter's shutdown (where Dask's threads, cancelled under it, would
    print tracebacks and "lost sys.stderr")."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _outputs_free(args: argparse.Namespace) -> None:
    """Refuse at once, before the command's imports and checks, an output path another
    live ``randsvm-dist`` is writing (its lock: ``data.publish.check_not_locked``); the
    command claims its outputs later as before.

    Raises:
        OutputBusyError: such an output.
    """
    from randsvm_dist.data.publish import check_not_locked

    names = ["dst", "out", "report"]
    if args.command in ("train", "stream"):
        names.append("model")
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            check_not_locked(value)


def _configure_logging(verbose: bool) -> None:
    """Warnings and up on stderr; randsvm_dist's INFO (DEBUG when ``verbose``), Dask's
    chatter held to warnings unless ``verbose``."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("randsvm_dist").setLevel(logging.DEBUG if verbose else logging.INFO)
    if not verbose:
        _quiet_dask()


def _session(args: argparse.Namespace):
    """The command's Dask session (see :mod:`.session`), from its ``--scheduler`` and TLS
    options when it has them.

    Raises:
        ParameterError: only some of the TLS options are given, or a file does not exist.
    """
    from randsvm_dist.cli.session import Session
    from randsvm_dist.engine.tls import make_security

    return Session(getattr(args, "scheduler", None), security=make_security(
        *(getattr(args, k, None) for k in ("tls_ca_file", "tls_cert", "tls_key"))))


def _lost_scheduler(e: Exception) -> Exception | None:
    """The error to report when ``e`` means the Dask scheduler was lost, else None."""
    if "distributed" not in sys.modules:
        return None
    from randsvm_dist.engine.client import LOST_SCHEDULER, lost_cluster

    return lost_cluster(e) or (e if str(e).startswith(LOST_SCHEDULER) else None)


def _error_line(e: Exception) -> tuple[str, int]:
    """The stderr line and exit code of an error that ended a command: 2 for a user error
    (``RandSVMError``; an ``OSError`` on a file the user named: missing, unreadable,
    read-only), 1 for anything else (a bug)."""
    lost = _lost_scheduler(e)
    if lost is not None:  # a lost scheduler is the cluster's error, not a bug
        return f"randsvm-dist: error: {lost}", 2
    if isinstance(e, RandSVMError):
        return f"randsvm-dist: error: {e}", 2
    if isinstance(e, OSError):
        return f"randsvm-dist: error: {_os_error(e)}", 2
    return (f"randsvm-dist: internal error: {type(e).__name__}: {str(e)[:300]} (run again "
            "with --debug for the traceback, and please report it)", 1)


def _release(args: argparse.Namespace) -> None:
    """Release what the command held: its claimed outputs, its Dask session and the
    embedded default cluster if this command started it."""
    args.outputs.release()
    if args.session is not None:
        args.session.close()
    if "randsvm_dist.engine.embedded" in sys.modules:
        from randsvm_dist.engine.embedded import close_embedded

        close_embedded()
