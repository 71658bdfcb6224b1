"""The scan's dispatch: one scan task per partition (or row range) on the workers, and the
sum of their answers.

The driver's models travel to the tasks once (``ScanModel``, a future they share); each
task runs ``scan.scan_partition_task`` and keeps its screening bounds on its worker, so the
next scan is sent where they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import put
from randsvm_dist.engine.partitions import PartitionSet, empty_rows, placed, vstack_rows
from randsvm_dist.exact.scan import ProblemRequest, ScanAnswer, ScanModel, scan_partition_task
from randsvm_dist.exact.solving import total_threads
from randsvm_dist.exact.state import ProblemState, SupportModel


def scan_model(problems: list[ProblemState], kernel, sparse: bool, n_features: int
               ) -> ScanModel:
    """The problems' current models as one ScanModel (their SVs united)."""
    rows, sv, coef = united_support([p.model for p in problems], sparse, n_features)
    return ScanModel(kernel, sv, coef.T.astype(np.float32),
                     np.array([p.model.intercept for p in problems]))


def united_support(models: list[SupportModel], sparse: bool, n_features: int):
    """(sorted union of the models' SV rows, their features, coef (n_models, n_union))."""
    rows = np.concatenate([m.rows for m in models]) if models else np.empty(0, np.int64)
    union, first = np.unique(rows, return_index=True)
    stacked = vstack_rows([m.X for m in models], sparse)
    sv = stacked[first] if stacked is not None else empty_rows(n_features, sparse)
    coef = np.zeros((len(models), len(union)))
    for j, m in enumerate(models):
        coef[j, np.searchsorted(union, m.rows)] = m.coef
    return union, sv, coef


@dataclass
class ScanResult:
    """One pass over all partitions."""

    per_part: list           # per partition: list of ProblemScan (None for finished ones)
    workers: list            # per partition: the worker holding its screening bounds, or None
    n_evaluated: int         # rows whose decision values were computed in full
    compute_seconds: float   # summed over the scan tasks
    n_screened: int = 0      # rows of an active problem screened out (not evaluated in full)
    kernel_evals: int = 0    # kernel evaluations: the tasks' and the model delta's
    cpu_seconds: float = 0.0  # summed CPU time of the scan tasks' threads


_NO_MODEL = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))


def run_scan(client, parts: PartitionSet, model: ScanModel | None,
             requests: list[ProblemRequest | None], run: str = "", iteration: int = 0,
             placement: list | None = None) -> ScanResult:
    """Scan every partition on the workers (see ``scan.scan_partition_task``).

    ``run``/``iteration`` key the screening bounds in the workers' ``screening_store``;
    ``placement`` (the previous scan's ``workers``) sends each partition's scan to the worker
    holding its bounds, when that worker is still there (any other may run it, evaluating
    every row). The model is shipped once (a future every task shares).

    Returns:
        ScanResult.
    """
    model_future = put(client, model) if model else _NO_MODEL
    tasks = scan_tasks(parts, total_threads(client))
    placement = _task_placement(client, tasks, placement)
    futures = []
    for k, (i, rows) in enumerate(tasks):
        where = placement[k] if placement is not None else None
        futures.append(client.submit(
            scan_partition_task, parts.partition(client, i, where), model_future, requests,
            run, k, iteration, rows, pure=False, retries=2,
            **placed(where)))
    names = [f"partition {i}" + (f" rows {rows[0]}-{rows[1]}" if rows else "")
             for i, rows in tasks]
    answers: list[ScanAnswer] = gather(client, futures, "the violator scan", names)
    delta_evals = model.delta.kernel_evals if model and model.delta is not None else 0
    return ScanResult([a.problems for a in answers], [a.worker for a in answers],
                      sum(a.n_evaluated for a in answers), sum(a.seconds for a in answers),
                      sum(a.n_screened for a in answers),
                      delta_evals + sum(a.kernel_evals for a in answers),
                      sum(a.cpu_seconds for a in answers))


def _task_placement(client, tasks: list, placement: list | None) -> list | None:
    """The worker of each scan task: the previous scan's (when it had the same tasks),
    else row ranges dealt out over the workers (all ranges of a partition would otherwise
    run where it lives), else None (where the data is)."""
    if placement is not None and len(placement) != len(tasks):
        placement = None
    if placement is None and any(rows is not None for _, rows in tasks):
        workers = sorted(client.scheduler_info().get("workers", {}))
        placement = [workers[k % len(workers)] if rows is not None and workers else None
                     for k, (_, rows) in enumerate(tasks)]
    return placement


# Scan tasks per worker thread: fewer partitions than this are scanned in row ranges, so
# every core scans (one 1e5-row partition on 2 workers used one core) and the last task
# is short; ranges have at least SCAN_MIN_ROWS rows.
SCAN_TASKS_PER_THREAD = 2
SCAN_MIN_ROWS = 10_000


def scan_tasks(parts: PartitionSet, threads: int) -> list[tuple[int, tuple | None]]:
    """The scan's tasks: (partition, (lo, hi) local rows or None for all of it).

    Partitions are split only when they are held in worker memory (a split partition read
    from files would be read once per range)."""
    n_parts = parts.n_partitions
    want = SCAN_TASKS_PER_THREAD * threads
    if parts.futures is None or n_parts >= want:
        return [(i, None) for i in range(n_parts)]
    split = -(-want // n_parts)
    tasks: list[tuple[int, tuple | None]] = []
    for i, size in enumerate(parts.sizes):
        k = int(max(1, min(split, size // SCAN_MIN_ROWS)))
        cuts = np.linspace(0, int(size), k + 1).astype(np.int64)
        tasks += [(i, (int(a), int(b)) if k > 1 else None)
                  for a, b in zip(cuts[:-1], cuts[1:])]
    return tasks


def merged_scan(per_part, p: int, n_draw: int) -> dict:
    """Sum problem p's per-partition answers; keep the n_draw smallest-key candidates."""
    scans = [s[p] for s in per_part]
    keys = np.concatenate([s.keys for s in scans])
    rows = np.concatenate([s.rows for s in scans])
    pick = np.argsort(keys, kind="stable")[:n_draw]
    total = {name: sum(getattr(s, name) for s in scans)
             for name in ("n_rows", "n_violators", "n_errors", "loss", "loss_ws")}
    total["max_slack"] = max(s.max_slack for s in scans)
    total["draw"] = np.sort(rows[pick])
    return total
