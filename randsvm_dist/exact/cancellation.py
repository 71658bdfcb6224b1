"""Cancelling a fit between the driver's steps.

The driver calls ``check(cancelled, step)`` before every draw, solve and scan, with the
check its caller gave (``run_randsvm(cancelled=)``). A caller that runs an estimator's fit
(e.g. a submitted job) sets the check for everything it runs with ``cancel_when``; the
estimators read it with ``cancel_check`` and hand it to the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from randsvm_dist.exceptions import FitCancelled

Check = Callable[[], bool]

_CHECK: ContextVar[Check | None] = ContextVar("randsvm_dist_cancel_check", default=None)


@contextmanager
def cancel_when(cancelled: Check) -> Iterator[None]:
    """Within the block, fits stop with FitCancelled at the first step after
    ``cancelled()`` returns True (the check is called a few times per iteration)."""
    token = _CHECK.set(cancelled)
    try:
        yield
    finally:
        _CHECK.reset(token)


def cancel_check() -> Check | None:
    """The check set by the innermost ``cancel_when`` of this context, or None."""
    return _CHECK.get()


def check(cancelled: Check | None, step: str) -> None:
    """Raise FitCancelled if ``cancelled`` (None: never) says so.

    Raises:
        FitCancelled: naming the step that was not started.
    """
    if cancelled is not None and cancelled():
        raise FitCancelled(f"the fit was cancelled before {step}")
