"""The on-disk layout of a randsvm-dist Parquet data set: column names and metadata keys.

Both the writer and the reader import these from here (neither imports the other for
them). Layouts:

- dense: one float32 column per feature plus the label column;
- sparse: ``INDICES`` (list<int32>, 0-based feature indices) and ``VALUES``
  (list<float32>) per row, plus the label column.

Each file's schema metadata holds, under ``META_KEY``, a JSON object with the format
``version``, the layout, the feature count, the label column and the partition's classes.
"""

from __future__ import annotations

META_KEY = b"randsvm_dist"
FORMAT_VERSION = 2  # 2: published with a completion manifest, which readers require
LABEL = "label"
INDICES = "indices"
VALUES = "values"
