"""The Parquet data layer: Dataset handle, writers, converters and synthetic generators.

Public API::

    from randsvm_dist.data import Dataset, write_arrays, make_arrays, make, convert
"""

from __future__ import annotations

from randsvm_dist.data.convert import convert
from randsvm_dist.data.dataset import Dataset
from randsvm_dist.data.generators import GENERATORS, make, make_arrays
from randsvm_dist.data.writer import write_arrays

__all__ = ["Dataset", "GENERATORS", "convert", "make", "make_arrays", "write_arrays"]
