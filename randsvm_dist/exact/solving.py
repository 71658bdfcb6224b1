"""Where and how the LIBSVM solves of an iteration run on the workers.

The driver alternates solves and scans, so while a solve runs the other cores would idle.
Three ways to keep them busy, all leaving the result exact (the scan that follows every
solve checks the model against all rows, and the certificate is computed from that scan):

- **threads**: a solve gets the cores of its host that no other solve of the iteration
  needs (LIBSVM computes kernel columns with OpenMP; ``solve_libsvm(n_threads=)``);
  one-vs-rest problems solve concurrently, one task each, sharing the cores.
- **cascade** (Graf et al., NIPS 2004): a large working set made mostly of fresh rows is
  cut into disjoint parts (by the rows' random keys), the parts are solved in parallel,
  and the final solve runs on the union of their support vectors; rows of the working set
  that this united model violates join it and it is solved again (Graf et al.'s feedback
  loop) until none does, so a cascade gives the working set's own optimum (a cascade that
  only dropped them would cycle: the next scan draws them again).
- **direct**: when sampling cannot pay, one solve on every row, the partitions
  concatenated on the worker that solves (nothing passes through the driver).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition, vstack_rows
from randsvm_dist.exact.placement_of_solves import (
    cluster_hosts,
    place_here,
    place_solves,
    spread,
)
from randsvm_dist.exact.sampling import keys_of
from randsvm_dist.numerics.kernels import decision_values
from randsvm_dist.solvers.libsvm_adapter import BinarySolution, SolverParams, solve_libsvm
from randsvm_dist.solvers.onedal_backend import onedal_solves, prefer_onedal, solve_onedal
from randsvm_dist.solvers.weighted import solve_weighted

# A cascade pays when its parts are large and most rows of the working set are fresh
# (not support vectors of the previous model), so the parts drop most of them.
CASCADE_MIN_ROWS = 20_000
CASCADE_MAX_SV_SHARE = 0.3


def solve_rows(X, t: np.ndarray, box: np.ndarray | None, params: SolverParams,
               n_threads: int) -> BinarySolution:
    """One exact solve of rows (X, t), by the backend ``params.backend`` names.

    Every solve of the driver (working sets, cascade parts, direct solves) comes here.
    'onedal' solves C-SVC and epsilon-SVR with oneDAL (``solvers.onedal_backend``; other
    problems, and a solve oneDAL refuses, go to LIBSVM); 'auto' does where
    ``prefer_onedal`` says oneDAL was measured faster; 'libsvm' (the default) always uses
    LIBSVM: libsvm-official, or with per-row boxes ``solvers.weighted``.

    Args:
        X: (n, d) float32 ndarray or CSR.
        t: (n,) targets (as ``solvers.libsvm_adapter.solve_libsvm``).
        box: per-row boxes (C x class weight x sample weight), or None when every row has
            its class's C.
        params: the problem and its backend.
        n_threads: cores of this solve.

    Returns:
        BinarySolution (support ascending, into the rows of X).
    """
    backend = params.backend
    if (backend == "onedal" and onedal_solves(params)) or \
            (backend == "auto" and prefer_onedal(X, params, box is not None)):
        sol = solve_onedal(X, t, params, box, n_threads)
        if sol is not None:
            return sol
    if box is None:
        return solve_libsvm(X, t, params, n_threads)
    return solve_weighted(X, t, params, box, n_threads)


@dataclass
class Solved:
    """A solve's result in the working set's terms.

    Attributes:
        support: positions (into the working set) of the support vectors, ascending.
        solution: the BinarySolution (its ``support`` indexes the solved rows).
        parts: sizes of the cascade's parts (empty: a single solve).
        warm: the solve started from the previous alphas.
    """

    support: np.ndarray
    solution: BinarySolution
    parts: tuple = ()
    warm: bool = False


def total_threads(client) -> int:
    """Worker threads of the whole cluster."""
    return max(1, sum(int(w.get("nthreads", 1))
                      for w in client.scheduler_info().get("workers", {}).values()))


def solve_partitions(kind, params: SolverParams, C: float, weighted: bool, n_threads: int,
                     *parts: Partition) -> tuple:
    """One solve on every row of the problem in the given partitions (runs on a worker).

    Args:
        kind: the problem kind (its rows, targets and boxes).
        params: LIBSVM parameters (``kind.solver_params`` already applied).
        C: the box before class and sample weights.
        weighted: rows carry sample weights (solve with per-row boxes).
        n_threads: cores of the solve.

    Returns:
        (global rows, features, targets and weights of the support vectors, the
        BinarySolution).
    """
    sparse = sp.issparse(parts[0].X)
    X = vstack_rows([p.X for p in parts], sparse)
    y = np.concatenate([p.y for p in parts])
    w = np.concatenate([p.weights() for p in parts])
    rows = np.concatenate([np.arange(p.offset, p.offset + p.n_rows) for p in parts])
    t, mask = kind.targets(y)
    if mask is not None:
        X, t, w, rows = X[mask], t[mask], w[mask], rows[mask]
    box = kind.row_box(C, t, w) if weighted else None
    sol = solve_rows(X, t, box, params, n_threads)
    s = sol.support
    return rows[s], X[s], t[s], w[s], sol


def plan_cascade(n_rows: int, n_fresh: int, n_parts: int) -> int:
    """How many parts to cut a working set into (1: solve it whole).

    A cascade pays when each part still has CASCADE_MIN_ROWS rows and at most
    CASCADE_MAX_SV_SHARE of the working set are carried-over support vectors.
    """
    if n_parts < 2 or (n_rows - n_fresh) > CASCADE_MAX_SV_SHARE * n_rows:
        return 1
    return max(1, min(n_parts, n_rows // CASCADE_MIN_ROWS))


def solve_working_set(client, kind, X, y: np.ndarray, box: np.ndarray | None,
                      rows: np.ndarray, params: SolverParams, n_threads: int, n_parts: int,
                      stream: int) -> Solved:
    """Solve one working set on the workers, whole or as a two-level cascade.

    Args:
        client: distributed.Client.
        kind: the problem kind (its slack decides the cascade's feedback).
        X, y, box, rows: the working set (features, targets, per-row boxes or None,
            global rows).
        params: LIBSVM parameters.
        n_threads: cores offered to the solve: the final solve gets them on the host
            this runs on (``placement_of_solves.place_here``), the parts share them,
            spread over the hosts.
        n_parts: cascade parts (1: a single solve).
        stream: random stream that assigns rows to parts (by their keys).

    Returns:
        Solved.
    """
    if n_parts <= 1 or kind.svm_type == 2:  # one-class parts would each need nu n rows
        sol, = gather(client, [client.submit(solve_rows, X, y, box, params, n_threads,
                                             pure=False, retries=2)], "the working-set solve")
        return Solved(sol.support, sol)
    keys = keys_of(stream, rows)
    part_of = np.minimum((keys * n_parts).astype(np.int64), n_parts - 1)
    members = [np.flatnonzero(part_of == q) for q in range(n_parts)]
    # the parts spread over the hosts, sharing the solve's threads
    futures = [client.submit(solve_rows, X[m], y[m], None if box is None else box[m],
                             params, min(q.threads, max(1, n_threads // n_parts)),
                             pure=False, retries=2, **q.submit_options())
               for m, q in zip(members, place_solves(client, n_parts)) if len(m)]
    kept = np.sort(np.concatenate([m[s.support] for m, s in
                                   zip([m for m in members if len(m)],
                                       gather(client, futures, "the cascade's part solves"))]))
    if not len(kept):  # every part one class: fall back to the whole set
        return solve_working_set(client, kind, X, y, box, rows, params, n_threads, 1, stream)
    here = place_here(client, n_threads)  # the final solve on the host it was offered
    while True:
        sol, = gather(client, [client.submit(solve_rows, X[kept], y[kept],
                                             None if box is None else box[kept], params,
                                             here.threads, pure=False, retries=2,
                                             **here.submit_options())],
                      "the cascade's final solve")
        # Graf et al.'s feedback: rows a part dropped that violate the united solution join
        # it, until none does, so the result is the optimum of the whole working set
        rest = np.setdiff1d(np.arange(len(y)), kept, assume_unique=True)
        f = decision_values(X[rest], X[kept[sol.support]], sol.dual_coef, sol.intercept,
                            params.kernel) if len(rest) and len(sol.support) else \
            np.full(len(rest), sol.intercept)
        late = rest[kind.slack(f, y[rest]) > params.tol]
        if not len(late):
            return Solved(kept[sol.support], sol, tuple(len(m) for m in members))
        kept = np.union1d(kept, late)


def threads_per_solve(client, n_solves: int) -> int:
    """Cores offered to each of n concurrent solves (at least one) that the scheduler may
    run on any host: no more than the smallest host has, nor than the fewest of
    ``exact.placement_of_solves.place_solves``'s shares (a host's worker threads shared by
    the solves spread onto it), so wherever a solve lands its host is never offered more
    threads than it has. A caller that submits each solve to its place's workers
    (``SolvePlace.submit_options``) offers each place's own threads instead.

    An offer, not an order: every backend takes only as many of them as its work per
    step pays for, and never more than the cores of the process it runs in
    (``solvers.libsvm_adapter.step_threads``; the rule's cost per thread is
    ``exact.cost_model``'s), so more cores never make a solve slower."""
    hosts = cluster_hosts(client)
    return min([h.threads for h in hosts]
               + [p.threads for p in spread(hosts, max(1, n_solves))])
