"""Problem kinds: what differs between the SVMs the sampling driver solves.

The driver (``exact.driver``) is the same for every SVM whose solution is fixed by a small
set of rows; a kind says how the rows of a partition become solver targets, when a row
outside the working set violates the current model, its term of the primal objective over
all rows (for the certificate), how 1/2 |w|^2 follows from a solve's dual objective, and
the LIBSVM parameters of a working set, whether its re-solves may start warm or be cut
into a cascade, whether a pilot draws its first working set, and the share of its rows a
solve's support vectors stand for. ``ProblemKind`` is that contract; ``CSVC``,
``EpsilonSVR`` and ``OneClass`` fulfil it.

Every kind writes the model as f(x) = sum_i coef_i k(x_i, x) + b (b = -rho in LIBSVM's
terms) and measures a row by its *slack* s(f(x), t): the row adds C_i max(0, s) to the
primal objective, violates when s > tol, and lies in the fill band (drawn after every
violator) when s > -band. Each s below moves by at most |f_new(x) - f_old(x)|, so the
scan's screening (``exact.scan.partition``), which bounds how far f moved, holds for every kind.

Certificate (weak duality): the working set's solution, extended by zero coefficients, is
a feasible dual point of the whole problem, so its dual objective D bounds the optimum
from below; the primal P over all rows, computed by the scan, bounds it from above. With
1/2 |w|^2 = 1/2 coef' K coef over the support vectors:

- C-SVC (box C_i): D = sum alpha - 1/2 |w|^2, so 1/2 |w|^2 = sum |coef| - D;
  P = 1/2 |w|^2 + sum_i C_i max(0, 1 - y_i f(x_i)).
- epsilon-SVR (coef = alpha - alpha*, box C_i): D = -1/2 |w|^2 - eps sum |coef| + sum y coef
  (LIBSVM's solution has alpha_i alpha*_i = 0), so 1/2 |w|^2 = -D - eps sum |coef| + y' coef;
  P = 1/2 |w|^2 + sum_i C_i max(0, |y_i - f(x_i)| - eps).
- one-class (Schölkopf's nu-SVM in LIBSVM's scaling: box 1, sum alpha = nu n over all n
  rows): the primal is min 1/2 |w|^2 - nu n rho + sum_i max(0, rho - w.phi(x_i)) (its
  Lagrangian dual is LIBSVM's problem; stationarity in rho gives sum alpha = nu n), so
  with f = w.phi - rho: P = 1/2 |w|^2 + nu n b + sum_i max(0, -f(x_i)) and D = -1/2 |w|^2.
  A working set of m rows (all other alphas zero) is feasible only when m >= nu n; its
  LIBSVM problem then takes nu_ws = nu n / m, so that sum alpha = nu_ws m = nu n and its
  solution is the whole problem's optimum restricted to the working set. Violator: f < -tol.
  A pilot (the first sample solved with its own nu, its model scaled by n / m: the
  primal's best multiple of it) only chooses the first working set's rows; the
  certificate's D is always a working set's, as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from randsvm_dist.solvers.params import SolverParams


@runtime_checkable
class ProblemKind(Protocol):
    """What the driver, the solves and the scans ask of a problem kind.

    Attributes:
        svm_type: LIBSVM's -s of the kind's solves (0 C-SVC, 2 one-class, 3 epsilon-SVR).
        name: the kind's name in the history and in checkpoints.
        label: how the history names the problem.
        error_slack: a row whose slack exceeds this counts as an error (``n_errors``).
        warm_startable: a re-solve may start from the previous alphas
            (``solvers.warm_smo.solve`` solves the duals of all three kinds).
        warm_fresh_scale: a re-solve starts warm while at most this many times
            ``solving.WARM_MAX_FRESH_SHARE`` of its working set is fresh rows.
        cascadable: a working set may be cut into parts solved apart (not one-class: each
            part would need nu n rows).
        pilot: the first sample is solved as its own problem of its rows (a pilot), and
            the scan of that model picks the first working set (``draw.first_working_sets``).
        keeps_rows: a working set keeps every row of the last one, not only its support
            vectors (``draw.with_draws``).
    """

    svm_type: ClassVar[int]
    name: ClassVar[str]
    error_slack: ClassVar[float]
    warm_startable: ClassVar[bool]
    warm_fresh_scale: ClassVar[float]
    cascadable: ClassVar[bool]
    pilot: ClassVar[bool]
    keeps_rows: ClassVar[bool]

    @property
    def label(self) -> str: ...

    def targets(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(solver targets of every row, mask of the problem's rows or None: all)."""

    def slack(self, f: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Each row's slack s(f(x), t): positive where the row carries loss."""

    def row_box(self, C: float, t: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Each row's box constraint (upper bound of its alpha)."""

    def half_wkw(self, coef: np.ndarray, sv_t: np.ndarray, dual_objective: float) -> float:
        """1/2 |w|^2 of a solve, from its coefficients and dual objective."""

    def primal_constant(self, intercept: float, n_rows: int) -> float:
        """The primal's term that is not a sum over rows."""

    def min_working_set(self, n_rows: int) -> int:
        """The fewest rows a feasible working set has."""

    def solver_params(self, params: SolverParams, n_ws: int, n_rows: int) -> SolverParams:
        """The solver parameters of a working set of n_ws of the problem's n_rows rows."""

    def warm_alphas(self, coef: np.ndarray) -> np.ndarray:
        """The warm solver's starting point from a solve's dual coefficients."""

    def support_share(self, n_support: int, n_ws: int, n_rows: int) -> float:
        """The share of the problem's n_rows rows expected to be support vectors, from a
        solve of n_ws rows that found n_support (``route.first_share``)."""

    def objective_floor(self, coef: np.ndarray, sv_X, kernel) -> float:
        """The least scale the certificate's relative gap is measured against, besides
        |P| and |D| (``certificate.certify``): 0 where |P| or |D| always has the size of
        the objective's terms."""


@dataclass(frozen=True)
class CSVC:
    """C-SVC for class ``positive`` (+1) against ``negative`` (-1), or against every other
    class when ``negative`` is None (one-vs-rest). Class weights multiply C per side."""

    positive: int
    negative: int | None = None
    weight_pos: float = 1.0
    weight_neg: float = 1.0

    svm_type = 0
    name = "c_svc"
    error_slack = 1.0   # y f < 0: misclassified
    warm_startable = True
    warm_fresh_scale = 1.0
    cascadable = True
    pilot = False
    keeps_rows = False

    @property
    def label(self) -> str:
        """How the history names this problem."""
        if self.negative is None:
            return f"class {self.positive}"
        return f"{self.positive} vs {self.negative}"

    def targets(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(targets in {-1, +1} of every row, mask of the problem's rows or None: all)."""
        t = np.where(y == self.positive, 1.0, -1.0)
        if self.negative is None:
            return t, None
        return t, (y == self.positive) | (y == self.negative)

    def slack(self, f: np.ndarray, t: np.ndarray) -> np.ndarray:
        """1 - t f: positive inside the margin."""
        return 1.0 - t * f

    def row_box(self, C: float, t: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Each row's box: C x class weight x sample weight."""
        return C * np.where(t > 0, self.weight_pos, self.weight_neg) * weight

    def half_wkw(self, coef: np.ndarray, sv_t: np.ndarray, dual_objective: float) -> float:
        """1/2 |w|^2 from the solve's dual objective."""
        return float(np.abs(coef).sum() - dual_objective)

    def primal_constant(self, intercept: float, n_rows: int) -> float:
        """The primal's term that is not a sum over rows (none for C-SVC)."""
        return 0.0

    def min_working_set(self, n_rows: int) -> int:
        """The fewest rows a feasible working set has."""
        return 1

    def solver_params(self, params: SolverParams, n_ws: int, n_rows: int) -> SolverParams:
        """LIBSVM parameters for a working set of n_ws of the problem's n_rows rows."""
        return replace(params, svm_type=0, weight_pos=self.weight_pos,
                       weight_neg=self.weight_neg)

    def warm_alphas(self, coef: np.ndarray) -> np.ndarray:
        """The alphas: |y alpha| of LIBSVM's coefficients."""
        return np.abs(coef)

    def support_share(self, n_support: int, n_ws: int, n_rows: int) -> float:
        """That of the working set (a uniform sample's, the first time)."""
        return n_support / max(n_ws, 1)

    def objective_floor(self, coef: np.ndarray, sv_X, kernel) -> float:
        """0: |P| and |D| measure this kind's objective."""
        return 0.0


@dataclass(frozen=True)
class FoldCSVC(CSVC):
    """``CSVC`` of the same classes on the rows outside one cross-validation fold: the
    rows' labels are coded ``class + n_classes x fold`` (``estimators.calibration``), so
    the fold fits of Platt scaling (five, or one hold-out) are problems of one run,
    sharing its scans.
    """

    fold: int = 0
    n_classes: int = 2

    @property
    def label(self) -> str:
        """How the history names this problem."""
        return f"{CSVC.label.fget(self)}, without fold {self.fold}"

    def targets(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(targets in {-1, +1} of every row, mask of the rows of the problem's classes
        outside its fold)."""
        y = np.asarray(y).astype(np.int64)
        c = y % self.n_classes
        t = np.where(c == self.positive, 1.0, -1.0)
        mask = y // self.n_classes != self.fold
        if self.negative is not None:
            mask &= (c == self.positive) | (c == self.negative)
        return t, mask


@dataclass(frozen=True)
class EpsilonSVR:
    """epsilon-SVR: rows outside the epsilon-tube around f carry loss."""

    epsilon: float = 0.1

    svm_type = 3
    name = "epsilon_svr"
    label = "regression"
    error_slack = math.inf   # no misclassification in regression
    warm_startable = True
    # 2.4 x 25%: up to 60% fresh. Friedman #1 3e5 (C=10, epsilon=2): from the previous
    # alphas, re-solves of 22.6k rows with 48-53% fresh took 73-83k SMO iterations, as
    # many as those of 16-17k rows with 9-25% fresh (66-99k); 92% fresh, 140k. Most of
    # its support vectors sit at their bound and stay there, and most fresh rows (the
    # fill) end inside the tube.
    warm_fresh_scale = 2.4
    cascadable = True
    pilot = False
    keeps_rows = False

    def targets(self, y: np.ndarray) -> tuple[np.ndarray, None]:
        """(real targets, None: every row belongs to the problem)."""
        return np.asarray(y, np.float64), None

    def slack(self, f: np.ndarray, t: np.ndarray) -> np.ndarray:
        """|t - f| - epsilon: positive outside the tube."""
        return np.abs(t - f) - self.epsilon

    def row_box(self, C: float, t: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Each row's box: C x sample weight."""
        return C * weight

    def half_wkw(self, coef: np.ndarray, sv_t: np.ndarray, dual_objective: float) -> float:
        """1/2 |w|^2 = -D - eps sum |coef| + t' coef."""
        return float(-dual_objective - self.epsilon * np.abs(coef).sum()
                     + np.dot(sv_t, coef))

    def primal_constant(self, intercept: float, n_rows: int) -> float:
        """No term outside the sum over rows."""
        return 0.0

    def min_working_set(self, n_rows: int) -> int:
        """The fewest rows a feasible working set has."""
        return 1

    def solver_params(self, params: SolverParams, n_ws: int, n_rows: int) -> SolverParams:
        """LIBSVM's -s 3 with this epsilon (-p)."""
        return replace(params, svm_type=3, epsilon=self.epsilon)

    def warm_alphas(self, coef: np.ndarray) -> np.ndarray:
        """The signed coefficients alpha - alpha* (the warm solver splits them)."""
        return np.asarray(coef, np.float64)

    def support_share(self, n_support: int, n_ws: int, n_rows: int) -> float:
        """That of the working set (a uniform sample's, the first time)."""
        return n_support / max(n_ws, 1)

    def objective_floor(self, coef: np.ndarray, sv_X, kernel) -> float:
        """0: |P| and |D| measure this kind's objective."""
        return 0.0


@dataclass(frozen=True)
class OneClass:
    """Schölkopf's one-class nu-SVM (LIBSVM -s 2): rows with f(x) < 0 are outliers."""

    nu: float = 0.5

    svm_type = 2
    name = "one_class"
    label = "one-class"
    error_slack = 0.0   # f < 0: predicted outlier
    warm_startable = True
    # 4 x 25%: any share. The start fills what the previous alphas lack of nu n on the
    # rows of smallest (K alpha)_i (``solvers.warm_smo.duals.fill_to_total``), where the optimum
    # puts its bounded alphas, so fresh rows cost little (oneclass:100000, nu 0.05: the
    # pilot's alphas on 770 of 7.9-18.4k rows, 94-96% fresh, took 0.2-0.7 s to the
    # optimum, one-thread, against LIBSVM's 1.4-3.6 s; 3e5: 2.2-3.0 s on 28-39k rows).
    warm_fresh_scale = 4.0
    cascadable = False   # each part of a cascade would need nu n rows
    # A uniform sample of m rows, solved as a working set (nu n / m), puts nu n of its rows
    # at their bound: 40% of a 12,500-row first sample of 1e5 rows at nu 0.05, where the
    # optimum bounds the 5% that lie farthest out. That model's violators were 35% of
    # all rows, and its next three working sets (4 cold solves, gap > 1 until the last)
    # took turns at fixing the bounded rows and rho. Solved as its own problem (nu), the
    # sample's model is the whole one's shape at n / m its scale: its violators are
    # about the optimum's bounded rows (``draw.first_working_sets``).
    pilot = True
    # The rows inside the boundary that a solve leaves at alpha 0 pin rho and the free
    # support vectors; a working set of the support vectors and the violators only let
    # them drift (oneclass:1000000: from a gap of 8.3e-3 and 11.6k violators to 2.7e-2
    # and 388k violators; oneclass:100000 without the pilot: from 4.8k violators to 76k).
    keeps_rows = True

    def targets(self, y: np.ndarray) -> tuple[np.ndarray, None]:
        """(ones: every row is a training row of the one class, None: all rows)."""
        return np.ones(len(y)), None

    def slack(self, f: np.ndarray, t: np.ndarray) -> np.ndarray:
        """-f: positive outside the boundary."""
        return -np.asarray(f, np.float64)

    def row_box(self, C: float, t: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Each row's box: its sample weight (LIBSVM's one-class box is 1; C is unused)."""
        return np.asarray(weight, np.float64)

    def half_wkw(self, coef: np.ndarray, sv_t: np.ndarray, dual_objective: float) -> float:
        """1/2 |w|^2 = -D."""
        return float(-dual_objective)

    def primal_constant(self, intercept: float, n_rows: int) -> float:
        """-nu n rho = nu n b."""
        return float(self.nu * n_rows * intercept)

    def min_working_set(self, n_rows: int) -> int:
        """ceil(nu n): sum alpha = nu n with alpha <= 1 needs that many rows."""
        return int(math.ceil(self.nu * n_rows - 1e-9))

    def solver_params(self, params: SolverParams, n_ws: int, n_rows: int) -> SolverParams:
        """LIBSVM's -s 2 with nu_ws = nu n / n_ws (see the module docstring)."""
        nu_ws = min(1.0, self.nu * n_rows / max(n_ws, 1))
        return replace(params, svm_type=2, nu=nu_ws)

    def warm_alphas(self, coef: np.ndarray) -> np.ndarray:
        """The alphas (non-negative); the warm solver rescales them to the working set's
        nu (``solvers.warm_smo.duals``)."""
        return np.asarray(coef, np.float64)

    def support_share(self, n_support: int, n_ws: int, n_rows: int) -> float:
        """n_support / n_rows: every working set's solve has at least nu n support vectors
        (sum alpha = nu n, alpha <= 1), whatever its size."""
        return n_support / max(n_rows, 1)

    def objective_floor(self, coef: np.ndarray, sv_X, kernel) -> float:
        """1/2 sum_i alpha_i^2 k(x_i, x_i): 1/2 |w|^2 without the support vectors' cross
        terms. Where the images cancel (a linear or polynomial kernel on data centred at
        the origin: ``make_classification``'s) the optimum is w ~ 0 and rho ~ 0, P and D
        are ~0, and a gap relative to them is ~1 however small it is: it is measured
        against this size of the terms instead. With non-negative kernel values (RBF)
        alpha' K alpha >= this, so |D| >= it and the gap is as before."""
        from randsvm_dist.numerics.kernels import kernel_diagonal

        if sv_X is None or not len(coef):
            return 0.0
        a = np.asarray(coef, np.float64)
        return float(0.5 * np.dot(a * a, kernel_diagonal(sv_X, kernel)))


KINDS: dict[str, type[ProblemKind]] = {k.name: k for k in (CSVC, EpsilonSVR, OneClass)}

