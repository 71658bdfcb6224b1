"""Targets: how raw labels become the numbers the solvers see, and the checks on
real-valued (regression) targets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.core.validation import class_index
from randsvm_dist.exceptions import SchemaError


@dataclass(frozen=True)
class LabelCoding:
    """How a partition's labels become the numbers the solvers see.

    Attributes:
        classes: sorted classes: labels become their class index (int32). None: labels are
            real-valued targets (float64; regression), or ignored when ``use_labels`` is
            False (one-class training).
        use_labels: False: the labels are not needed (zeros are kept).
    """

    classes: np.ndarray | None = None
    use_labels: bool = True

    def encode(self, y, where: str) -> np.ndarray:
        """The coded labels of raw labels ``y``.

        Raises:
            SchemaError: a label not among the classes, or a target that is missing, not a
                number, or not finite (naming ``where`` and the row).
        """
        y = np.asarray(y)
        if not self.use_labels:
            return np.zeros(len(y), np.float64)
        if self.classes is not None:
            return class_index(y, self.classes, where=where)
        return real_targets(y, where)


def real_targets(y, where: str) -> np.ndarray:
    """y as float64 regression targets.

    Raises:
        SchemaError: a missing, non-numeric or non-finite target (naming ``where`` and row).
    """
    y = np.asarray(y)
    if y.dtype == object or not (np.issubdtype(y.dtype, np.number)
                                 or np.issubdtype(y.dtype, np.bool_)):
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            bad = next(i for i, v in enumerate(y.tolist()) if not _is_number(v))
            raise SchemaError(f"{where}, row {bad}: target {y[bad]!r} is not a number "
                              "(regression needs real-valued targets)") from None
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise SchemaError(f"{where}, row {bad}: target {y[bad]!r} is missing or not finite; "
                          "drop such rows before training")
    return y


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return v is not None
