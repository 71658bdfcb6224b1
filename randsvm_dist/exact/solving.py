"""Where and how the LIBSVM solves of an iteration run on the workers.

The driver alternates solves and scans, so while a solve runs the other cores would idle.
Three ways to keep them busy, all leaving the result exact (the scan that follows every
solve checks the model against all rows, and the certificate is computed from that scan):

- **threads**: a solve gets the cores of its host that no other solve of the iteration
  needs (LIBSVM computes kernel columns with OpenMP; ``solve_binary(n_threads=)``);
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

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact.sampling import keys_of
from randsvm_dist.kernels import decision_values
from randsvm_dist.solvers.libsvm_adapter import BinarySolution, SolverParams, solve_binary

# A cascade pays when its parts are large and most rows of the working set are fresh
# (not support vectors of the previous model), so the parts drop most of them.
CASCADE_MIN_ROWS = 20_000
CASCADE_MAX_SV_SHARE = 0.3


def _vstack(blocks, sparse: bool):
    blocks = [b for b in blocks if b is not None and b.shape[0]]
    if not blocks:
        return None
    return sp.vstack(blocks, format="csr") if sparse else np.vstack(blocks)


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


def host_threads(client) -> int:
    """Cores a single solve can use: the fewest worker threads on any one host."""
    per_host: dict[str, int] = {}
    for w in client.scheduler_info().get("workers", {}).values():
        host = w.get("host", w.get("id"))
        per_host[host] = per_host.get(host, 0) + int(w.get("nthreads", 1))
    return max(1, min(per_host.values())) if per_host else 1


def total_threads(client) -> int:
    """Worker threads of the whole cluster."""
    return max(1, sum(int(w.get("nthreads", 1))
                      for w in client.scheduler_info().get("workers", {}).values()))


def solve_partitions(params: SolverParams, positive: int, n_threads: int,
                     *parts: Partition) -> tuple[np.ndarray, object, BinarySolution]:
    """One solve on every row of the given partitions (runs on a worker).

    Returns:
        (global rows of the support vectors, their features, the BinarySolution).
    """
    sparse = sp.issparse(parts[0].X)
    X = _vstack([p.X for p in parts], sparse)
    cls = np.concatenate([p.cls for p in parts])
    rows = np.concatenate([np.arange(p.offset, p.offset + p.n_rows) for p in parts])
    sol = solve_binary(X, np.where(cls == positive, 1.0, -1.0), params, n_threads)
    return rows[sol.support], X[sol.support], sol


def _solve_part(X, y, params: SolverParams, n_threads: int) -> BinarySolution:
    return solve_binary(X, y, params, n_threads)


def plan_cascade(n_rows: int, n_fresh: int, n_parts: int) -> int:
    """How many parts to cut a working set into (1: solve it whole).

    A cascade pays when each part still has CASCADE_MIN_ROWS rows and at most
    CASCADE_MAX_SV_SHARE of the working set are carried-over support vectors.
    """
    if n_parts < 2 or (n_rows - n_fresh) > CASCADE_MAX_SV_SHARE * n_rows:
        return 1
    return max(1, min(n_parts, n_rows // CASCADE_MIN_ROWS))


def solve_working_set(client, X, y: np.ndarray, rows: np.ndarray, params: SolverParams,
                      n_threads: int, n_parts: int, stream: int) -> Solved:
    """Solve one working set on the workers, whole or as a two-level cascade.

    Args:
        client: distributed.Client.
        X, y, rows: the working set (features, labels in {-1, +1}, global rows).
        params: LIBSVM parameters.
        n_threads: cores for the (final) solve.
        n_parts: cascade parts (1: a single solve).
        stream: random stream that assigns rows to parts (by their keys).

    Returns:
        Solved.
    """
    if n_parts <= 1:
        sol, = gather(client, [client.submit(_solve_part, X, y, params, n_threads,
                                             pure=False, retries=2)], "the working-set solve")
        return Solved(sol.support, sol)
    keys = keys_of(stream, rows)
    part_of = np.minimum((keys * n_parts).astype(np.int64), n_parts - 1)
    members = [np.flatnonzero(part_of == q) for q in range(n_parts)]
    futures = [client.submit(_solve_part, X[m], y[m], params,
                             max(1, n_threads // n_parts), pure=False, retries=2)
               for m in members if len(m)]
    kept = np.sort(np.concatenate([m[s.support] for m, s in
                                   zip([m for m in members if len(m)],
                                       gather(client, futures, "the cascade's part solves"))]))
    if not len(kept):  # every part one class: fall back to the whole set
        return solve_working_set(client, X, y, rows, params, n_threads, 1, stream)
    while True:
        sol, = gather(client, [client.submit(_solve_part, X[kept], y[kept], params,
                                             n_threads, pure=False, retries=2)],
                      "the cascade's final solve")
        # Graf et al.'s feedback: rows a part dropped that violate the united solution join
        # it, until none does, so the result is the optimum of the whole working set
        rest = np.setdiff1d(np.arange(len(y)), kept, assume_unique=True)
        f = decision_values(X[rest], X[kept[sol.support]], sol.dual_coef, sol.intercept,
                            params.kernel) if len(rest) and len(sol.support) else \
            np.full(len(rest), sol.intercept)
        late = rest[y[rest] * f < 1.0 - params.tol]
        if not len(late):
            return Solved(kept[sol.support], sol, tuple(len(m) for m in members))
        kept = np.union1d(kept, late)


def threads_per_solve(client, n_solves: int) -> int:
    """Cores each of n concurrent solves gets (at least one)."""
    hosts_threads = host_threads(client)
    per_host = math.ceil(n_solves / max(1, total_threads(client) // hosts_threads))
    return max(1, hosts_threads // max(1, per_host))
