"""The Parquet data layer: Dataset handle, writers, converters and synthetic generators.

Public API::

    from randsvm_dist.data import Dataset, write_arrays, make_arrays, make, convert
"""

from __future__ import annotations

_WHERE = {"convert": "convert", "Dataset": "dataset", "GENERATORS": "generators",
          "make": "generators", "make_arrays": "generators", "write_arrays": "writer"}


def __getattr__(name: str):
    # imported on first use: ``randsvm-dist --help`` reads no Parquet library
    if name in _WHERE:
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Dataset", "GENERATORS", "convert", "make", "make_arrays", "write_arrays"]
