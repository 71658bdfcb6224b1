"""Layout-independent uniform sampling by per-row random keys (bottom-k sampling).

Every row gets a key u = hash(stream, global_row_index) in [0, 1). The m rows of a set
with the smallest keys are a uniform random m-subset of it (the keys are i.i.d. uniform).
Each partition returns its own m smallest-key candidates; the driver keeps the m smallest
of their union, an exactly uniform draw from the union whatever the partition sizes.
Because keys depend only on the global row index and the stream, the draw is identical
whatever the number of partitions or workers.
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.core.seeds import derive_seed

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def stream_id(seed: int, *keys: int) -> int:
    """A 64-bit stream identifier derived from a resolved seed and integer keys."""
    return derive_seed(seed, *keys, bits=64)


def row_keys(stream: int, start: int, n: int) -> np.ndarray:
    """Uniform keys in [0, 1) of global rows start..start+n-1 (splitmix64 of the row id)."""
    return keys_of(stream, np.arange(start, start + n, dtype=np.uint64))


def keys_of(stream: int, rows: np.ndarray) -> np.ndarray:
    """Uniform keys in [0, 1) of the given global rows (same values as ``row_keys``)."""
    with np.errstate(over="ignore"):
        z = (np.asarray(rows, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
        z ^= np.uint64(stream)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def smallest_keys(keys: np.ndarray, m: int) -> np.ndarray:
    """Positions of the m smallest keys, in ascending key order."""
    if m <= 0 or len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    if m < len(keys):
        pos = np.argpartition(keys, m - 1)[:m]
    else:
        pos = np.arange(len(keys))
    return pos[np.argsort(keys[pos], kind="stable")]
