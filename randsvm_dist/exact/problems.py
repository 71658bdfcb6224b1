"""The problems one fit solves, by svm type, and the LIBSVM model their solutions make:
C-SVC (binary, one-vs-one pairs, one-vs-rest), epsilon-SVR and one-class.

A ``ProblemSet`` is what ``exact.fit.fit`` is told to solve: its ``states`` are the
driver's problems (one ``ProblemState`` each, their kind from ``exact.kinds``) built from
the data's totals, and its ``model`` turns their final states into one LIBSVM model.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Protocol

import numpy as np

from randsvm_dist.core.validation import balanced_class_weight, check_weighted_classes
from randsvm_dist.exact.kinds import CSVC, EpsilonSVR, OneClass
from randsvm_dist.exact.state import ProblemState
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.model_files.libsvm_text import LibsvmModel, one_column_model
from randsvm_dist.model_files.ovo_layout import ovo_to_libsvm, ovr_to_libsvm
from randsvm_dist.numerics.kernels import Kernel
from randsvm_dist.solvers.params import SolverParams


class ProblemSet(Protocol):
    """What a fit solves (the estimators' parameters of their svm type).

    Attributes:
        task: how the labels are coded: 'classification', 'regression' or 'one_class'.
        C: the box of the solver parameters (1.0 where the kind has none: one-class).
    """

    task: str
    C: float

    def states(self, totals, classes, solver: SolverParams
               ) -> tuple[list[ProblemState], dict]:
        """The problems' initial states from the data's totals (``engine.row_totals``
        ``RowTotals``), and fitted attributes they decide (e.g. ``class_weight_``).

        Raises:
            ParameterError, SchemaError: the parameters do not fit the data.
        """

    def model(self, states: list[ProblemState], classes, kernel: Kernel
              ) -> tuple[LibsvmModel, np.ndarray]:
        """The LIBSVM model of the final states, and the run's rows of its support vectors
        in file order."""


def _one_column(states: list[ProblemState], kernel: Kernel, svm_type: str
                ) -> tuple[LibsvmModel, np.ndarray]:
    m = states[0].model
    return one_column_model(kernel, m.X, m.coef, m.intercept, svm_type), m.rows


@dataclass(frozen=True)
class EpsilonSVRProblem:
    """epsilon-SVR: one problem of every row."""

    C: float
    epsilon: float
    task: str = "regression"

    def states(self, totals, classes, solver: SolverParams
               ) -> tuple[list[ProblemState], dict]:
        """One ``EpsilonSVR`` problem of all rows (see ``ProblemSet.states``)."""
        n = totals.n_rows
        return [ProblemState(EpsilonSVR(float(self.epsilon)), solver, n_rows=n,
                             size=float(n))], {}

    def model(self, states, classes, kernel) -> tuple[LibsvmModel, np.ndarray]:
        """A one-column epsilon_svr model (see ``ProblemSet.model``)."""
        return _one_column(states, kernel, "epsilon_svr")


@dataclass(frozen=True)
class OneClassProblem:
    """One-class nu-SVM: one problem of every row, its size the rows' total weight."""

    nu: float
    C: float = 1.0
    task: str = "one_class"

    def states(self, totals, classes, solver: SolverParams
               ) -> tuple[list[ProblemState], dict]:
        """One ``OneClass`` problem (see ``ProblemSet.states``).

        Raises:
            ParameterError: every row weighs zero or less.
        """
        n = totals.n_rows
        size = totals.weight_total()
        if size <= 0:
            raise ParameterError("Invalid input - all samples have zero or negative weights.")
        return [ProblemState(OneClass(float(self.nu)), solver, n_rows=n, size=size)], {}

    def model(self, states, classes, kernel) -> tuple[LibsvmModel, np.ndarray]:
        """A one-column one_class model (see ``ProblemSet.model``)."""
        return _one_column(states, kernel, "one_class")


@dataclass(frozen=True)
class CSVCProblems:
    """C-SVC: one problem for two classes, else one per pair ('ovo') or per class
    ('ovr'); each class's box is C x its class weight."""

    C: float
    class_weight: object = None
    multi_class: str = "ovo"
    task: str = "classification"

    def class_weights(self, classes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The weight of each class: 1, 'balanced' (n / (k n_c)), or a dict's.

        Raises:
            ParameterError: a dict naming a label that is not a class, or a weight <= 0.
        """
        cw = self.class_weight
        if cw is None:
            return np.ones(len(classes))
        if cw == "balanced":
            return balanced_class_weight(counts)
        w = np.ones(len(classes))
        for label, weight in cw.items():
            hit = np.flatnonzero(classes == label)
            if not len(hit) and isinstance(label, str):  # a JSON round trip's key "1"
                hit = np.flatnonzero(np.asarray([str(c) for c in classes.tolist()]) == label)
            if not len(hit):
                raise ParameterError(f"class_weight names label {label!r}, not among the "
                                     f"classes {classes.tolist()}")
            if not (isinstance(weight, Real) and weight > 0):
                raise ParameterError(f"class_weight[{label!r}] must be > 0; got {weight!r}")
            w[hit[0]] = float(weight)
        return w

    def states(self, totals, classes, solver: SolverParams
               ) -> tuple[list[ProblemState], dict]:
        """The binary problem, or the pairs or one-vs-rest problems, and ``class_weight_``
        (see ``ProblemSet.states``).

        Raises:
            ParameterError: a bad class weight; SchemaError: a class without a row of
                positive weight.
        """
        positive = totals.positive_class_counts(len(classes))
        if positive is not None:
            check_weighted_classes(positive, classes)
        counts = totals.class_counts(len(classes))
        w = self.class_weights(classes, counts)
        if len(classes) == 2:
            kinds = [CSVC(1, None, float(w[1]), float(w[0]))]
            sizes = [counts.sum()]
        elif self.multi_class == "ovr":
            kinds = [CSVC(c, None, float(w[c]), 1.0) for c in range(len(classes))]
            sizes = [counts.sum()] * len(classes)
        else:
            pairs = [(i, j) for i in range(len(classes)) for j in range(i + 1, len(classes))]
            kinds = [CSVC(i, j, float(w[i]), float(w[j])) for i, j in pairs]
            sizes = [counts[i] + counts[j] for i, j in pairs]
        return ([ProblemState(kind, solver, n_rows=int(n), size=float(n))
                 for kind, n in zip(kinds, sizes)], {"class_weight_": w})

    def model(self, states, classes, kernel) -> tuple[LibsvmModel, np.ndarray]:
        """A c_svc model (binary or one-vs-one pairs) or the one-vs-rest layout (see
        ``ProblemSet.model``)."""
        kinds, models = [s.kind for s in states], [s.model for s in states]
        labels = file_labels(classes)
        if len(classes) == 2:  # LIBSVM's pair (0, 1) is positive towards class 0
            m = models[0]
            return ovo_to_libsvm(kernel, labels, [m.rows], [m.X], [-m.coef], [-m.intercept])
        layout = ovr_to_libsvm if kinds[0].negative is None else ovo_to_libsvm
        return layout(kernel, labels, [m.rows for m in models], [m.X for m in models],
                      [m.coef for m in models], [m.intercept for m in models])


def file_labels(classes) -> list[int]:
    """The labels a LIBSVM file lists: the classes when they are integers, else their
    indices (the metadata keeps the classes)."""
    c = np.asarray(classes)
    if np.issubdtype(c.dtype, np.number) and np.all(np.mod(c, 1) == 0):
        return [int(v) for v in c]
    return list(range(len(c)))
