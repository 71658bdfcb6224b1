"""The scan's dispatch: scan tasks over row ranges of the partitions, balanced over the
workers' threads and run where their rows live, and the sum of their answers.

Per scan the driver's models and requests travel to the workers once (``ScanInputs``, a
future every task shares: each worker fetches it once); each task runs
``partition.scan_partition_task`` on its rows and keeps their screening bounds on its worker,
keyed by the rows' first global index, so the next scan is sent where they are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import put
from randsvm_dist.engine.partitions import PartitionSet, empty_rows, placed, vstack_rows
from randsvm_dist.exact.scan.partition import (
    ProblemRequest,
    ScanAnswer,
    ScanInputs,
    ScanModel,
    row_range,
    scan_partition_task,
)
from randsvm_dist.exact.scan.reread import scan_reread_task
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
    """One pass over all rows.

    ``efficiency`` = compute_seconds / (threads x wall_seconds): the share of the cluster's
    threads the scan kept busy (1: every thread scanned from the first task's submission to
    the last answer).
    """

    per_part: list           # per task: list of ProblemScan (None for finished problems)
    workers: dict            # (first global row, rows) of each task -> worker holding its
    #                          screening bounds (tasks whose bounds were not kept: absent)
    n_evaluated: int         # rows whose decision values were computed in full
    compute_seconds: float   # summed over the scan tasks
    n_screened: int = 0      # rows of an active problem screened out (not evaluated in full)
    kernel_evals: int = 0    # kernel evaluations: the tasks' and the model delta's
    cpu_seconds: float = 0.0  # summed CPU time of the scan tasks' threads
    wall_seconds: float = 0.0  # from planning the tasks to the last answer
    threads: int = 1         # worker threads of the cluster during the scan
    task_rows: dict = field(default_factory=dict)  # worker -> rows its tasks scanned
    full_evals: int = 0      # kernel evaluations of the rows evaluated in full
    worker_rss: int = 0      # the largest worker memory at the end of a task (bytes)

    @property
    def efficiency(self) -> float:
        """Summed task compute seconds over (threads x wall seconds), in [0, 1]."""
        return self.compute_seconds / max(self.threads * self.wall_seconds, 1e-12)


@dataclass(frozen=True)
class ScanTask:
    """Local rows lo..hi-1 of a partition, scanned on ``worker`` (None: wherever the
    scheduler puts it); ``local``: the worker holds the partition (else only these rows
    are sent to it, cut where the partition lives)."""

    partition: int
    lo: int
    hi: int
    worker: str | None = None
    local: bool = True


_NO_MODEL = ScanModel(None, None, np.zeros((0, 0)), np.zeros(0))


def run_scan(client, parts: PartitionSet, model: ScanModel | None,
             requests: list[ProblemRequest | None], run: str = "", iteration: int = 0,
             placement: dict | None = None) -> ScanResult:
    """Scan every row on the workers (see ``partition.scan_partition_task``).

    ``run``/``iteration`` key the screening bounds in the workers' ``screening_store``;
    ``placement`` (the previous scan's ``workers``) keeps each partition's rows on the
    worker that scanned them last, where their bounds are, when it still holds them (see
    ``plan_scan``). The models and requests are shipped once (a future every task shares).

    Returns:
        ScanResult.
    """
    t0 = time.perf_counter()
    inputs = put(client, ScanInputs(model or _NO_MODEL, requests, run, iteration))
    threads = {w: int(n) for w, n in client.nthreads().items()}
    holders = _holders(client, parts)
    tasks = plan_scan(parts.sizes, holders, threads, parts.futures is not None,
                      _preferred(parts, placement or {}))
    if parts.futures is None and parts.dataset is not None:
        answers = _reread_answers(client, parts, tasks, inputs, threads)
    else:
        futures = [client.submit(scan_partition_task, _source(client, parts, t, holders),
                                 inputs, int(parts.offsets[t.partition] + t.lo),
                                 _local_rows(parts, t), pure=False, retries=2,
                                 **placed(t.worker))
                   for t in tasks]
        names = [f"partition {t.partition} rows {t.lo}-{t.hi}" for t in tasks]
        answers = gather(client, futures, "the violator scan", names)
    delta_evals = model.delta.kernel_evals if model and model.delta is not None else 0
    return _scan_result(parts, tasks, answers, delta_evals, time.perf_counter() - t0,
                        max(1, sum(threads.values())))


def _reread_answers(client, parts: PartitionSet, tasks: list[ScanTask], inputs,
                    threads: dict[str, int]) -> list[ScanAnswer]:
    """The answers of whole-partition ``tasks`` on re-read data: each worker's partitions
    cut into SCAN_TASKS_PER_THREAD runs per thread, each run one task that reads the next
    partition while it scans the current (``reread.scan_reread_task``); the answers in
    the order of ``tasks``."""
    runs: dict[str | None, list[list[int]]] = {}
    for w in dict.fromkeys(t.worker for t in tasks):
        mine = [k for k, t in enumerate(tasks) if t.worker == w]
        n_runs = max(1, min(len(mine), SCAN_TASKS_PER_THREAD * threads.get(w, 1)))
        edges = np.linspace(0, len(mine), n_runs + 1).round().astype(int)
        runs[w] = [mine[a:b] for a, b in zip(edges[:-1], edges[1:]) if b > a]
    flat = [(w, run) for w, rs in runs.items() for run in rs]
    futures = [client.submit(scan_reread_task, parts.dataset,
                             [(tasks[k].partition, int(parts.offsets[tasks[k].partition]))
                              for k in run], parts.coding, inputs, parts.transform,
                             pure=False, retries=2, **placed(w))
               for w, run in flat]
    names = ["partitions " + ", ".join(str(tasks[k].partition) for k in run)
             for _, run in flat]
    answers: list = [None] * len(tasks)
    for (_, run), got in zip(flat, gather(client, futures, "the violator scan", names)):
        for k, a in zip(run, got):
            answers[k] = a
    return answers


def _scan_result(parts: PartitionSet, tasks: list, answers: list[ScanAnswer],
                 delta_evals: int, wall_seconds: float, threads: int) -> ScanResult:
    """The scan tasks' answers summed into one ScanResult (``run_scan``)."""
    task_rows: dict = {}
    for t, a in zip(tasks, answers):
        task_rows[a.ran_on] = task_rows.get(a.ran_on, 0) + t.hi - t.lo
    return ScanResult([a.problems for a in answers],
                      {(int(parts.offsets[t.partition] + t.lo), t.hi - t.lo): a.worker
                       for t, a in zip(tasks, answers) if a.worker is not None},
                      sum(a.n_evaluated for a in answers), sum(a.seconds for a in answers),
                      sum(a.n_screened for a in answers),
                      delta_evals + sum(a.kernel_evals for a in answers),
                      sum(a.cpu_seconds for a in answers), wall_seconds, threads, task_rows,
                      sum(a.full_evals for a in answers),
                      max((a.rss for a in answers), default=0))


def _holders(client, parts: PartitionSet) -> list[list[str]]:
    """The workers holding each partition (empty when re-read from files, or not built
    yet)."""
    if parts.futures is None:
        return [[] for _ in range(parts.n_partitions)]
    who = client.who_has(parts.futures)
    return [sorted(who.get(f.key, ())) for f in parts.futures]


def _preferred(parts: PartitionSet, placement: dict) -> dict[int, str]:
    """partition -> the worker that scanned its first rows last time (from ``placement``)."""
    out: dict[int, str] = {}
    for (first, _), worker in sorted(placement.items()):
        i = int(np.searchsorted(parts.offsets, first, side="right") - 1)
        out.setdefault(i, worker)
    return out


def _local_rows(parts: PartitionSet, task: ScanTask) -> tuple[int, int] | None:
    """The rows a task cuts from the partition it is given (None: all of it)."""
    whole = task.lo == 0 and task.hi == int(parts.sizes[task.partition])
    return None if whole or not task.local or parts.futures is None else (task.lo, task.hi)


def _source(client, parts: PartitionSet, task: ScanTask, holders: list[list[str]]):
    """What a task scans: the partition's future where it lives, else just its rows,
    cut on a worker holding the partition."""
    part = parts.partition(client, task.partition, task.worker)
    if task.local or parts.futures is None:
        return part
    where = holders[task.partition]
    return client.submit(row_range, part, task.lo, task.hi, pure=False, retries=2,
                         **({"workers": where, "allow_other_workers": True} if where else {}))


# Each worker's share of the rows is cut into SCAN_TASKS_PER_THREAD tasks per thread (a
# partition boundary near a cut takes its place), so every thread scans and a task stolen
# by an idle worker is short; no task is cut below SCAN_MIN_ROWS rows (a task costs the
# scheduler and the worker a few milliseconds whatever its size).
SCAN_TASKS_PER_THREAD = 2
SCAN_MIN_ROWS = 2048


def plan_scan(sizes, holders: list[list[str]], threads: dict[str, int], splittable: bool,
              preferred: dict[int, str] | None = None) -> list[ScanTask]:
    """The scan's tasks: every row in exactly one task, each worker's rows in proportion to
    its threads, each row scanned where its partition lives unless that would leave a
    worker with less than its share.

    Rows go first to a worker holding their partition (``preferred[i]`` first: where the
    partition's bounds are), up to the worker's share; what is left over is cut into
    ranges for the workers below their share (only those rows travel). Partitions that
    cannot be split (``splittable`` False: re-read from files per task) go whole to the
    worker with the least rows per thread, largest first. Every worker ends within
    SCAN_MIN_ROWS rows of its share when the partitions can be split. A partition no
    worker holds yet (still being built) is one task the scheduler places where it will
    be, outside the shares.

    Args:
        sizes: rows of each partition.
        holders: per partition, the workers holding it (may be empty).
        threads: worker address -> threads.
        splittable: partitions may be scanned in row ranges.
        preferred: partition -> the worker to try first.

    Returns:
        the tasks, in partition and row order.
    """
    sizes = [int(s) for s in sizes]
    preferred = preferred or {}
    workers = sorted(w for w, t in threads.items() if t > 0)
    if not workers:
        return [ScanTask(i, 0, s) for i, s in enumerate(sizes) if s]
    if not splittable:
        return _whole(sizes, holders, threads, workers, preferred)
    unplaced = {i for i, h in enumerate(holders) if sizes[i] and not set(h) & set(workers)}
    n = sum(sizes) - sum(sizes[i] for i in unplaced)
    free = _shares(n, threads, workers)
    min_rows = max(1, min(SCAN_MIN_ROWS, n // (8 * sum(threads[w] for w in workers))))
    segments: dict[str, list] = {w: [] for w in workers}
    left = _rows_to_holders(sizes, unplaced, holders, preferred, free, min_rows, segments)
    _rows_left_over(left, holders, threads, preferred, free, min_rows, segments)
    tasks = _segment_tasks(segments, threads, min_rows)
    tasks += [ScanTask(i, 0, sizes[i]) for i in sorted(unplaced)]
    return sorted(tasks, key=lambda t: (t.partition, t.lo))


def _rows_to_holders(sizes: list[int], unplaced: set[int], holders: list[list[str]],
                     preferred: dict[int, str], free: dict[str, int], min_rows: int,
                     segments: dict[str, list]) -> list[tuple[int, int, int]]:
    """Each partition's rows to the workers holding it (its preferred worker first), up
    to each worker's share.

    Args:
        sizes: rows of each partition.
        unplaced: partitions left out (no worker holds them yet).
        holders: per partition, the workers holding it.
        preferred: partition -> the worker to try first.
        free: worker -> rows of its share not yet given; lowered by the rows given.
        min_rows: the fewest rows a segment is cut to (see ``_take``).
        segments: worker -> its (partition, lo, hi, local) segments; appended to.

    Returns:
        the (partition, lo, hi) ranges no holder took, in partition order.
    """
    left = []
    for i, size in enumerate(sizes):
        if i in unplaced:
            continue
        lo = 0
        mine = sorted((w for w in holders[i] if w in free),
                      key=lambda w: (w != preferred.get(i), w))
        for w in mine:
            take = _take(size - lo, free[w], min_rows)
            if take:
                segments[w].append((i, lo, lo + take, True))
                free[w] -= take
                lo += take
        if lo < size:
            left.append((i, lo, size))
    return left


def _rows_left_over(left: list[tuple[int, int, int]], holders: list[list[str]],
                    threads: dict[str, int], preferred: dict[int, str],
                    free: dict[str, int], min_rows: int, segments: dict[str, list]) -> None:
    """The ranges no holder took, cut among the workers with the most of their share left
    per thread (a partition's preferred worker on ties).

    Args:
        left: (partition, lo, hi) ranges to give out.
        holders: per partition, the workers holding it (marks a segment local).
        threads: worker address -> threads (only workers in ``free`` take rows).
        preferred: partition -> the worker preferred on ties.
        free: worker -> rows of its share not yet given; lowered by the rows given.
        min_rows: the fewest rows a segment is cut to (see ``_take``).
        segments: worker -> its (partition, lo, hi, local) segments; appended to.
    """
    for i, lo, hi in left:
        while lo < hi:
            w = max(free, key=lambda v: (free[v] / threads[v], v == preferred.get(i)))
            take = _take(hi - lo, free[w], min_rows) or min(hi - lo, min_rows)
            segments[w].append((i, lo, lo + take, w in holders[i]))
            free[w] -= take
            lo += take


def _segment_tasks(segments: dict[str, list], threads: dict[str, int], min_rows: int
                   ) -> list[ScanTask]:
    """Each worker's segments cut into SCAN_TASKS_PER_THREAD tasks per thread (see ``_cut``).

    Args:
        segments: worker -> its (partition, lo, hi, local) segments.
        threads: worker address -> threads.
        min_rows: the fewest rows a task is cut to.

    Returns:
        the tasks, worker by worker in ``segments`` order.
    """
    return [ScanTask(i, a, b, w, local)
            for w, mine in segments.items()
            for i, a, b, local in _cut(mine, SCAN_TASKS_PER_THREAD * threads[w], min_rows)]


def _shares(n: int, threads: dict[str, int], workers: list[str]) -> dict[str, int]:
    """Each worker's rows, in proportion to its threads, summing to n (largest remainders)."""
    total = sum(threads[w] for w in workers)
    exact = {w: n * threads[w] / total for w in workers}
    share = {w: int(exact[w]) for w in workers}
    for w in sorted(workers, key=lambda v: share[v] - exact[v])[:n - sum(share.values())]:
        share[w] += 1
    return share


def _take(rest: int, free: int, min_rows: int) -> int:
    """Rows of ``rest`` a worker with ``free`` rows of its share left takes: all of them
    when less than min_rows would remain, else its share (none when that is under
    min_rows)."""
    if free <= 0:
        return 0
    if rest - free < min_rows:
        return rest
    return free if free >= min_rows else 0


def _cut(segments: list, pieces: int, min_rows: int) -> list:
    """A worker's segments (partition, lo, hi, local) cut at ``pieces`` equal shares of
    their rows, where both sides keep at least min_rows."""
    total = sum(b - a for _, a, b, _ in segments)
    marks = [round(k * total / pieces) for k in range(1, pieces)]
    out, start = [], 0
    for i, a, b, local in segments:
        edges = [a]
        for m in marks:
            at = a + m - start
            if edges[-1] + min_rows <= at <= b - min_rows:
                edges.append(at)
        edges.append(b)
        out += [(i, x, y, local) for x, y in zip(edges[:-1], edges[1:])]
        start += b - a
    return out


def _whole(sizes: list[int], holders: list[list[str]], threads: dict[str, int],
           workers: list[str], preferred: dict[int, str]) -> list[ScanTask]:
    """Whole partitions to the workers (largest first, to the fewest rows per thread;
    a partition's preferred worker or holder when it is among those)."""
    load = {w: 0 for w in workers}
    tasks = []
    for i in sorted(range(len(sizes)), key=lambda j: (-sizes[j], j)):
        if not sizes[i]:
            continue
        low = min(load[w] / threads[w] for w in workers)
        fits = [w for w in [preferred.get(i), *holders[i]]
                if w in load and load[w] / threads[w] <= low]
        w = fits[0] if fits else min(workers, key=lambda v: (load[v] / threads[v], v))
        load[w] += sizes[i]
        tasks.append(ScanTask(i, 0, sizes[i], w, w in holders[i]))
    return sorted(tasks, key=lambda t: t.partition)


# Row blocks of the driver-side work sent to the workers have at least this many rows.
BLOCK_MIN_ROWS = 256


def row_blocks_on_workers(client, fn, shared, n_rows: int, what: str) -> list:
    """``fn(shared, a, b)`` for blocks a..b of ``n_rows`` rows, one per worker thread, on
    the workers (``shared`` shipped once, as a future every block shares).

    Returns:
        the blocks' results, in row order.
    """
    n_blocks = max(1, min(sum(client.nthreads().values()), n_rows // BLOCK_MIN_ROWS))
    edges = np.linspace(0, n_rows, n_blocks + 1).astype(np.int64)
    shared_future = put(client, shared)
    futures = [client.submit(fn, shared_future, int(a), int(b), pure=False, retries=2)
               for a, b in zip(edges[:-1], edges[1:])]
    return gather(client, futures, what, [f"rows {a}-{b}" for a, b in zip(edges[:-1],
                                                                       edges[1:])])


def merged_scan(per_part, p: int, n_draw: int) -> dict:
    """Sum problem p's per-task answers; keep the n_draw smallest-key candidates."""
    scans = [s[p] for s in per_part]
    keys = np.concatenate([s.keys for s in scans])
    rows = np.concatenate([s.rows for s in scans])
    pick = np.argsort(keys, kind="stable")[:n_draw]
    total = {name: sum(getattr(s, name) for s in scans)
             for name in ("n_rows", "n_violators", "n_errors", "loss", "loss_ws")}
    total["max_slack"] = max(s.max_slack for s in scans)
    total["draw"] = np.sort(rows[pick])
    return total
