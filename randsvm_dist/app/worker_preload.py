"""Warm-up of the embedded default's worker processes (``dask worker --preload``).

A fresh worker spends seconds importing the estimators, scikit-learn and numba (and loading
numba's cached machine code) when the first task arrives. The embedded default's workers
preload this module, which does those imports in a background thread as soon as the
worker starts, while the command line is still loading its model and connecting: a first
``evaluate`` then waits for none of it. Another thread compiles (or loads from numba's
cache) the exact path's kernels at the same time (``app.warmup``), so a first fit after
install compiles them while the cluster starts. Nothing here changes what a task computes.
"""

from __future__ import annotations

import threading


def _import_estimators() -> None:
    try:
        import randsvm_dist.distributed.predict  # noqa: F401
        import randsvm_dist.estimators  # noqa: F401
        import randsvm_dist.streaming  # noqa: F401
    except Exception:  # noqa: BLE001 - a warm-up only: the task itself reports errors
        return


def _warm_kernels() -> None:
    try:
        from randsvm_dist.app.warmup import warm
    except Exception:  # noqa: BLE001 - a warm-up only: the task itself reports errors
        return
    warm()


def dask_setup(worker) -> None:
    """Called by ``distributed`` when the worker starts: start the imports and the kernels'
    warm-up (each in a thread of its own: the kernels' parts compile in processes of their
    own from the start), do not wait."""
    for target in (_warm_kernels, _import_estimators):
        threading.Thread(target=target, name=f"randsvm{target.__name__}", daemon=True).start()
