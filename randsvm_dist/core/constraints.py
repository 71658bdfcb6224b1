"""Parameter constraints of the estimators (``_parameter_constraints``) and their check.

The same vocabulary as scikit-learn's parameter validation, kept here because that one is
private to scikit-learn: a parameter's entry is a list of constraints (an ``Interval``,
``StrOptions``, a type, ``None``, ``BOOLEAN``), or ``NO_VALIDATION``; a value passes when
it satisfies any one of them. ``check_params`` raises ``ParameterError`` with
scikit-learn's message ("The 'C' parameter of RandSVMClassifier must be a float in the
range (0.0, inf). Got -1.0 instead."). The command line reads the same entries to choose
an option's type and choices (``cli.estimator_options``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from randsvm_dist.exceptions import ParameterError

BOOLEAN = "boolean"  # a bool (or numpy's)
NO_VALIDATION = "no_validation"  # the whole entry: the parameter is not checked here


@dataclass(frozen=True)
class Interval:
    """Numbers of ``type`` (``Integral`` or ``Real``) between ``left`` and ``right``.

    Attributes:
        type: ``numbers.Integral`` or ``numbers.Real`` (which accepts integers too).
        left, right: the bounds; None: unbounded.
        closed: which bounds belong to the interval: 'left', 'right', 'both', 'neither'.
    """

    type: type
    left: float | None
    right: float | None
    closed: str = "both"

    def accepts(self, value) -> bool:
        """Whether ``value`` is a number of the type inside the interval (NaN never)."""
        if not isinstance(value, self.type) or isinstance(value, str):
            return False
        if not isinstance(value, Integral) and math.isnan(value):
            return False
        left = -math.inf if self.left is None else self.left  # unbounded: infinity is
        right = math.inf if self.right is None else self.right  # in only if closed there
        if value < left or (value == left and self.closed in ("right", "neither")):
            return False
        return not (value > right or (value == right and self.closed in ("left", "neither")))

    def __str__(self) -> str:
        kind = "an int" if self.type is Integral else "a float"
        cast = int if self.type is Integral else float
        left = "-inf" if self.left is None else cast(self.left)
        right = "inf" if self.right is None else cast(self.right)
        opening = "[" if self.closed in ("left", "both") else "("
        closing = "]" if self.closed in ("right", "both") else ")"
        return f"{kind} in the range {opening}{left}, {right}{closing}"


@dataclass(frozen=True)
class StrOptions:
    """One of a set of strings (``options``)."""

    options: frozenset

    def __init__(self, options):
        object.__setattr__(self, "options", frozenset(options))

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return f"a str among {{{', '.join(repr(o) for o in sorted(self.options))}}}"


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint == BOOLEAN:
        return isinstance(value, (bool, np.bool_))
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.accepts(value)


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if constraint == BOOLEAN:
        return "an instance of 'bool' or an instance of 'numpy.bool'"
    if isinstance(constraint, type):
        name = {Real: "float", Integral: "int"}.get(constraint, constraint.__qualname__)
        return f"an instance of {name!r}"
    return str(constraint)


def check_params(params: dict, constraints: dict, owner: str) -> None:
    """Check every parameter that has constraints.

    Args:
        params: parameter name -> value (``get_params(deep=False)``).
        constraints: parameter name -> list of constraints, or ``NO_VALIDATION``.
        owner: what the parameters belong to, for the message (a class name).

    Raises:
        ParameterError: the first parameter whose value satisfies none of its constraints.
    """
    for name, value in params.items():
        allowed = constraints.get(name, NO_VALIDATION)
        if allowed == NO_VALIDATION or any(_accepts(c, value) for c in allowed):
            continue
        texts = [_describe(c) for c in allowed]
        expected = texts[0] if len(texts) == 1 else \
            f"{', '.join(texts[:-1])} or {texts[-1]}"
        raise ParameterError(f"The {name!r} parameter of {owner} must be {expected}. "
                             f"Got {value!r} instead.")
