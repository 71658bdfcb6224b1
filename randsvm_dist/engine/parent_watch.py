"""Dask preload for the embedded scheduler: stop when the Python process that started it
ends, even if it was killed and had no chance to close the cluster.

Loaded by path (``dask_scheduler --preload .../parent_watch.py``), so it imports nothing
of randsvm_dist. The watch is a thread, not a callback on the scheduler's event loop: a
scheduler busy with a flood of tasks runs its loop late, and its orphaned process must still
go. After asking the scheduler to close, the process exits by itself within
``EXIT_AFTER_S`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

CHECK_S = 1.0
EXIT_AFTER_S = 10.0
#: the process id of the process that launched the scheduler (set by ``engine.launcher``):
#: that process may be gone before this preload runs, so its own ``getppid`` cannot say
PARENT_PID_ENV = "RANDSVM_DIST_PARENT_PID"


def dask_setup(server) -> None:
    """Close ``server`` (the scheduler) once its parent process is gone (re-parented)."""
    parent = int(os.environ.get(PARENT_PID_ENV) or os.getppid())
    loop = asyncio.get_running_loop()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(CHECK_S)
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(server.close()))
        time.sleep(EXIT_AFTER_S)
        os._exit(0)  # the close did not end the process in time (a loop busy with tasks)

    threading.Thread(target=watch, name="randsvm-parent-watch", daemon=True).start()
