"""The route of a fit: one solve of all rows ('direct') or sampling ('sample'), the first
sample's size, and the backend a one-solve fit would use; the cost model
(``exact.cost_model``) decides, the driver (``exact.driver``) asks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.exact.cost_model import Coefficients, choose_route, plan_seconds
from randsvm_dist.exact.state import ProblemState, RunConfig
from randsvm_dist.solvers.onedal_auto import AUTO_MIN_DENSE_FEATURES
from randsvm_dist.solvers.onedal_backend import onedal_available, onedal_solves
from randsvm_dist.solvers.params import SolverParams

# The route (one solve of all rows, or sampling) is the cost model's choice
# (``exact.cost_model.choose_route``), asked twice: before the first solve, when the share
# of support vectors is unknown and taken as SV_SHARE_GUESS (with the model's default
# coefficients this sends data sets of up to ~1.5e4 rows of 20 features to one solve on 2
# cores, about where 4 first samples of sampling did before), and after the first sampled
# solve, with the share that solve measured (a9a: 35% of all rows are support vectors;
# epsilon-SVR on Friedman #1 with noise: 91%, where one solve wins at any size).
SV_SHARE_GUESS = 0.1
# A guessed share that sends the rows to one solve is checked by a pilot first, where the
# pilot (the first sample's r rows) is small beside all rows: the first sampled solve
# measures the share, and the route is chosen again with it (a 494k-row set with 0.6%
# support vectors went to one solve of 13-15 s on the guess; sampling took 7 s). The
# pilot's seconds are recorded beside the model's prediction of them, not used to choose:
# a choice by measured time would make the model depend on the machine's load, where
# one random_state must give the same model.
PILOT_ROWS_PER_SAMPLE = 4
# Below this many rows a wrong guess costs less than the pilot's own start (a first solve
# pays its backend's loading: 1.6 s for oneDAL's first solve of 100 rows here).
PILOT_MIN_ROWS = 10_000
PILOT_REASON = "a pilot solve of"
# The first sample of sample_size='auto': 2 x the paper's k, but at most 1/AUTO_SHARE of the
# rows and at least AUTO_FLOOR. The paper's k (~10-12k rows) made every set under ~45k
# rows a direct solve; a smaller first sample pays there because its working sets grow
# with the support set (measured, ijcnn1, 49,990 rows, 2,478 SVs: r = 6,000 19.3 s,
# r = 3,000 35.0 s, one direct solve 66.6 s, same optimum).
AUTO_SHARE = 8
AUTO_FLOOR = 5_000
# In-memory arrays whose duplicates may collapse are built (checked and hashed, ~4 ms a
# MB: 1.0 s for 494k x 118 float32) and the route chosen on their distinct rows when they
# hold at most this many bytes; larger ones are judged by their shape first, where a build
# thrown away for the cluster's route would cost a second or more. skin_nonskin (2 MB):
# 163k rows by shape chose sampling (36 s), its 40k distinct rows one solve here (25.5 s).
SURVEY_MAX_BYTES = 64 << 20



def sample_size_for(problems: list[ProblemState], r: int, n: int) -> int:
    """r raised to the fewest rows a feasible working set of every problem has."""
    need = max(p.kind.min_working_set(p.n_rows) for p in problems)
    return min(n, max(r, int(np.ceil(1.1 * need)) if need > 1 else r))


def auto_sample_size(n_rows: int, k: int) -> int:
    """r for sample_size='auto': min(2 k, max(AUTO_FLOOR, n_rows / AUTO_SHARE)).

    Args:
        n_rows: rows of the data set.
        k: the paper's support-set bound (``exact.bounds.support_bound``).
    """
    return int(min(2 * k, max(AUTO_FLOOR, n_rows // AUTO_SHARE)))


def judged_by_shape(n_bytes: int, may_collapse: bool) -> bool:
    """Whether in-memory arrays of ``n_bytes`` get their route from their shape before any
    copy (``exact.fit``): always, unless duplicates may collapse
    and the arrays are small enough (SURVEY_MAX_BYTES) to count their distinct rows
    first."""
    return not may_collapse or n_bytes > SURVEY_MAX_BYTES


def cold_backend(problems: list[ProblemState], weighted: bool, sparse: bool,
                 n_features: int) -> str:
    """The backend that would solve all rows of ``problems`` (``backend_of`` the first's
    solver parameters)."""
    p = problems[0]
    return backend_of(p.kind.solver_params(p.solver, p.n_rows, p.n_rows), weighted, sparse,
                      n_features)


def backend_of(params: SolverParams, weighted: bool, sparse: bool, n_features: int) -> str:
    """The backend that would solve rows of a problem: 'onedal' when its solver says oneDAL
    ('onedal', or 'auto' on weighted, sparse or at least AUTO_MIN_DENSE_FEATURES-feature
    rows) and oneDAL is installed, else 'libsvm'."""
    if params.backend == "libsvm" or not onedal_solves(params):
        return "libsvm"
    if params.backend == "auto" and not (weighted or sparse
                                         or n_features >= AUTO_MIN_DENSE_FEATURES):
        return "libsvm"
    return "onedal" if onedal_available() else "libsvm"


@dataclass(frozen=True)
class Machine:
    """What the cost model needs of where a fit runs.

    Attributes:
        workers: threads that scan (every worker thread, or the client's cores).
        threads: cores one solve is offered (the fewest of
            ``placement_of_solves.place_solves``).
    """

    workers: int
    threads: int


@dataclass(frozen=True)
class RoutePilot:
    """What the first sampled solve measured, for the route's second choice.

    Attributes:
        sv_share: support vectors over rows (``first_share``).
        seconds: the solve step's wall seconds.
        predicted: the cost model's seconds for that solve (the largest working set).
    """

    sv_share: float
    seconds: float
    predicted: float

    def describe(self) -> str:
        """One line for the route's reason."""
        return (f"pilot solve {self.seconds:.2f} s (predicted {self.predicted:.2f} s), "
                f"{100 * self.sv_share:.2g}% support vectors")


def pilot_of(problems: list[ProblemState], seconds: float, n_features: int,
             machine: Machine, backend: str) -> RoutePilot:
    """The RoutePilot of the first sampled solve of ``problems`` (each holding its working set
    and model), which took ``seconds``."""
    p = max(problems, key=lambda q: len(q.ws.rows))
    predicted = plan_seconds(len(p.ws.rows), p.model.n_support, n_features, 1,
                             machine.threads, Coefficients(), backend)["whole"]
    return RoutePilot(first_share(problems), seconds, predicted)


def pilot_pays(n: int, r: int) -> bool:
    """Whether a guess of one solve of ``n`` rows is checked by a pilot of the first
    sample's ``r`` rows (PILOT_MIN_ROWS, PILOT_ROWS_PER_SAMPLE)."""
    return n >= max(PILOT_MIN_ROWS, PILOT_ROWS_PER_SAMPLE * r)


def first_route(cfg: RunConfig, problems: list[ProblemState], n: int, r: int,
                n_features: int, machine: Machine, backend: str) -> tuple[str, str]:
    """(route, why) before the first solve: ``plan_route`` on the guessed share, except
    that a guess of one solve is checked by a pilot (the first sample, solved and
    measured) where ``pilot_pays``."""
    route, why = plan_route(cfg, problems, n, r, n_features, machine, backend)
    if route == "direct" and cfg.route == "auto" and pilot_pays(n, r):
        return "sample", f"{PILOT_REASON} {r:,} rows first ({why})"
    return route, why


def plan_route(cfg: RunConfig, problems: list[ProblemState], n: int, r: int,
               n_features: int, machine: Machine, backend: str,
               sv_share: float | None = None, in_memory: bool = False,
               pilot: RoutePilot | None = None) -> tuple[str, str]:
    """(route, why): 'direct' (one solve of all rows) or 'sample', by the cost model.

    Args:
        cfg: the run's settings (``cfg.route`` other than 'auto' is obeyed).
        problems: the problems (the largest decides; re-solves are modelled warm when
            every kind has a warm start).
        n: rows of the data set; r: the first sample's rows.
        n_features: features per row (the dense width also for CSR: an upper bound).
        machine: workers and threads of a solve.
        backend: the cold solver ('libsvm' or 'onedal', see ``cold_backend``).
        sv_share: support vectors over rows solved, measured by the first solve; None
            before it (SV_SHARE_GUESS is assumed).
        in_memory: the rows are in the client's memory, where the direct route solves
            them (``exact.in_process``); sampling would place them on the workers first.
        pilot: the first sampled solve's measurements (its share replaces ``sv_share``;
            its seconds and their prediction are named in the reason).

    Returns:
        (route, reason), the reason naming both predicted times.
    """
    if cfg.route != "auto":
        return cfg.route, f"route={cfg.route!r} was asked for"
    if pilot is not None:
        sv_share = pilot.sv_share
    share = SV_SHARE_GUESS if sv_share is None else min(max(sv_share, 1.0 / max(r, 1)), 1.0)
    rows = max([p.n_rows for p in problems] + [1]) if problems else n
    warm = all(p.kind.warm_startable for p in problems)
    route, why = choose_route(min(rows, n), min(r, n), n_features, machine.workers,
                              machine.threads, share, Coefficients(), backend=backend,
                              warm=warm, in_memory=in_memory)
    when = ("before the first solve (support vectors guessed)" if sv_share is None
            else f"after the first solve ({pilot.describe()})" if pilot is not None
            else "after the first solve")
    return route, f"{when}, {why}, {backend}"


def first_share(problems: list[ProblemState]) -> float:
    """The largest share of support vectors a problem's rows are expected to have, from
    its last solve (``kinds.ProblemKind.support_share``)."""
    return max(p.kind.support_share(p.model.n_support, len(p.ws.rows), p.n_rows)
               for p in problems)
