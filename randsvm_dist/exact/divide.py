"""Divide and conquer of one working set over the workers (Hsieh, Si, Dhillon, ICML 2014).

The working set is cut into parts that are clusters in kernel space, each part is solved
on its own worker (one thread each, all at once), and the whole working set is then solved
by the warm-started SMO (``solvers.warm_smo.solve``) from the union of the parts' alphas. Rows
close in kernel space interact most, so the parts' alphas are near the working set's
optimum and the final solve moves few of them; it is still a solve of every row, so the
result is the working set's own optimum, as a whole solve's is.

The clusters: a Nystrom map of every row onto NYSTROM_LANDMARKS landmarks (drawn from
the working set), k-means on CLUSTER_SAMPLE_ROWS of the mapped rows (k-means++ start,
Lloyd steps), then every row goes to its nearest centre with at most PART_SLACK x m / W
rows a part (a row whose centre is full goes to its next nearest), so no part holds up
the others. Every random choice comes from the plan's stream, so the parts depend on the
rows and the stream only, never on the workers.
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.exact.placement_of_solves import place_solves
from randsvm_dist.exact.solving import Solved, solve_rows
from randsvm_dist.numerics.kernels import Kernel, kernel_matrix
from randsvm_dist.solvers.params import SolverParams
from randsvm_dist.solvers.solution import BinarySolution

NYSTROM_LANDMARKS = 64
CLUSTER_SAMPLE_ROWS = 4_000
LLOYD_STEPS = 20
PART_SLACK = 1.1


def nystrom_map(X, kernel: Kernel, rng: np.random.Generator) -> np.ndarray:
    """Rows of X in a NYSTROM_LANDMARKS-dimensional space whose dot products approximate
    the kernel (landmarks drawn from X by ``rng``): K(X, L) K(L, L)^(-1/2).

    Args:
        X: (m, d) float32 ndarray or CSR.
        kernel: the solve's kernel.
        rng: the plan's random generator.

    Returns:
        (m, <= NYSTROM_LANDMARKS) float64 array.
    """
    m = X.shape[0]
    landmarks = X[np.sort(rng.choice(m, min(m, NYSTROM_LANDMARKS), replace=False))]
    vals, vecs = np.linalg.eigh(kernel_matrix(landmarks, landmarks, kernel).astype(np.float64))
    keep = vals > 1e-8 * max(float(vals.max()), 1e-300)
    root = vecs[:, keep] / np.sqrt(vals[keep])
    return kernel_matrix(X, landmarks, kernel).astype(np.float64) @ root


def _kmeans(Z: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k centres of the rows of Z: k-means++ start, then LLOYD_STEPS Lloyd steps."""
    centres = [Z[rng.integers(len(Z))]]
    for _ in range(1, k):
        d2 = _sq_dist(Z, np.array(centres)).min(axis=1)
        total = float(d2.sum())
        pick = rng.choice(len(Z), p=d2 / total) if total > 0 else rng.integers(len(Z))
        centres.append(Z[pick])
    C = np.array(centres)
    for _ in range(LLOYD_STEPS):
        near = _sq_dist(Z, C).argmin(axis=1)
        for j in range(k):
            if (near == j).any():
                C[j] = Z[near == j].mean(axis=0)
    return C


def _sq_dist(Z: np.ndarray, C: np.ndarray) -> np.ndarray:
    return np.maximum((Z * Z).sum(1)[:, None] - 2 * Z @ C.T + (C * C).sum(1)[None, :], 0.0)


def _balanced(dist: np.ndarray, cap: int) -> np.ndarray:
    """Each row's part: its nearest centre with room, rows surest of their centre first."""
    m, k = dist.shape
    part = np.full(m, -1)
    room = np.full(k, cap)
    d = dist.copy()
    while (part < 0).any():
        open_rows = np.flatnonzero(part < 0)
        best = d[open_rows].argmin(axis=1)
        for j in range(k):
            mine = open_rows[best == j]
            if not len(mine) or room[j] <= 0:
                continue
            order = np.argsort(d[mine, j] - d[mine].mean(axis=1), kind="stable")
            took = mine[order[:room[j]]]
            part[took], room[j] = j, room[j] - len(took)
        d[:, room <= 0] = np.inf
    return part


def divide_rows(X, n_parts: int, kernel: Kernel, stream: int) -> list[np.ndarray]:
    """The working set's rows cut into n_parts clusters in kernel space.

    Args:
        X: (m, d) float32 ndarray or CSR (the working set).
        n_parts: parts (>= 1).
        kernel: the solve's kernel (the space the clusters are in).
        stream: the plan's random stream (``sampling.stream_id``).

    Returns:
        n_parts ascending arrays of positions into X, together every row once (some may
        be empty when X has fewer distinct rows than parts).
    """
    m = X.shape[0]
    if n_parts <= 1 or m <= n_parts:
        return [np.arange(m)] + [np.empty(0, np.int64)] * max(0, n_parts - 1)
    rng = np.random.default_rng(stream)
    Z = nystrom_map(X, kernel, rng)
    sample = np.sort(rng.choice(m, min(m, CLUSTER_SAMPLE_ROWS), replace=False))
    centres = _kmeans(Z[sample], n_parts, rng)
    part = _balanced(_sq_dist(Z, centres), int(np.ceil(PART_SLACK * m / n_parts)))
    return [np.flatnonzero(part == j) for j in range(n_parts)]


def union_alphas(members: list[np.ndarray], solutions: list[BinarySolution],
                 m: int) -> np.ndarray:
    """The alphas of the parts' solutions placed at their rows of the working set (C-SVC:
    alpha = |y alpha|); rows no part kept as a support vector start at 0."""
    alpha = np.zeros(m)
    for rows, sol in zip(members, solutions):
        alpha[rows[sol.support]] = np.abs(sol.dual_coef)
    return alpha


def solve_divided(client, X, t: np.ndarray, box: np.ndarray | None, params: SolverParams,
                  n_threads: int, n_parts: int, stream: int) -> Solved:
    """Solve one C-SVC working set by divide and conquer (runs in a task on a worker).

    Args:
        client: distributed client (``worker_client`` of the calling task).
        X, t, box: the working set's features, +-1 targets, per-row boxes or None.
        params: the solve's parameters (C-SVC).
        n_threads: cores of the final warm solve.
        n_parts: parts solved in parallel, one thread each.
        stream: the plan's random stream (the clusters).

    Returns:
        Solved: the final solve's (``parts``: the parts' sizes).
    """
    from randsvm_dist.solvers.warm_smo.solve import solve_warm
    from randsvm_dist.solvers.weighted import solve_weighted_warm

    members = [r for r in divide_rows(X, n_parts, params.kernel, stream) if len(r)]
    # one thread each, spread over the hosts as concurrent solves are
    futures = [client.submit(solve_rows, X[r], t[r], None if box is None else box[r], params,
                             1, pure=False, retries=2, **q.submit_options())
               for r, q in zip(members, place_solves(client, len(members)))]
    solutions = gather(client, futures, "the divided working set's part solves")
    alpha0 = union_alphas(members, solutions, len(t))
    sol = (solve_warm(X, t, params, alpha0, n_threads) if box is None
           else solve_weighted_warm(X, t, params, box, alpha0, n_threads))
    return Solved(sol.support, sol, tuple(len(r) for r in members), warm=False)
