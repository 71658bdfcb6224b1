"""RandSVM-1 on Dask (Krishnan, Bhattacharyya, Hariharan), one or several binary problems.

    S = random subset of size r; SV = solve(S)
    V = violators of SV among the rows outside the working set
    while |V| > 0 and |SV| < k:
        R = random subset of V of size r - |SV|; SV = solve(SV u R); recompute V

Solves run on the workers (one task per binary problem, LIBSVM single-threaded); scans run
on the workers (one task per partition, all problems at once); the driver holds only the
working sets, the support vectors and per-partition statistics. The draw from V is exactly
uniform and identical for any partition layout (see ``sampling``). Practice adds: a cap
on iterations, a stop when the violator fraction is at or below ``violator_tol``, and per
iteration the dual objective (which cannot decrease: the previous solution stays feasible
for the next working set) and the primal objective on all rows. Their difference bounds
how far the model's primal objective is from the optimum of the whole data set (weak
duality), so ``gap_tol`` stops at a certified relative gap.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..cluster import put
from ..kernels import decision_values
from ..solvers.libsvm_adapter import BinarySolution, SolverParams, solve_binary
from .partitions import take_rows
from .sampling import stream_id
from .scan import ProblemRequest, ScanModel, ScanOutput, scan_partition

log = logging.getLogger("randsvm_dist")


@dataclass
class Problem:
    """One binary problem of the run: class ``positive`` against the rest."""

    positive: int
    solver: SolverParams
    ws_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ws_X: object = None
    ws_y: np.ndarray = field(default_factory=lambda: np.empty(0))
    sv_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    sv_X: object = None
    dual_coef: np.ndarray = field(default_factory=lambda: np.empty(0))
    intercept: float = 0.0
    dual_objective: float = -np.inf
    stop_reason: str | None = None


@dataclass
class PartitionSet:
    """The data set as partitions held by the workers (futures of ``Partition``)."""

    futures: list
    offsets: np.ndarray   # global index of each partition's first row
    sizes: np.ndarray
    n_features: int
    is_sparse: bool

    @property
    def n_rows(self) -> int:
        return int(self.sizes.sum())


@dataclass
class RunConfig:
    """Driver settings (see RandSVMClassifier for their meaning)."""

    k: int
    sample_size: int
    max_iter: int = 50
    violator_tol: float = 0.0
    gap_tol: float = 0.0
    margin_tol: float = 1e-3
    random_state: int | None = None


def _vstack(blocks, sparse: bool):
    blocks = [b for b in blocks if b is not None and b.shape[0]]
    if not blocks:
        return None
    return sp.vstack(blocks, format="csr") if sparse else np.vstack(blocks)


def fetch_rows(client, parts: PartitionSet, rows: np.ndarray):
    """Rows (X, class index) at sorted global indices, fetched from the workers."""
    rows = np.unique(rows)
    owner = np.searchsorted(parts.offsets, rows, side="right") - 1
    futures = []
    for p in np.unique(owner):
        futures.append(client.submit(take_rows, parts.futures[p], rows[owner == p],
                                     pure=False, retries=2))
    got = client.gather(futures)
    X = _vstack([g[0] for g in got], parts.is_sparse)
    cls = np.concatenate([g[1] for g in got]) if got else np.empty(0, np.int32)
    return rows, X, cls


def _scan_model(problems: list[Problem], kernel, sparse: bool, n_features: int) -> ScanModel:
    all_rows = np.concatenate([p.sv_rows for p in problems])
    union, first = np.unique(all_rows, return_index=True)
    blocks = [p.sv_X for p in problems]
    stacked = _vstack(blocks, sparse)
    sv = stacked[first] if stacked is not None else None
    coef = np.zeros((len(union), len(problems)), dtype=np.float32)
    for j, p in enumerate(problems):
        coef[np.searchsorted(union, p.sv_rows), j] = p.dual_coef
    intercept = np.array([p.intercept for p in problems])
    if sv is None:  # no support vectors anywhere: constant models
        sv = (sp.csr_matrix((0, n_features), dtype=np.float32) if sparse
              else np.zeros((0, n_features), np.float32))
    return ScanModel(kernel, sv, coef, intercept)


def _scan(client, parts: PartitionSet, model: ScanModel | None,
          requests: list[ProblemRequest | None], prev_lower=None, shift_w=None,
          shift_b=None):
    """Scan every partition; returns (per-partition ProblemScan lists, lower-bound futures
    kept on the workers for the next scan's screening, rows evaluated)."""
    model_future = put(client, model) if model else _NO_MODEL
    outs = [client.submit(scan_partition, f, model_future, requests,
                          None if prev_lower is None else prev_lower[i], shift_w, shift_b,
                          pure=False, retries=2)
            for i, f in enumerate(parts.futures)]
    answers = client.gather([client.submit(_answers, o, pure=False, retries=2) for o in outs])
    lower = [client.submit(_lower, o, pure=False, retries=2) for o in outs]
    return [a[0] for a in answers], lower, sum(a[1] for a in answers)


def _answers(out: ScanOutput):
    return out.problems, out.n_evaluated


def _lower(out: ScanOutput) -> np.ndarray:
    return out.lower


_NO_MODEL = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))


@dataclass
class _Snapshot:
    rows: np.ndarray
    X: object
    coef: np.ndarray
    intercept: float


def _snapshot(p: Problem) -> _Snapshot:
    return _Snapshot(p.sv_rows, p.sv_X, p.dual_coef, p.intercept)


def model_shift(prev: _Snapshot, cur: _Snapshot, kernel, sparse: bool,
                max_pairs: float) -> tuple[float, float]:
    """(||w_cur - w_prev|| in feature space, |b_cur - b_prev|); inf when the union of the
    two SV sets is too large for max_pairs kernel evaluations."""
    db = abs(cur.intercept - prev.intercept)
    rows, first = np.unique(np.concatenate([prev.rows, cur.rows]), return_index=True)
    if len(rows) ** 2 > max_pairs:
        return np.inf, db
    X = _vstack([prev.X, cur.X], sparse)
    if X is None:
        return 0.0, db
    XU = X[first]
    dc = np.zeros(len(rows))
    dc[np.searchsorted(rows, cur.rows)] += cur.coef
    dc[np.searchsorted(rows, prev.rows)] -= prev.coef
    q = float(dc @ decision_values(XU, XU, dc, 0.0, kernel))
    # float32 kernel values: pad the norm so the bound stays safe
    return np.sqrt(max(q, 0.0)) * (1 + 1e-3) + 1e-4, db


def _merge_scans(per_part, p: int, n_draw: int):
    scans = [s[p] for s in per_part]
    keys = np.concatenate([s.keys for s in scans])
    rows = np.concatenate([s.rows for s in scans])
    pick = np.argsort(keys, kind="stable")[:n_draw]
    return {
        "n_violators": sum(s.n_violators for s in scans),
        "n_errors": sum(s.n_errors for s in scans),
        "hinge_pos": sum(s.hinge_pos for s in scans),
        "hinge_neg": sum(s.hinge_neg for s in scans),
        "min_margin": min(s.min_margin for s in scans),
        "draw": np.sort(rows[pick]),
    }


def _set_working_sets(client, parts, problems, draws, classes_rows=None):
    needed = np.unique(np.concatenate([d for d in draws if d is not None] or [np.empty(0)]))
    rows, X, cls = fetch_rows(client, parts, needed.astype(np.int64))
    for p, draw in zip(problems, draws):
        if draw is None:
            continue
        pos = np.searchsorted(rows, draw)
        new_X = X[pos] if len(draw) else None
        new_y = np.where(cls[pos] == p.positive, 1.0, -1.0)
        ws_rows = np.concatenate([p.sv_rows, draw])
        order = np.argsort(ws_rows, kind="stable")
        p.ws_rows = ws_rows[order]
        ws_X = _vstack([p.sv_X, new_X], parts.is_sparse)
        p.ws_X = ws_X[order]
        sv_y = np.sign(p.dual_coef) if len(p.dual_coef) else np.empty(0)
        p.ws_y = np.concatenate([sv_y, new_y])[order]


def _solve(client, problems: list[Problem]):
    active = [p for p in problems if p.stop_reason is None]
    t0 = time.perf_counter()
    futures = [client.submit(solve_binary, p.ws_X, p.ws_y, p.solver, pure=False, retries=2)
               for p in active]
    for p, sol in zip(active, client.gather(futures)):
        sol: BinarySolution
        p.sv_rows = p.ws_rows[sol.support]
        p.sv_X = p.ws_X[sol.support]
        p.dual_coef = sol.dual_coef
        p.intercept = sol.intercept
        p.dual_objective = sol.dual_objective
    return time.perf_counter() - t0


def run_randsvm(client, parts: PartitionSet, problems: list[Problem], cfg: RunConfig,
                progress=None) -> list[dict]:
    """Run RandSVM-1 for every problem until each stops; returns the history.

    Args:
        client: distributed.Client.
        parts: the partitions on the workers.
        problems: binary problems (updated in place with their final models).
        cfg: RunConfig.
        progress: optional callable(record) called once per iteration and problem.

    Returns:
        list of per-iteration, per-problem records: iteration, problem, sample_size,
        n_support, n_violators, violator_fraction, n_errors, min_margin, dual_objective,
        primal_objective, relative_gap, solve_seconds, scan_seconds, rows_evaluated (rows
        whose decision values the scan computed; the rest were screened exactly), seconds
        (since the start), stop_reason.
    """
    n = parts.n_rows
    r = min(cfg.sample_size, n)
    kernel = problems[0].solver.kernel
    history: list[dict] = []
    t0 = time.perf_counter()
    # Iteration 0: the same uniform sample of r rows for every problem.
    first = [ProblemRequest(-1, np.empty(0, np.int64), r, stream_id(cfg.random_state, 0),
                            cfg.margin_tol)]
    per_part, _, _ = _scan(client, parts, None, first)
    draw = _merge_scans(per_part, 0, r)["draw"]
    _set_working_sets(client, parts, problems, [draw] * len(problems))
    it = 0
    lower, scanned = None, None
    while True:
        it += 1
        solve_seconds = _solve(client, problems)
        t_scan = time.perf_counter()
        model = _scan_model(problems, kernel, parts.is_sparse, parts.n_features)
        shift_w = shift_b = None
        if scanned is not None:
            shift_w = np.full(len(problems), np.inf)
            shift_b = np.zeros(len(problems))
            for j, p in enumerate(problems):
                if p.stop_reason is None:
                    shift_w[j], shift_b[j] = model_shift(
                        scanned[j], _snapshot(p), kernel, parts.is_sparse,
                        0.25 * n * max(len(p.sv_rows), 1))
        requests = []
        for j, p in enumerate(problems):
            if p.stop_reason is not None:
                requests.append(None)
                continue
            requests.append(ProblemRequest(p.positive, p.ws_rows, max(r - len(p.sv_rows), 0),
                                           stream_id(cfg.random_state, it, j), cfg.margin_tol))
        per_part, lower, n_evaluated = _scan(client, parts, model, requests, lower,
                                             shift_w, shift_b)
        scanned = [_snapshot(p) for p in problems]
        scan_seconds = time.perf_counter() - t_scan
        draws: list[np.ndarray | None] = []
        for j, p in enumerate(problems):
            if requests[j] is None:
                draws.append(None)
                continue
            s = _merge_scans(per_part, j, requests[j].n_draw)
            sol = p.solver
            half_wKw = np.abs(p.dual_coef).sum() - p.dual_objective
            primal = half_wKw + sol.C * (sol.weight_pos * s["hinge_pos"]
                                         + sol.weight_neg * s["hinge_neg"])
            if s["n_violators"] == 0:
                p.stop_reason = "optimal"
            elif len(p.sv_rows) >= cfg.k:
                p.stop_reason = "k_reached"
            elif s["n_violators"] <= cfg.violator_tol * n:
                p.stop_reason = "violator_tol"
            elif primal - p.dual_objective <= cfg.gap_tol * abs(primal):
                p.stop_reason = "gap_tol"
            elif requests[j].n_draw == 0:
                p.stop_reason = "sample_full"
            elif it >= cfg.max_iter:
                p.stop_reason = "max_iter"
            record = {
                "iteration": it, "problem": j, "sample_size": len(p.ws_rows),
                "n_support": len(p.sv_rows), "n_violators": s["n_violators"],
                "violator_fraction": s["n_violators"] / n, "n_errors": s["n_errors"],
                "min_margin": s["min_margin"], "dual_objective": p.dual_objective,
                "primal_objective": float(primal),
                "relative_gap": float((primal - p.dual_objective) / max(abs(primal), 1e-300)),
                "solve_seconds": solve_seconds, "scan_seconds": scan_seconds,
                "rows_evaluated": n_evaluated,
                "seconds": time.perf_counter() - t0,
                "stop_reason": p.stop_reason,
            }
            history.append(record)
            if progress is not None:
                progress(record)
            draws.append(s["draw"] if p.stop_reason is None else None)
        if all(p.stop_reason is not None for p in problems):
            return history
        _set_working_sets(client, parts, problems, draws)
