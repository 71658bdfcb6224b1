"""Progress of long fits in Python: the same per-iteration line the command line prints.

The estimators log one line per iteration to the ``randsvm_dist`` logger at INFO (the
command line shows it). In Python that logger has no handler by default, so a script stays
quiet; in an interactive session (the ``python`` prompt, ``python -i``, IPython) importing
``randsvm_dist`` installs a handler at INFO on stderr, and in a Jupyter notebook a tqdm bar
whose description is the latest iteration's line. ``RANDSVM_DIST_PROGRESS=0`` turns this
off, ``=1`` turns it on everywhere; :func:`enable` / :func:`disable` do the same in code.
"""

from __future__ import annotations

import logging
import os
import sys

LOGGER = "randsvm_dist"
_HANDLER_NAME = "randsvm-dist-progress"


def _interactive() -> bool:
    if hasattr(sys, "ps1") or sys.flags.interactive:
        return True
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return bool(get and get() is not None)


def _notebook() -> bool:
    return "ipykernel" in sys.modules


class _TqdmHandler(logging.Handler):
    """One tqdm bar per fit in a notebook: one step per iteration line, the line itself as
    the bar's description."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.bar = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm.auto import tqdm

            line = record.getMessage()
            if self.bar is None or not line.lstrip().startswith("iter"):
                if self.bar is not None:
                    self.bar.close()
                self.bar = tqdm(desc="randsvm-dist", unit="iter", leave=True)
                if not line.lstrip().startswith("iter"):
                    tqdm.write(line)
                    return
            self.bar.set_description_str(line[:120], refresh=False)
            self.bar.update(1)
        except Exception:  # noqa: BLE001 - progress must never break a fit
            self.handleError(record)


def enable(level: int = logging.INFO) -> logging.Handler:
    """Show the ``randsvm_dist`` log (per-iteration lines) from now on: a tqdm bar in a
    notebook, lines on stderr elsewhere. Idempotent.

    Returns:
        the handler installed.
    """
    logger = logging.getLogger(LOGGER)
    for h in logger.handlers:
        if h.get_name() == _HANDLER_NAME:
            return h
    handler: logging.Handler
    if _notebook():
        handler = _TqdmHandler()
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
    handler.set_name(_HANDLER_NAME)
    handler.setLevel(level)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    return handler


def disable() -> None:
    """Remove what :func:`enable` installed."""
    logger = logging.getLogger(LOGGER)
    for h in list(logger.handlers):
        if h.get_name() == _HANDLER_NAME:
            logger.removeHandler(h)


def auto() -> None:
    """On import: :func:`enable` in interactive sessions (see the module docstring)."""
    flag = os.environ.get("RANDSVM_DIST_PROGRESS", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return
    if flag in ("1", "true", "yes", "on") or _interactive():
        enable()


def progress_bar(total: int, desc: str, enabled: bool, unit: str = "rows"):
    """A tqdm bar of ``total`` units (hidden unless ``enabled``) for the data commands."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=not enabled)
