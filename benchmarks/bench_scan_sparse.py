"""The scan's kernel blocks on sparse rows: a sparse product against a dense GEMM.

For rows of d features at several densities (one-hot-like: a share of the cells non-zero),
times ``kernels.decision_values`` (RBF, one core, one BLAS thread, as a scan task runs it)
with the kernel block's dot products forced to each product (``kernels._BlockDots``: CSR
rows x the support vectors' transpose, or a float32 GEMM), and the machine's single-core
float32 GEMM rate. Per row: rows x SVs x d / seconds (multiply-adds per second, dense
count), the bound rows x SVs x d at the GEMM rate over the measured time (issue: a scan
within 2x of it), and per feature count the crossover density below which the sparse
product wins: ``kernels.SPARSE_PRODUCT_DENSITY`` (more than ``kernels.FEW_FEATURES``
features) and ``SPARSE_PRODUCT_DENSITY_FEW`` (at most) take it. The results of both
products are checked against each other (float32 rounding).

    python benchmarks/bench_scan_sparse.py            # the table (a few minutes)
    python benchmarks/bench_scan_sparse.py --smoke    # tiny sizes: that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import time
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from randsvm_dist.numerics import kernels
from randsvm_dist.numerics.kernels import Kernel, decision_values

DENSITIES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
FEATURES = (50, 118, 300, 800)


@contextmanager
def forced(product: str):
    """Every kernel block's dot products by ``product`` ('sparse' or 'dense')."""
    saved = kernels.SPARSE_PRODUCT_DENSITY, kernels.SPARSE_PRODUCT_DENSITY_FEW
    limit = 2.0 if product == "sparse" else 0.0
    kernels.SPARSE_PRODUCT_DENSITY = kernels.SPARSE_PRODUCT_DENSITY_FEW = limit
    try:
        yield
    finally:
        kernels.SPARSE_PRODUCT_DENSITY, kernels.SPARSE_PRODUCT_DENSITY_FEW = saved


def best_of(fn, repeats: int) -> float:
    """The shortest of ``repeats`` timed calls of fn(), in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def gemm_rate(repeats: int, n: int = 4096, d: int = 512, m: int = 2048) -> float:
    """Single-core float32 GEMM multiply-adds per second (n x d times d x m)."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(n, d)).astype(np.float32)
    B = rng.normal(size=(d, m)).astype(np.float32)
    with threadpool_limits(limits=1, user_api="blas"):
        return n * d * m / best_of(lambda: A @ B, repeats)


def sparse_rows(rng, n: int, d: int, density: float) -> np.ndarray:
    """n rows of d features, each cell non-zero with probability ``density`` (dense)."""
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) >= density] = 0.0
    return X


def measure(n: int, m: int, d: int, density: float, repeats: int, gemm: float) -> dict:
    """One (d, density) point: both products' rates on dense and CSR input."""
    rng = np.random.default_rng(0)
    X = sparse_rows(rng, n, d, density)
    S = sparse_rows(rng, m, d, density)
    coef = rng.normal(size=m).astype(np.float32)
    kernel = Kernel("rbf", 1.0 / max(1.0, density * d))
    csr = sp.csr_matrix(X)
    row = {"d": d, "density": density, "rows": n, "svs": m}
    values = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for product in ("dense", "sparse"):
            with forced(product):
                for name, rows in (("dense_input", X), ("csr_input", csr)):
                    t = best_of(lambda r=rows: decision_values(r, S, coef, 0.0, kernel), repeats)
                    row[f"{product}_{name}_rate"] = n * m * d / t
                    row[f"{product}_{name}_vs_gemm_bound"] = t / (n * m * d / gemm)
                values[product] = decision_values(X, S, coef, 0.0, kernel)
    scale = max(1.0, float(np.abs(values["dense"]).max()))
    row["max_difference"] = float(np.abs(values["dense"] - values["sparse"]).max()) / scale
    assert row["max_difference"] <= 1e-4, row
    return row


def crossover(rows: list[dict], d: int) -> float | None:
    """The largest measured density at which the sparse product still beats the GEMM
    (CSR input), for d features; None if it never does."""
    wins = [r["density"] for r in rows
            if r["d"] == d and r["sparse_csr_input_rate"] > r["dense_csr_input_rate"]]
    return max(wins) if wins else None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: check that it runs")
    ap.add_argument("--out", help="append the rows as JSON lines to this file")
    args = ap.parse_args(argv)
    n, m, repeats = (400, 64, 1) if args.smoke else (20_000, 2_000, 3)
    features = FEATURES[:2] if args.smoke else FEATURES
    densities = DENSITIES[::3] if args.smoke else DENSITIES
    gemm = gemm_rate(repeats, *((256, 64, 128) if args.smoke else ()))
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}, "
          f"single-core float32 GEMM: {gemm / 1e9:.1f} G multiply-adds/s")
    print("| d | density | dense GEMM, dense rows | sparse, dense rows | dense GEMM, CSR rows |"
          " sparse, CSR rows | best / GEMM bound |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for d in features:
        for density in densities:
            r = measure(n, m, d, density, repeats, gemm)
            rows.append(r)
            best = min(r[f"{p}_{i}_vs_gemm_bound"] for p in ("dense", "sparse")
                       for i in ("dense_input", "csr_input"))
            print(f"| {d} | {density} | "
                  + " | ".join(f"{r[k] / 1e9:.2f}" for k in (
                      "dense_dense_input_rate", "sparse_dense_input_rate",
                      "dense_csr_input_rate", "sparse_csr_input_rate"))
                  + f" | {best:.1f}x |", flush=True)
    print("rates: rows x SVs x d / s, in G; crossover density (sparse product wins at or "
          "below): " + ", ".join(f"d={d}: {crossover(rows, d)}" for d in features))
    if args.out:
        with open(args.out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
