"""The draws of the sampling route: how many rows, the first uniform sample (and a pilot's
first working set, for the kinds that have one), and the next working sets (support
vectors plus the drawn rows, fetched from the partitions).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import numpy as np

from randsvm_dist.engine.partitions import PartitionSet, fetch_rows, vstack_rows
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.sampling import stream_id
from randsvm_dist.exact.scan import screening_store
from randsvm_dist.exact.scan.dispatch import merged_scan, run_scan
from randsvm_dist.exact.scan.partition import ProblemRequest, ScanModel
from randsvm_dist.exact.solve_plan import solve_sampled
from randsvm_dist.exact.state import ProblemState, RunConfig, WorkingSet

# Rows within this distance of the margin fill a draw that the violators cannot fill:
# first those inside the margin by at most the violator slack (they carry loss, so the
# certificate's gap, without being violators), then the others (``exact.scan.partition``).
FILL_BAND = 0.5
# The support set has settled when a solve finds at most SV_GROWTH x the previous
# solve's support vectors; draws are then lean (see draw_size).
SV_GROWTH = 1.1
LEAN_FILL = 0.1
# While the support set grows, a draw takes up to DRAW_PER_SV x |SV| violators: at 1e7
# checkerboard rows ~80% of every drawn violator became a support vector, so drawing only
# |SV| of them took one scan of all rows (the dominant cost there) per doubling.
DRAW_PER_SV = 3
# A pilot's first working set is its sample (kept: ``keeps_rows``) and its violators, at
# most PILOT_VIOLATORS x the fewest rows a feasible working set has (then rows from
# inside, uniformly, up to r). The sample's rows inside pin rho and the free support
# vectors: oneclass:100000 from a pilot, its 5,087 violators and 885 rows near the
# boundary left 80k violators after the solve; with 6-12k uniform rows, 230-490.
PILOT_VIOLATORS = 2
PILOT_STREAM = 0x9170


def draw_size(p: ProblemState, r: int, route: str, n_violators: int) -> int:
    """Rows to draw after a solve.

    While the support set is still growing (the last solve found more than SV_GROWTH times
    the support vectors of the one before), fill the working set to r, or add
    min(V, DRAW_PER_SV x |SV|) rows: violators come first in every draw and near-margin rows
    fill what they leave, so data whose optimum has many support vectors gets there in a
    few solves (a few scans, each costing n x |SV| kernel evaluations). Once it has
    settled, draw the violators (at most |SV|), or LEAN_FILL x |SV| rows when they are
    fewer (near-margin rows fill the rest, rows with loss first): the working set is then
    mostly the previous support vectors, which the next solve starts from
    (``solvers.warm_smo.solve``), instead of re-solving r rows of which a few matter. The fill
    does not depend on r: with more support vectors than r (skin_nonskin's weighted rows:
    9.7k against r = 5k) a fill capped at r - |SV| drew no rows at all, so the rows inside
    the margin by less than the violator slack, which held the gap, never joined the
    working set until the slack was lowered, one solve and scan later.
    """
    if route == "direct":
        return 0
    n_sv = p.model.n_support
    if n_sv > SV_GROWTH * p.prev_n_support:
        return max(r - n_sv, min(n_violators, DRAW_PER_SV * n_sv))
    return max(min(n_violators, n_sv), int(LEAN_FILL * n_sv))


def first_draw(client, parts: PartitionSet, r: int, cfg: RunConfig) -> np.ndarray:
    """Iteration 0: a uniform sample of r rows (every row a candidate, smallest keys)."""
    everyone = CSVC(-1)  # with no model, every row violates: an exactly uniform draw
    request = ProblemRequest(everyone, np.empty(0, np.int64), r,
                             stream_id(cfg.random_state, 0), cfg.margin_tol)
    scan = run_scan(client, parts, None, [request])
    return merged_scan(scan.per_part, 0, r)["draw"]


def first_working_sets(client, parts: PartitionSet, problems: list[ProblemState], r: int,
                       cfg: RunConfig) -> list[ProblemState]:
    """Each problem's first working set: a uniform draw plus its seed rows
    (``RunConfig.seed_rows``); when every kind has a pilot (``kinds.ProblemKind.pilot``),
    the draw has the run's sample size (not raised to a feasible working set) and each
    problem's is then the pilot's (``piloted``).

    Args:
        client: distributed.Client; parts: the partitions.
        problems: the problems before their first solve.
        r: rows of the first working set (``route.sample_size_for``).
        cfg: the run's settings (``sample_size``, ``seed_rows``, ``random_state``).

    Returns:
        the problems with their first working sets.
    """
    pilot = all(p.kind.pilot for p in problems)
    draw = first_draw(client, parts, min(cfg.sample_size, r) if pilot else r, cfg)
    seeds = cfg.seed_rows or [np.empty(0, np.int64)] * len(problems)
    problems = with_draws(client, parts, problems,
                          [np.union1d(draw, np.asarray(s, np.int64)) for s in seeds],
                          problems[0].solver.C)
    if not pilot:
        return problems
    return [piloted(client, parts, p, r, cfg, j) if len(p.ws.rows) < p.n_rows else p
            for j, p in enumerate(problems)]


def piloted(client, parts: PartitionSet, p: ProblemState, r: int, cfg: RunConfig,
            j: int = 0) -> ProblemState:
    """p's first working set from a pilot: p's uniform sample (``p.ws``) solved as its own
    problem (``kind.solver_params`` with the sample's size as the problem's), that model
    scaled to the whole problem (x size / sample size: the primal's best scale for a
    representative sample) and scanned over every row; the sample (the pilot's alphas on
    it the next solve's start) and the pilot's violators outside it (at most
    PILOT_VIOLATORS x ``kind.min_working_set``, then rows drawn uniformly from the rest
    up to r) make the working set. The pilot never enters the certificate: the first
    solve is of the working set, as every other.

    Returns:
        p with the pilot as its model and the working set (``WorkingSet.origin`` says how
        it was drawn).
    """
    t0 = time.perf_counter()
    m = float(p.ws.weight.sum()) if parts.weighted else float(len(p.ws.rows))
    own, = solve_sampled(client, [replace(p, size=m)], 0, cfg, parts.weighted)[0]
    pilot, scale = own.model, p.size / m
    t_solve = time.perf_counter() - t0
    model = ScanModel(p.solver.kernel, pilot.X,
                      (scale * pilot.coef)[:, None].astype(np.float32),
                      np.array([scale * pilot.intercept]))
    most = PILOT_VIOLATORS * p.kind.min_working_set(p.n_rows)
    fill = len(p.ws.rows)
    request = ProblemRequest(p.kind, p.ws.rows, most + r,
                             stream_id(cfg.random_state, 0, j, PILOT_STREAM), cfg.margin_tol,
                             np.inf, p.solver.C)
    run = f"pilot-{uuid.uuid4().hex}"
    try:
        scan = run_scan(client, parts, model, [request], run)
    finally:
        client.run(screening_store.drop, run)
    n_viol = sum(part[0].n_violators for part in scan.per_part)
    s = merged_scan(scan.per_part, 0, max(r - fill, min(n_viol, most)))
    p, = with_draws(client, parts, [replace(p, model=pilot)], [s["draw"]], p.solver.C)
    origin = (f"drawn by a pilot: {fill} rows solved as their own problem in {t_solve:.2f} s "
              f"({pilot.n_support} support vectors), scanned in {scan.wall_seconds:.2f} s "
              f"({n_viol} violators)")
    return replace(p, ws=replace(p.ws, origin=origin))


def with_draws(client, parts: PartitionSet, problems: list[ProblemState], draws,
               C: float) -> list[ProblemState]:
    """Each problem's next working set: its support vectors (every row of its last working
    set when its kind ``keeps_rows``) plus its drawn rows (those that are its rows), with
    the alphas a warm start begins from."""
    wanted = [d for d in draws if d is not None]
    needed = np.unique(np.concatenate(wanted)) if wanted else np.empty(0, np.int64)
    rows, X, y, w = fetch_rows(client, parts, needed)
    out = []
    for p, draw in zip(problems, draws):
        if draw is None:
            out.append(p)
            continue
        m = p.model
        kept = p.ws if p.kind.keeps_rows and p.ws.X is not None else \
            WorkingSet(m.rows, m.X, m.t, m.weight)
        alpha = np.zeros(len(kept.rows))
        alpha[np.searchsorted(kept.rows, m.rows)] = p.kind.warm_alphas(m.coef)
        draw = np.setdiff1d(draw, kept.rows)
        pos = np.searchsorted(rows, draw)
        t, mask = p.kind.targets(y[pos])
        if mask is not None:
            pos, draw, t = pos[mask], draw[mask], t[mask]
        ws_rows = np.concatenate([kept.rows, draw])
        order = np.argsort(ws_rows, kind="stable")
        ws = WorkingSet(
            rows=ws_rows[order],
            X=vstack_rows([kept.X, X[pos] if len(draw) else None], parts.is_sparse)[order],
            t=np.concatenate([kept.t, t])[order],
            weight=np.concatenate([kept.weight, w[pos]])[order],
            alpha0=np.concatenate([alpha, np.zeros(len(draw))])[order],
            n_fresh=len(ws_rows) - m.n_support)
        out.append(replace(p, ws=ws))
    return out
