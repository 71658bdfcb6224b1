"""RBF kernel evaluations per second: the scan's fused kernel against float32 GEMM + numpy.

The reference is what a plain float32 BLAS implementation reaches on this machine with all
its cores: G = X S' (sgemm, every BLAS thread), then exp(-gamma (|x|^2 + |s|^2 - 2 G)) in
place with numpy and the product with the coefficients (sgemv). The scan's kernel
(``kernels.decision_values``: sgemm per block, then ``rbf_fused.rbf_accumulate``; for at
most 4 features ``rbf_fused.rbf_direct_accumulate``, no GEMM) runs single-threaded per
worker, so its machine rate is the per-core rate x the cores (the scans run one task per
core). RandSVM's in-run rates are in ``history_``
(``kernel_evals_per_second``) and in bench_randsvm's table. The last column is a whole
partition's scan (``exact.scan.partition.scan_partition``: the kernel plus the scan's own work on
every row), one core: what a scan task reaches at most. Dask's worker processes run with
``MALLOC_TRIM_THRESHOLD_`` set (by the nanny), which makes every large temporary array
page-fault afresh; run this with that variable set to see a worker's rate
(``MALLOC_TRIM_THRESHOLD_=65536 python benchmarks/bench_scan_rate.py``).

    python benchmarks/bench_scan_rate.py
"""

from __future__ import annotations

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from randsvm_dist.engine.partitions import Partition
from randsvm_dist.exact.kinds import CSVC
from randsvm_dist.exact.scan.partition import ProblemRequest, ScanModel, scan_partition
from randsvm_dist.numerics.kernels import Kernel, decision_values, row_sq_norms


def gemm_rbf(X: np.ndarray, S: np.ndarray, coef: np.ndarray, gamma: float,
             block: int = 4096) -> np.ndarray:
    """The float32 GEMM + numpy reference: decision values without the intercept."""
    sn = row_sq_norms(S)
    out = np.empty(len(X), np.float32)
    g = np.float32(gamma)
    for a in range(0, len(X), block):
        xb = X[a:a + block]
        K = xb @ S.T
        K *= np.float32(2.0)
        K -= row_sq_norms(xb)[:, None]
        K -= sn[None, :]
        np.minimum(K, 0, out=K)
        K *= g
        np.exp(K, out=K)
        out[a:a + block] = K @ coef
    return out


def best_of(fn, *args, repeats: int = 3) -> float:
    """The shortest of ``repeats`` timed calls fn(*args), in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times)


def gemm_only(X: np.ndarray, S: np.ndarray, block: int = 4096) -> None:
    """The dot products alone, in the same blocks."""
    for a in range(0, len(X), block):
        X[a:a + block] @ S.T


def scan_once(X: np.ndarray, S: np.ndarray, coef: np.ndarray, gamma: float) -> None:
    """One violator scan of all rows of X (a C-SVC problem, labels by the first feature)."""
    part = Partition(X, (X[:, 0] > 0).astype(np.int32), 0)
    model = ScanModel(Kernel("rbf", gamma), S, coef[:, None], np.zeros(1))
    req = [ProblemRequest(CSVC(1), np.empty(0, np.int64), 1000, 7, band=0.5)]
    scan_partition(part, model, req)


def main() -> None:
    cores = os.cpu_count() or 1
    rng = np.random.default_rng(0)
    print(f"cores: {cores}, load average before: {os.getloadavg()}")
    print("| d | SVs | GEMM+numpy, all cores (G/s) | sgemm alone, all cores (G/s) | "
          "fused, 1 core (G/s) | fused x cores (G/s) | fused x cores / GEMM+numpy | "
          "scan_partition, 1 core (G/s) |")
    print("|---|---|---|---|---|---|---|---|")
    for d, m in ((2, 20_000), (2, 100_000), (10, 12_000), (20, 5_000), (20, 15_000)):
        n = 200_000
        X = rng.normal(size=(n, d)).astype(np.float32)
        S = rng.normal(size=(m, d)).astype(np.float32)
        coef = rng.normal(size=m).astype(np.float32)
        gamma = 1.0 / d
        evals = n * m
        ref = best_of(gemm_rbf, X, S, coef, gamma)
        dot = best_of(gemm_only, X, S)
        with threadpool_limits(limits=1):
            fused = best_of(decision_values, X, S, coef, 0.0, Kernel("rbf", gamma))
            scan = best_of(scan_once, X, S, coef, gamma)
        # the fused result must be the reference's
        f_ref = gemm_rbf(X[:2000], S, coef, gamma)
        f = decision_values(X[:2000], S, coef, 0.0, Kernel("rbf", gamma))
        assert np.max(np.abs(f - f_ref)) <= 1e-4 * max(1.0, np.abs(f_ref).max())
        r_ref, r_dot, r_fused = evals / ref / 1e9, evals / dot / 1e9, evals / fused / 1e9
        print(f"| {d} | {m:,} | {r_ref:.2f} | {r_dot:.2f} | {r_fused:.2f} | "
              f"{cores * r_fused:.2f} | {cores * r_fused / r_ref:.0%} | "
              f"{evals / scan / 1e9:.2f} |", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
