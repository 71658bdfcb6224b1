"""A fit's memory plan: what each task may hold on its worker, decided before any work.

From the data's schema (rows, features, partition sizes) and every worker's memory
(``engine.worker_memory``: its limit, and what it holds after importing the fit's task
modules), the plan says

- whether the working-set solves run on the workers or in the client's process: a solve
  holds its working set (LIBSVM's copy of it too) and its kernel cache, so on workers
  that cannot afford both next to what they hold it runs in the client;
- the solver's kernel cache (``cache_size``), shrunk to what the process running the
  solves can spare;
- whether all rows may be solved at once (the direct route): never when their solve
  would not fit a worker;
- and refuses, in one line, a cluster whose workers cannot hold the smallest scan task
  (one partition read and scanned) next to what they already hold: Dask would pause such
  a worker at its limit, or its nanny restart it, again and again.

The screening bounds kept in the workers' memory are bounded on their own
(``exact.scan.screening_store``: at most a tenth of the limit, the rest on the worker's
disk); the plan counts them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace

import numpy as np

from randsvm_dist.engine.partitions import PartitionSet
from randsvm_dist.engine.worker_memory import MB, WorkerMemory, worker_memory
from randsvm_dist.exact.route import sample_size_for
from randsvm_dist.exact.scan import screening_store
from randsvm_dist.exact.state import ProblemState, RunConfig
from randsvm_dist.exceptions import ClusterError

# The modules a fit's worker tasks import (read, scan, solve): a worker's baseline is
# measured with them loaded.
SCAN_MODULES = ("randsvm_dist.exact.scan.partition", "randsvm_dist.exact.scan.reread",
                "randsvm_dist.numerics.rbf_fused", "randsvm_dist.data.dataset",
                "pyarrow.parquet")
# What importing them and a first scan add to a worker (numba's LLVM and the scan's
# compiled kernels, Parquet's reader): measured 250 MB, 110 of them the first scan's.
SCAN_IMPORT_BYTES = 250 * MB

# A partition's bytes held at once while it is read (``data.dense_read``: the file's bytes
# when checksummed, the rows, a batch): measured 2.3x on 250,000 x 16 float32 rows.
# Re-read, the partition being scanned is held beside the next one's read.
READ_COPIES = 2.5
# Per row and problem during a scan: decision values (float64), the bounds read and left
# (2 x 2 float32), keys.
SCAN_BYTES_PER_ROW_PROBLEM = 40
# The kernel blocks of one scan thread (the block, its dot products, the exps).
KERNEL_BLOCK_BYTES = 3 * 4 * (1 << 20)
# Per working-set row and feature in a solve: the float32 rows, LIBSVM's (index, value)
# nodes, the float64 copy a backend may make.
SOLVE_BYTES_PER_VALUE = 4 + 16 + 8
SOLVE_BYTES_PER_ROW = 96          # alphas, gradients, targets, boxes, index sets
MIN_CACHE_MB = 16.0               # a solve with less kernel cache recomputes too much
SOLVE_IMPORT_BYTES = 200 * MB     # scikit-learn, scikit-learn-intelex and LIBSVM loaded
# Kept free under Dask's pause threshold for what no estimate sees (freed memory the
# allocators keep, Dask's own buffers): a share of the limit.
HEADROOM = 0.1
# Working sets grow past the first sample by the support vectors they keep.
WORKING_SET_GROWTH = 3


@dataclass(frozen=True)
class MemoryPlan:
    """What each task of a fit may hold (bytes unless named otherwise; see the module).

    Attributes:
        limited: the workers have memory limits (False: nothing was capped).
        worker_limit, worker_baseline: the smallest limit and the largest baseline.
        usable: bytes a worker's tasks may add before Dask pauses it (the least of any).
        scan_task: the largest scan task's need (one partition read and scanned).
        bounds: the screening bounds a worker may keep.
        solve: the largest working-set solve's need at ``cache_mb`` (without imports).
        solve_in: 'workers' or 'client'.
        cache_mb: the solver's kernel cache per solve (MB).
        direct_fits: one solve of all rows fits a worker.
        threads: the most threads of one worker (its tasks run at once).
        reason: why the solves run where they do.
    """

    limited: bool
    worker_limit: int
    worker_baseline: int
    usable: int
    scan_task: int
    bounds: int
    solve: int
    solve_in: str
    cache_mb: float
    direct_fits: bool
    threads: int
    reason: str

    def as_record(self) -> str:
        """The plan as JSON text (``history_`` holds flat records; ``json.loads`` gives the
        fields as a dict)."""
        return json.dumps(asdict(self))


def scan_task_bytes(rows: int, bytes_per_row: float, n_problems: int,
                    reread: bool = False) -> int:
    """The most a scan task of partitions of ``rows`` rows holds: the partition read, its
    scan's per-row arrays and one thread's kernel blocks; re-read, also the next
    partition being read meanwhile (``exact.scan.reread``): the scanned one's rows beside
    the read of the next."""
    read = (READ_COPIES + (1 if reread else 0)) * bytes_per_row
    return int(rows * (read + SCAN_BYTES_PER_ROW_PROBLEM * n_problems) + KERNEL_BLOCK_BYTES)


def solve_bytes(rows: int, n_features: int, cache_mb: float, bytes_per_row: float,
                sparse: bool) -> int:
    """A solve of ``rows`` rows: its rows in the solver's copies, its per-row arrays and
    its kernel cache."""
    per_row = (SOLVE_BYTES_PER_VALUE * bytes_per_row / 4 if sparse
               else SOLVE_BYTES_PER_VALUE * n_features)
    return int(rows * (per_row + SOLVE_BYTES_PER_ROW) + cache_mb * MB)


def plan_memory(workers: list[WorkerMemory], threads: dict[str, int], sizes: np.ndarray,
                n_features: int, bytes_per_row: float, sparse: bool, cached: bool,
                n_problems: int, sample_rows: int, cache_mb: float,
                bounds_cap: int) -> MemoryPlan:
    """The memory plan of a fit (see the module).

    Args:
        workers: every worker's memory (``engine.worker_memory.worker_memory``).
        threads: worker address -> threads.
        sizes: rows of each partition (a scan task reads or holds at most one).
        n_features, sparse: the rows' shape and layout.
        bytes_per_row: bytes of one row's features as float32 (sparse: values and
            indices).
        cached: the partitions stay in worker memory (they are loaded before the plan
            is made, so the workers' baselines hold them).
        n_problems: problems scanned at once (one-vs-one: the pairs).
        sample_rows: the first working set's rows (later ones grow to about
            ``WORKING_SET_GROWTH`` x).
        cache_mb: the kernel cache asked for (``cache_size``).
        bounds_cap: the most bytes of screening bounds one worker keeps.

    Returns:
        MemoryPlan.

    Raises:
        ClusterError: a worker cannot hold the smallest scan task next to what it holds
            (one line naming the need and the worker's limit).
    """
    n_rows = int(np.sum(sizes))
    most_threads = max(threads.values(), default=1)
    scan = scan_task_bytes(int(np.max(sizes, initial=0)), bytes_per_row, n_problems,
                           reread=not cached)
    ws_rows = min(n_rows, WORKING_SET_GROWTH * sample_rows)
    limited = [w for w in workers if w.usable is not None]
    if not limited:
        return MemoryPlan(False, 0, max((w.baseline for w in workers), default=0), 0, scan,
                          bounds_cap, solve_bytes(ws_rows, n_features, cache_mb,
                                                  bytes_per_row, sparse),
                          "workers", float(cache_mb), True, most_threads,
                          "the workers have no memory limit")
    total_threads = max(1, sum(threads.values()))
    held = 0
    for w in limited:
        share = threads.get(w.address, 1) / total_threads
        rows_here = n_rows * share
        # cached partitions are already on the workers: in their measured baseline
        held = max(held, min(bounds_cap, int(rows_here * n_problems * 8)))
    _refuse_small(limited, scan * threads_of(limited, threads) + held, scan, held)
    usable = min(w.usable - headroom(w) for w in limited)
    spare = usable - held - scan * most_threads
    need_min = SOLVE_IMPORT_BYTES + solve_bytes(ws_rows, n_features, MIN_CACHE_MB,
                                                bytes_per_row, sparse)
    direct = solve_bytes(n_rows, n_features, MIN_CACHE_MB, bytes_per_row, sparse)
    direct_fits = direct + SOLVE_IMPORT_BYTES <= spare
    if need_min <= spare:
        room_mb = (spare - need_min) / MB + MIN_CACHE_MB
        cache = float(min(cache_mb, room_mb))
        return MemoryPlan(True, min(w.limit for w in limited),
                          max(w.baseline for w in limited), usable, scan, held,
                          solve_bytes(ws_rows, n_features, cache, bytes_per_row, sparse),
                          "workers", cache, direct_fits, most_threads,
                          f"a solve of up to {ws_rows:,} rows fits the workers with a "
                          f"{cache:.0f} MB kernel cache")
    return MemoryPlan(True, min(w.limit for w in limited), max(w.baseline for w in limited),
                      usable, scan, held,
                      solve_bytes(ws_rows, n_features, cache_mb, bytes_per_row, sparse),
                      "client", float(cache_mb), False, most_threads,
                      f"a solve of up to {ws_rows:,} rows needs {need_min / MB:.0f} MB with "
                      f"the solvers loaded; the workers have {max(spare, 0) / MB:.0f} MB "
                      "beside the scans: the solves run in the client")


def headroom(w: WorkerMemory) -> int:
    """Bytes of ``w``'s limit kept free under the pause threshold (``HEADROOM``)."""
    return int(HEADROOM * w.limit)


def threads_of(workers: list[WorkerMemory], threads: dict[str, int]) -> int:
    """The most threads of any of ``workers`` (each thread may run a scan task)."""
    return max((threads.get(w.address, 1) for w in workers), default=1)


def _refuse_small(workers: list[WorkerMemory], need: int, scan: int, held: int) -> None:
    """Raise ClusterError naming the first worker whose limit cannot hold ``need`` bytes
    beside its baseline, before Dask pauses it."""
    for w in workers:
        if w.usable is not None and need > w.usable - headroom(w):
            least = (need + w.baseline) / (w.pause - HEADROOM)
            raise ClusterError(   # in MB of 10^6 bytes, as ``--memory-limit 512MB`` counts
                f"each worker needs at least {least / 1e6:.0f} MB for this data "
                f"({w.baseline / 1e6:.0f} MB loaded before any task, {scan / 1e6:.0f} MB per "
                f"scan task, {held / 1e6:.0f} MB held between scans, {HEADROOM:.0%} of the "
                f"limit kept free under Dask's pause at {w.pause:.0%}); {w.address} has "
                f"{w.limit / 1e6:.0f} MB. Give "
                "the workers more memory (dask worker --memory-limit) or write the data "
                "in smaller partitions")


def bytes_per_row(parts: PartitionSet) -> float:
    """One row's features in memory (float32 values; sparse: values and indices, from the
    data set's stored non-zeros when it has them, else as if dense)."""
    d = parts.n_features
    if parts.is_sparse and parts.dataset is not None:
        return parts.dataset.estimated_nbytes() / max(parts.n_rows, 1)
    return 4.0 * d + 8


def cache_fits(client, ds, n_problems: int = 1) -> bool:
    """Whether every worker can keep its share of a Dataset's rows in memory (cache='auto'
    decides by this): its share (in proportion to its threads) as float32 features, label
    and weight, a scan task per thread over cached partitions and the screening bounds it
    keeps in memory, beside what it holds after importing the fit's task modules, under
    Dask's pause threshold less the headroom (a worker with a limit but no pause: under
    its limit). Cached scans were never slower than re-read ones in any measured fit, so
    nothing else weighs in.

    Args:
        client: distributed.Client.
        ds: the Dataset (``data.dataset.Dataset``).
        n_problems: problems scanned at once (one-vs-one: the pairs).

    Returns:
        True when it fits every worker (or no worker has a memory limit).
    """
    workers = [w for w in worker_memory(client, SCAN_MODULES, SCAN_IMPORT_BYTES)
               if w.limit > 0]
    if not workers:
        return True
    threads = {w: int(t) for w, t in client.nthreads().items()}
    total_threads = max(1, sum(threads.values()))
    per_row = (ds.estimated_nbytes() / max(ds.n_rows, 1) if ds.is_sparse
               else 4.0 * ds.n_features) + 8   # label, weight
    scan = scan_task_bytes(int(max(ds.partition_rows, default=0)), per_row, n_problems)
    for w in workers:
        mine = threads.get(w.address, 1)
        rows = ds.n_rows * mine / total_threads
        held = min(screening_store.capacity(w.limit), int(rows * n_problems * 8))
        room = (w.usable - headroom(w) if w.usable is not None
                else w.limit - w.baseline)
        if rows * per_row + scan * mine + held > room:
            return False
    return True


def fit_memory_plan(client, parts: PartitionSet, problems: list[ProblemState],
                    cfg: RunConfig) -> tuple[MemoryPlan, list[ProblemState], RunConfig]:
    """The fit's memory plan (``plan_memory`` with the workers measured now), and the
    problems and settings it changes: the solver's kernel cache shrunk to what the plan
    affords, the direct route dropped when all rows do not fit a worker.

    Raises:
        ClusterError: a worker is too small for the smallest scan task (one line), or
            ``route='direct'`` was asked for and all rows do not fit a worker.
    """
    n = parts.n_rows
    r = sample_size_for(problems, min(cfg.sample_size, n), n)
    workers = worker_memory(client, SCAN_MODULES, SCAN_IMPORT_BYTES,
                            ("randsvm_dist.exact.scan.partition:warm_scan",
                             (problems[0].solver.kernel, parts.is_sparse, parts.n_features)))
    limits = [w.limit for w in workers if w.limit > 0]
    plan = plan_memory(workers, {w: int(t) for w, t in client.nthreads().items()},
                       parts.sizes, parts.n_features, bytes_per_row(parts), parts.is_sparse,
                       parts.futures is not None, len(problems), r,
                       max(p.solver.cache_size for p in problems),
                       screening_store.capacity(min(limits) if limits else None))
    if not plan.limited:
        return plan, problems, cfg
    problems = [replace(p, solver=replace(p.solver, cache_size=min(p.solver.cache_size,
                                                                   plan.cache_mb)))
                for p in problems]
    if not plan.direct_fits:
        if cfg.route == "direct":
            raise ClusterError(
                f"route='direct' solves all {n:,} rows on one worker, which needs more "
                f"than the {plan.usable / MB:.0f} MB its memory limit leaves; use "
                "route='sample' or 'auto'")
        cfg = replace(cfg, route="sample")
    return plan, problems, cfg
