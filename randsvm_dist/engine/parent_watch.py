"""Stop a process when the Python process that started it ends, even if that one was killed
and had no chance to clean up.

Used as a Dask preload by the embedded cluster (:func:`dask_setup`): by its scheduler
(``dask_scheduler --preload .../parent_watch.py``) and by the nannies of its workers
(``dask_worker --preload-nanny``; a nanny closing stops its worker process, busy or not);
and by any program whose child processes must not outlive it (:func:`watch_parent`).
Loaded by path, so it imports nothing of randsvm_dist. The watch is a thread, not a
callback on the server's event loop: a server busy with a flood of tasks runs its loop
late, and its orphaned process must still go. After asking the server to close, the
process exits by itself within ``EXIT_AFTER_S`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable

CHECK_S = 1.0
EXIT_AFTER_S = 10.0
#: the process id of the process that launched the scheduler (set by ``engine.launcher``):
#: that process may be gone before this preload runs, so its own ``getppid`` cannot say
PARENT_PID_ENV = "RANDSVM_DIST_PARENT_PID"


def watch_parent(parent: int, on_gone: Callable[[], None],
                 exit_after: float = EXIT_AFTER_S) -> threading.Thread:
    """Call ``on_gone`` once this process's parent is no longer ``parent`` (it ended and
    this process was re-parented), then exit the process ``exit_after`` seconds later if
    ``on_gone`` has not ended it.

    Args:
        parent: the process id of the parent to outlive not.
        on_gone: the clean stop (runs in the watch thread).
        exit_after: seconds before ``os._exit(0)`` after ``on_gone`` returned.

    Returns:
        the watching daemon thread (started).
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(CHECK_S)
        try:
            on_gone()
        finally:
            time.sleep(exit_after)
            os._exit(0)  # the clean stop did not end the process in time

    thread = threading.Thread(target=watch, name="randsvm-parent-watch", daemon=True)
    thread.start()
    return thread


def dask_setup(server) -> None:
    """Close ``server`` (the scheduler, or a nanny of the worker launcher) once its parent
    process is gone (re-parented)."""
    parent = int(os.environ.get(PARENT_PID_ENV) or os.getppid())
    loop = asyncio.get_running_loop()
    watch_parent(parent, lambda: loop.call_soon_threadsafe(
        lambda: asyncio.ensure_future(server.close())))
