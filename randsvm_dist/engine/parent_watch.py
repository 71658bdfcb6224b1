"""Dask preload for the embedded scheduler: stop when the Python process that started it
ends, even if it was killed and had no chance to close the cluster.

Loaded by path (``dask_scheduler --preload .../_parent_watch.py``), so it imports nothing
of randsvm_dist.
"""

from __future__ import annotations

import asyncio
import os

from tornado.ioloop import PeriodicCallback

CHECK_MS = 1000


def dask_setup(server) -> None:
    """Close ``server`` (the scheduler) once its parent process is gone (re-parented)."""
    parent = os.getppid()

    def check() -> None:
        if os.getppid() != parent:
            watch.stop()
            asyncio.ensure_future(server.close())

    watch = PeriodicCallback(check, CHECK_MS)
    watch.start()
