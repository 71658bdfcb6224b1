"""The grid search's space and scoring: the guide's default grids, grid.py's exponent ranges,
the fine grid around the best point, and how held-out rows score a point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.exceptions import ParameterError

GUIDE_LOG2C = (-5.0, 15.0, 2.0)
GUIDE_LOG2GAMMA = (3.0, -15.0, -2.0)
GUIDE_FINE_STEP = 0.25
ONE_CLASS_LOG2NU = (-7.0, -1.0, 1.0)   # nu = 1/128 .. 1/2 (nu <= 1)


# -- scoring -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scoring:
    """How held-out rows score a grid point.

    A fold's *value* is what the fold CSV keeps: the number of correct predictions
    (accuracy), the sum of squared errors (rmse), or the fold's own score (r2, auc). The
    search's score pools the folds as scikit-learn's ``GridSearchCV`` does for r2 and auc
    (the mean of the folds' scores) and over all held-out rows for accuracy and rmse.
    """

    name: str
    greater_is_better: bool = True

    def fold_value(self, y: np.ndarray, out: np.ndarray, normal=None) -> float:
        """The fold's value from its held-out targets/labels ``y`` and the model's outputs
        (predictions; one-class: decision values) ``out``; ``normal``: the coded normal
        label (auc)."""
        y, out = np.asarray(y), np.asarray(out)
        if self.name == "accuracy":
            return float((out == y).sum())
        if self.name == "rmse":
            return float(((y - out) ** 2).sum())
        if self.name == "r2":
            ss = float(((y - y.mean()) ** 2).sum()) if len(y) else 0.0
            return 1.0 - float(((y - out) ** 2).sum()) / ss if ss > 0 else float("nan")
        from sklearn.metrics import roc_auc_score

        pos = y == normal
        return float(roc_auc_score(pos, out)) if 0 < pos.sum() < len(y) else float("nan")

    def fold_score(self, value: float, n: int) -> float:
        """One fold's score from its value."""
        if self.name == "accuracy":
            return value / max(n, 1)
        if self.name == "rmse":
            return float(np.sqrt(value / max(n, 1)))
        return value

    def pooled(self, values: list[float], ns: list[int]) -> float:
        """The search's score of a point from its folds."""
        if self.name == "accuracy":
            return sum(values) / max(sum(ns), 1)
        if self.name == "rmse":
            return float(np.sqrt(sum(values) / max(sum(ns), 1)))
        return float(np.mean(values))


SCORINGS = {"accuracy": Scoring("accuracy"), "rmse": Scoring("rmse", False),
            "r2": Scoring("r2"), "auc": Scoring("auc")}
TASK_SCORINGS = {"classification": ("accuracy",), "regression": ("rmse", "r2"),
                 "one_class": ("auc",)}


# -- grids ---------------------------------------------------------------------------------
def exponent_range(begin: float, end: float, step: float) -> list[float]:
    """grid.py's ``begin,end,step`` of base-2 exponents (both ends included when hit).

    Raises:
        ParameterError: step 0 or pointing away from ``end``.
    """
    if step == 0 or (end - begin) * step < 0:
        raise ParameterError(f"exponent range {begin},{end},{step}: the step must be non-zero "
                             "and go from begin towards end")
    n = int(np.floor((end - begin) / step + 1e-9)) + 1
    return [round(begin + i * step, 10) for i in range(n)]


def parse_exponent_range(text: str) -> tuple[float, float, float]:
    """``"2^-5..2^15"`` or ``"2^-5..2^15:2"`` (or ``"-5,15,2"``, grid.py's form) -> (b, e, s).

    The default step is 2 towards ``end`` (the guide's coarse grid).

    Raises:
        ParameterError: anything else.
    """
    t = text.replace(" ", "")
    try:
        if ".." in t:
            span, _, step = t.partition(":")
            a, b = span.split("..")
            if not (a.startswith("2^") and b.startswith("2^")):
                raise ValueError
            begin, end = float(a[2:]), float(b[2:])
            s = float(step) if step else 2.0
        else:
            begin, end, s = (float(v) for v in t.split(","))
    except ValueError:
        raise ParameterError(f"grid range {text!r}: expected '2^A..2^B' or '2^A..2^B:STEP' "
                             "(exponents of 2) or grid.py's 'A,B,STEP'") from None
    s = abs(s) if end >= begin else -abs(s)
    exponent_range(begin, end, s)
    return begin, end, s


def fine_grid(best: tuple[float, float], coarse_step: tuple[float, float],
              fine_step: float) -> tuple[list[float], list[float]]:
    """The guide's refinement: best +- one coarse step, at ``fine_step`` (exponents)."""
    out = []
    for centre, step in zip(best, coarse_step, strict=True):
        span = abs(step)
        out.append(exponent_range(centre - span, centre + span, fine_step))
    return out[0], out[1]
