"""The certificate of a model and the stop rules: certify, decide, tighten.

After every scan each problem's model gets a certificate from weak duality (primal over all
rows from the scan's loss sums, dual from the solve); ``decide`` stops the problem or says
what to tighten (LIBSVM's tol, or the violator slack) so the next iteration closes the gap.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

from randsvm_dist.exact.state import ProblemState, RunConfig

# LIBSVM's tol is never tightened below this (its -e; 1e-3 is its default).
MIN_TOL = 1e-7
# Tighten tol when the working set's own gap is more than this share of gap_tol.
WS_GAP_SHARE = 0.25
# A tightened tol aims the working set's gap at this share of gap_tol (docs/decisions.md).
TIGHTEN_TARGET = 0.35
# At least and at most these factors in one tightening of tol.
MIN_TIGHTEN = 2.0
MAX_TIGHTEN = 1000.0
# The first oneDAL solves of a fit of several problems in the client's process stop at
# this share of gap_tol (``opening_tol``; why: docs/decisions.md).
OPENING_TOL_SHARE = 0.1


@dataclass(frozen=True)
class Certificate:
    """Weak duality over all rows: P (primal over all rows), D (the working set's dual),
    their relative gap, and the working set's own share of it (LIBSVM's tolerance)."""

    primal: float
    dual: float
    relative_gap: float
    ws_relative_gap: float


def certify(p: ProblemState, scan: dict) -> Certificate:
    """The certificate of p's current model from a scan's loss sums (see ``exact.kinds``).

    P - D splits into the working set's own gap, left by LIBSVM's stopping tolerance, and
    the loss of rows outside it. For C-SVC with f = w.phi + b and sum_i y_i a_i = 0,
    |w|^2 = sum_i a_i y_i f(x_i), so over the working set P_ws - D = sum_i [a_i (y_i f_i - 1)
    + C_i max(0, 1 - y_i f_i)], a sum of terms each at most C_i x (LIBSVM's -e) at its stop.

    The gap is relative to max(|P|, |D|), and never to less than the kind's
    ``objective_floor`` (one-class: 1/2 sum alpha_i^2 k(x_i, x_i)), so a degenerate
    problem whose optimum is ~0 (P and D ~0) is not reported at a relative gap of ~1.
    """
    m = p.model
    base = p.kind.half_wkw(m.coef, m.t, m.dual_objective) + p.kind.primal_constant(
        m.intercept, p.size)
    primal, primal_ws = base + scan["loss"], base + scan["loss_ws"]
    floor = p.kind.objective_floor(m.coef, m.X, p.solver.kernel)
    scale = max(abs(primal), abs(m.dual_objective), floor, 1e-300)
    return Certificate(float(primal), float(m.dual_objective),
                       float(max(primal - m.dual_objective, 0.0) / scale),
                       float(max(primal_ws - m.dual_objective, 0.0) / scale))


def tightened(p: ProblemState, ws_gap: float = 0.0, gap_tol: float = 0.0
              ) -> ProblemState | None:
    """p with LIBSVM's tol divided by what the working set's own gap ``ws_gap`` needs to
    come down to TIGHTEN_TARGET x ``gap_tol`` (that gap shrinks at least in proportion to
    tol), by MIN_TIGHTEN to MAX_TIGHTEN; by 10 when either is unknown (0). One re-solve
    closes the gap, at the loosest tol that does: a tighter one costs the re-solve more
    iterations (skin_nonskin with duplicates collapsed into weights: from 1e-3 to ~1.6e-5).

    Returns:
        the tightened state, or None if tol is already at MIN_TOL.
    """
    if p.solver.tol <= MIN_TOL:
        return None
    factor = 10.0
    if gap_tol > 0 and ws_gap > 0:
        factor = min(MAX_TIGHTEN, max(MIN_TIGHTEN, ws_gap / (TIGHTEN_TARGET * gap_tol)))
    return replace(p, solver=dataclasses.replace(p.solver,
                                                 tol=max(MIN_TOL, p.solver.tol / factor)))


def opening_tol(p: ProblemState, gap_tol: float) -> ProblemState:
    """p with its solver's tol at most OPENING_TOL_SHARE x ``gap_tol`` (unchanged when
    ``gap_tol`` is 0: no certificate to aim at), for the first solve of a fit of several
    problems (``exact.in_process``; why: OPENING_TOL_SHARE)."""
    if gap_tol <= 0:
        return p
    tol = min(p.solver.tol, max(MIN_TOL, OPENING_TOL_SHARE * gap_tol))
    return replace(p, solver=dataclasses.replace(p.solver, tol=tol))


def decide(p: ProblemState, cert: Certificate, scan: dict, it: int, cfg: RunConfig,
           route: str, n_rows: int) -> ProblemState:
    """p after the scan: its gap, and its stop reason or what to tighten to go on.

    Stops: ``gap_tol`` (certified), ``optimal`` (no violators and nothing left to tighten),
    ``k_reached``, ``violator_tol``, ``max_iter``. With no violators yet no certificate, what
    keeps the gap open is tightened: LIBSVM's tol when the working set's own gap dominates,
    else the violator slack (10x, down to MIN_TOL), so the next scan draws the rows within
    it.
    """
    p = replace(p, relative_gap=cert.relative_gap)
    certified = cfg.gap_tol > 0 and cert.relative_gap <= cfg.gap_tol
    solver_limited = cfg.gap_tol > 0 and cert.ws_relative_gap > WS_GAP_SHARE * cfg.gap_tol
    n_viol = scan["n_violators"]
    if certified:
        return replace(p, stop_reason="optimal" if n_viol == 0 else "gap_tol")
    if n_viol == 0:
        loosened = relaxed(p, cfg.gap_tol, solver_limited, route, cert.ws_relative_gap)
        return loosened if loosened is not None else replace(p, stop_reason="optimal")
    if cfg.k is not None and p.model.n_support >= cfg.k:
        return replace(p, stop_reason="k_reached")
    if cfg.violator_tol > 0 and n_viol <= cfg.violator_tol * n_rows:
        return replace(p, stop_reason="violator_tol")
    if it >= cfg.max_iter:
        return replace(p, stop_reason="max_iter")
    if solver_limited:
        return tightened(p, cert.ws_relative_gap, cfg.gap_tol) or p
    return p


def relaxed(p: ProblemState, gap_tol: float, solver_limited: bool, route: str,
            ws_gap: float) -> ProblemState | None:
    """What to tighten when a scan finds no violator yet the gap is above ``gap_tol``.

    Returns:
        p with a tighter LIBSVM tol (``solver_limited``: the working set's own gap
        dominates), else with the violator slack divided by 10 (down to MIN_TOL; the
        sampled route only), or None when nothing is left to tighten (or ``gap_tol`` is 0).
    """
    if gap_tol <= 0:
        return None
    if solver_limited:
        return tightened(p, ws_gap, gap_tol)
    if route == "direct" or p.margin_tol <= MIN_TOL:
        return None
    return replace(p, margin_tol=max(MIN_TOL, p.margin_tol / 10))
