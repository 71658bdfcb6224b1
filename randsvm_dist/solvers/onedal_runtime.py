"""oneDAL's process-wide state around a fit (``onedal_backend``): whether it is installed,
its thread pool, shared by the oneDAL solves running in this process, and the capture of
sklearnex's log records of the calling thread (the fit is checked by them).

oneDAL runs on TBB, which ignores OMP_NUM_THREADS and threadpoolctl, and
sklearnex's ``n_jobs`` is ignored off the main thread (a Dask task's thread). A solve sets
oneDAL's process-wide thread count (``daal4py.daalinit``) to the sum of the ``n_threads``
of the oneDAL solves running in this process (one solve: its own ``n_threads``) and puts
back the previous count when the last one ends (a sum, not a maximum: TBB has one pool
per process, and concurrent solves share it).
"""

from __future__ import annotations

import importlib.util
import logging
import threading


def onedal_available() -> bool:
    """Whether scikit-learn-intelex (oneDAL) is installed, without importing it.

    Returns:
        True when the ``sklearnex`` package can be imported.
    """
    return importlib.util.find_spec("sklearnex") is not None


class ThreadBudget:
    """oneDAL's process-wide thread count while oneDAL solves run in this process: the sum
    of their n_threads (TBB has one pool per process), the previous count put back when
    the last one ends."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active: dict[int, int] = {}
        self._saved: int | None = None
        self._next = 0

    def enter(self, n_threads: int) -> int:
        """A solve of ``n_threads`` starts: the pool grows by them; returns its key."""
        import daal4py

        with self._lock:
            if not self._active:
                self._saved = int(daal4py.num_threads())
            key, self._next = self._next, self._next + 1
            self._active[key] = max(1, int(n_threads))
            self._apply(daal4py)
            return key

    def leave(self, key: int) -> None:
        """The solve ``key`` ended: the pool shrinks by its threads (the count from before
        the first solve is put back after the last)."""
        import daal4py

        with self._lock:
            self._active.pop(key, None)
            if self._active:
                self._apply(daal4py)
            elif self._saved is not None:
                daal4py.daalinit(self._saved)
                self._saved = None

    def _apply(self, daal4py) -> None:
        total = sum(self._active.values())
        if total != daal4py.num_threads():
            daal4py.daalinit(total)


THREADS = ThreadBudget()


class LogCapture(logging.Filter):
    """Collects the ``sklearnex`` log records of the calling thread (and keeps them off
    the console: sklearnex attaches its own stream handler)."""

    def __init__(self):
        super().__init__()
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            return True
        self.messages.append(record.getMessage())
        return False


_LOG_LOCK = threading.Lock()
_LOG_USERS = [0, None]  # active captures, the sklearnex logger's level before the first


def capture_start(logger: logging.Logger) -> LogCapture:
    """Start collecting ``logger``'s records of the calling thread (kept off the console);
    returns the collector, whose ``messages`` fill as the fit logs."""
    f = LogCapture()
    with _LOG_LOCK:
        if _LOG_USERS[0] == 0:
            _LOG_USERS[1] = logger.level
        _LOG_USERS[0] += 1
        # the per-fit records are INFO (the fallback's causes DEBUG): below WARNING they
        # are dropped before any filter sees them
        logger.setLevel(logging.DEBUG)
        logger.addFilter(f)
    return f


def capture_stop(logger: logging.Logger, f: LogCapture) -> None:
    """Stop the collector ``f`` (the logger's level put back after the last one)."""
    with _LOG_LOCK:
        logger.removeFilter(f)
        _LOG_USERS[0] -= 1
        if _LOG_USERS[0] == 0:
            logger.setLevel(_LOG_USERS[1])
