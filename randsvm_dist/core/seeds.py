"""The one place where random seeds are made: resolving ``random_state`` and deriving
independent per-task seeds from it (numpy's SeedSequence).

``random_state=None`` means fresh randomness, as in scikit-learn: it is resolved once, at
the start of a fit, into a concrete seed that the estimator records, so the run can be
repeated. Every random choice is then derived from that seed and integer keys (class,
partition, iteration, ...), never from which worker ran what.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from randsvm_dist.exceptions import ParameterError


def resolve_seed(random_state) -> int:
    """The concrete seed of a fit.

    Args:
        random_state: None (fresh OS entropy), a non-negative integer, or a
            ``numpy.random.RandomState`` / ``Generator`` (one 32-bit draw from it).

    Returns:
        a non-negative int.

    Raises:
        ParameterError: anything else (negative numbers, floats, strings).
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    if isinstance(random_state, bool) or not isinstance(random_state, Integral) \
            or random_state < 0:
        raise ParameterError("random_state must be None, a non-negative integer or a numpy "
                             f"RandomState/Generator; got {random_state!r}")
    return int(random_state)


def derive_seed(seed: int, *keys: int, bits: int = 32) -> int:
    """An independent seed for the stream named by ``keys`` under ``seed``.

    Args:
        seed: a resolved seed (see ``resolve_seed``).
        keys: non-negative integers naming the stream (e.g. class index, partition index).
        bits: 32 or 64.

    Returns:
        an int of ``bits`` bits.
    """
    dtype = np.uint64 if bits == 64 else np.uint32
    return int(np.random.SeedSequence([int(seed), *keys]).generate_state(1, dtype)[0])
