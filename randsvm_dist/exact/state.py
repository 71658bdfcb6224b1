"""The sampling driver's state as values: settings, each problem's working set and model.

Every step of the loop (``exact.driver``) takes a ``ProblemState`` and returns a new one
(``dataclasses.replace``); nothing is changed in place, so a checkpoint is the state itself
and a resumed run starts from exactly the value an uninterrupted run had.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from randsvm_dist.exact.kinds import ProblemKind
from randsvm_dist.solvers.params import SolverParams


def _rows() -> np.ndarray:
    return np.empty(0, np.int64)


def _values() -> np.ndarray:
    return np.empty(0)


@dataclass(frozen=True)
class RunConfig:
    """Driver settings (see the estimators for their meaning).

    ``k`` None: no support bound. ``seed_rows``: per problem, global rows that join the
    first sample (from a streaming model or an earlier fit; see ``seeding``).
    """

    k: int | None
    sample_size: int
    max_iter: int = 50
    violator_tol: float = 0.0
    gap_tol: float = 1e-3
    margin_tol: float = 1e-3
    random_state: int = 0
    seed_rows: list | None = None
    route: str = "auto"         # 'auto', 'sample' or 'direct'


@dataclass(frozen=True)
class WorkingSet:
    """The rows a solve sees.

    Attributes:
        rows: sorted global row indices.
        X: their features (None on the direct route: the rows stay on the workers).
        t: their targets (``kind.targets``).
        weight: their sample weights.
        alpha0: the alphas a warm start begins from (aligned with rows), or empty.
        n_fresh: rows that were not support vectors of the previous model.
        origin: how the rows were drawn when not by the driver's draws (a pilot's, see
            ``draw.piloted``), for the solve's record; empty otherwise.
    """

    rows: np.ndarray = field(default_factory=_rows)
    X: object = None
    t: np.ndarray = field(default_factory=_values)
    weight: np.ndarray = field(default_factory=_values)
    alpha0: np.ndarray = field(default_factory=_values)
    n_fresh: int = 0
    origin: str = ""


@dataclass(frozen=True)
class SupportModel:
    """A problem's current model: f(x) = sum_i coef_i k(x_i, x) + intercept.

    Attributes:
        rows, X, t, weight: the support vectors' global rows, features, targets, weights.
        coef: dual coefficients (C-SVC: y alpha; SVR: alpha - alpha*; one-class: alpha).
        intercept: b (LIBSVM's -rho).
        dual_objective: the solve's dual objective (a lower bound of the optimum); None
            from a oneDAL solve of ``exact.in_process`` until its scan gives it.
        kernel_sums: the solve's ``BinarySolution.kernel_sums`` (the next warm start's
            gradient on these rows), or None.
        row_values: f - b of every row of the data (0 outside the problem), from the
            scan that certified this model on the direct route (``exact.in_process``):
            a re-solve of all rows starts its gradient from them
            (``exact.solving.direct_start``); None: not scanned so.
    """

    rows: np.ndarray = field(default_factory=_rows)
    X: object = None
    t: np.ndarray = field(default_factory=_values)
    weight: np.ndarray = field(default_factory=_values)
    coef: np.ndarray = field(default_factory=_values)
    intercept: float = 0.0
    dual_objective: float | None = -np.inf
    kernel_sums: np.ndarray | None = None
    row_values: np.ndarray | None = None

    @property
    def n_support(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class ProblemState:
    """One problem of the run and where it stands.

    Attributes:
        kind: the problem kind (``exact.kinds``).
        solver: LIBSVM parameters (``tol`` tightened as the run goes).
        n_rows: rows of the data set that belong to the problem.
        size: the sum of their sample weights (n_rows when unweighted; one-class's nu n).
        ws: the working set of the next (or last) solve.
        model: the model of the last solve.
        prev_n_support: support vectors of the solve before the last.
        warm: the last solve started from the previous alphas.
        cascade: part sizes of the last solve's cascade or divide (empty: one solve).
        solve_plan, solve_plan_reason: how the last solve used the cluster, and why
            (``exact.solve_plan``).
        margin_tol: violator slack of this problem's scans.
        relative_gap: the certified relative primal-dual gap after the last scan.
        stop_reason: why the problem stopped (None: it goes on).
    """

    kind: ProblemKind
    solver: SolverParams
    n_rows: int = 0
    size: float = 0.0
    ws: WorkingSet = field(default_factory=WorkingSet)
    model: SupportModel = field(default_factory=SupportModel)
    prev_n_support: int = 0
    warm: bool = False
    cascade: tuple = ()
    solve_plan: str = ""
    solve_plan_reason: str = ""
    margin_tol: float = 1e-3
    relative_gap: float = np.inf
    stop_reason: str | None = None

    @property
    def active(self) -> bool:
        return self.stop_reason is None


@dataclass(frozen=True)
class DriverState:
    """What the driver needs to go on after an iteration: its number, the route, the
    history and every problem. The random streams derive from ``random_state`` and the
    iteration, so nothing else is needed; the screening bounds are not kept (the first scan
    after a resume evaluates every row)."""

    iteration: int
    route: str
    history: list
    problems: list
