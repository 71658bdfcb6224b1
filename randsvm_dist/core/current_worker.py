"""The one place that asks which Dask worker runs the calling code."""

from __future__ import annotations


def worker_address() -> str | None:
    """The address of the Dask worker running this code.

    Returns:
        the worker's address, or None outside a worker (the client's process, a plain
        script, distributed not installed).
    """
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None
