"""What a fit was given, prepared once before any routing: a path or URL opened as its
``Dataset`` (with the caller's dataset options), and whether the rows are in the caller's
memory, in Dask collections or in Parquet files. Every route of a fit reads this object
instead of asking the same questions of the raw input again."""

from __future__ import annotations

from dataclasses import dataclass

from randsvm_dist.engine.dask_collections import is_dask_collection
from randsvm_dist.engine.inputs import open_dataset


@dataclass(frozen=True)
class FitInput:
    """A fit's input, opened.

    Attributes:
        data: the ``Dataset`` when one (or its path/URL) was given, else X as given.
        y, sample_weight: as given (None with a Dataset: its files hold them).
        dataset: the ``Dataset``, or None for arrays and Dask collections.
        on_dask: X or y is a Dask collection.
    """

    data: object
    y: object
    sample_weight: object
    dataset: object | None
    on_dask: bool

    @property
    def in_memory(self) -> bool:
        """The rows are arrays in this process (neither a Dataset nor Dask collections)."""
        return self.dataset is None and not self.on_dask

    @property
    def seed_dataset(self):
        """The Dataset a streaming seed may read its rows from: the fit's own, unless the
        caller passed labels or weights apart from it (None)."""
        if self.y is None and self.sample_weight is None:
            return self.dataset
        return None


def prepare_fit_input(data, y=None, sample_weight=None,
                      dataset_kwargs: dict | None = None) -> FitInput:
    """Open what a fit was given, once.

    Args:
        data: a ``Dataset``, a path/URL of a Parquet data set, arrays, or Dask collections.
        y, sample_weight: labels and weights for arrays and Dask collections.
        dataset_kwargs: options of ``Dataset.open`` for a path/URL.

    Returns:
        the FitInput.

    Raises:
        ParameterError: dataset options with something that is not a path/URL.
        FileNotFoundError, DataFormatError: a path that holds no readable data set.
    """
    dataset = open_dataset(data, **(dataset_kwargs or {}))
    if dataset is not None:
        return FitInput(dataset, y, sample_weight, dataset, False)
    return FitInput(data, y, sample_weight, None,
                    is_dask_collection(data) or is_dask_collection(y))
