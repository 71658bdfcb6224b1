"""The two routes of a RandSVM fit, apart from the estimator's parameters and attributes.

The cluster route (data on the Dask workers) in named steps: scaling, seeding, the
checkpoint, the start line; the in-process route (``exact.in_process``: arrays solved in
the client's process when the cost model sends them to one solve). Both build their
problems from a ``RowTotals`` and report each iteration with ``log_iteration``; each step
that ``RandSVMBase._fit`` times is recorded in the estimator's ``phases_``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from randsvm_dist.exact.cancellation import cancel_check
from randsvm_dist.exact.route import cold_backend, judged_by_shape, plan_route
from randsvm_dist.exact.state import RunConfig
from randsvm_dist.numerics.kernels import Kernel

log = logging.getLogger("randsvm_dist")


def log_iteration(record: dict) -> None:
    """The per-iteration progress line (logger ``randsvm_dist``, INFO)."""
    log.info(
        "iter %2d %s: sample %6d  SV %6d  violators %8d (%.4f)  dual %.6g  "
        "gap %.2e  solve %.1fs scan %.1fs  total %.1fs%s",
        record["iteration"], record.get("label", record["problem"]), record["sample_size"],
        record["n_support"], record["n_violators"], record["violator_fraction"],
        record["dual_objective"], record["relative_gap"], record["solve_seconds"],
        record["scan_seconds"], record["seconds"],
        f"  stop: {record['stop_reason']}" if record["stop_reason"] else "",
    )


class RowTotals(Protocol):
    """What the problems are built from: the data's rows, classes and weights, counted on
    the workers (``WorkerTotals``) or in the client (``exact.in_process.InMemoryRows``)."""

    @property
    def n_rows(self) -> int: ...

    @property
    def n_features(self) -> int: ...

    def class_counts(self, n_classes: int) -> np.ndarray:
        """Rows of each class (the user's rows, collapsed copies counted)."""

    def positive_class_counts(self, n_classes: int) -> np.ndarray | None:
        """Rows of positive weight of each class; None when no row carries a weight."""

    def weight_total(self) -> float:
        """The sum of the positive sample weights."""


@dataclass
class WorkerTotals:
    """RowTotals of partitions on the workers."""

    client: object
    parts: object

    @property
    def n_rows(self) -> int:
        return self.parts.n_rows

    @property
    def n_features(self) -> int:
        return self.parts.n_features

    def class_counts(self, n_classes: int) -> np.ndarray:
        from randsvm_dist.engine.row_totals import class_counts

        return class_counts(self.client, self.parts, n_classes)

    def positive_class_counts(self, n_classes: int) -> np.ndarray | None:
        from randsvm_dist.engine.row_totals import positive_class_counts

        if not self.parts.weighted:
            return None
        return positive_class_counts(self.client, self.parts, n_classes)

    def weight_total(self) -> float:
        from randsvm_dist.engine.row_totals import weight_total

        return weight_total(self.client, self.parts)


@dataclass
class FitSetup:
    """A fit's settings: the kernel and gamma, k and r, the rows, the problems, the run's
    config."""

    kernel: Kernel
    gamma: float
    k: int | None
    r: int
    n_rows: int
    problems: list
    cfg: RunConfig


# -- the cluster route's steps ---------------------------------------------------------------
def scale_partitions(est, client, parts, dataset):
    """Learn the estimator's ``scale`` on the workers and apply it (sets ``est.scaler_``).

    Returns:
        (parts, dataset): the scaled partitions, and the Dataset for streaming seeds (None
        once scaled: the file's rows are no longer the rows fitted).
    """
    est.scaler_ = None
    if est.scale is None:
        return parts, dataset
    from randsvm_dist.distributed.scaling import make_scaler

    est.scaler_ = make_scaler(est.scale).fit_partitions(client, parts)
    return est.scaler_.transform_partitions(client, parts), None


def seed_setup(est, client, parts, classes, setup: FitSetup, dataset) -> dict | None:
    """Draw the estimator's ``seed`` rows (``exact.seeding``) into ``setup.cfg``.

    Returns:
        The seed's record (``seed_info_``), or None without a seed.
    """
    if est.seed is None:
        return None
    from randsvm_dist.exact.seeding import seed_rows

    problems, cfg = setup.problems, setup.cfg
    seeds, info = seed_rows(client, parts, est.seed, classes, [p.kind for p in problems],
                            min(setup.r, parts.n_rows), problems[0].solver.C, setup.gamma,
                            cfg.random_state, dataset)
    setup.cfg = replace(cfg, seed_rows=seeds)
    log.info("seed %s: %s rows in %.1f s", info["seed"], info["seed_rows"],
             info["seed_seconds"])
    return info


def log_cluster_start(parts, setup: FitSetup, gap_tol: float) -> None:
    """The cluster route's first progress line (logger ``randsvm_dist``, INFO)."""
    log.info("RandSVM: %d rows, %d features, %d partitions (%s), %d problem(s), "
             "k=%s, r=%d, gap_tol=%g", parts.n_rows, parts.n_features, parts.n_partitions,
             "cached" if parts.futures is not None else "re-read each pass",
             len(setup.problems), setup.k, setup.r, gap_tol)


def open_checkpoint(path: str | None, setup: FitSetup, parts, classes):
    """The run's ``exact.checkpoint.Checkpoint`` at ``path`` (None: no checkpoint)."""
    if path is None:
        return None
    from randsvm_dist.exact.checkpoint import Checkpoint, run_fingerprint

    return Checkpoint(path, run_fingerprint(setup.cfg, setup.problems, parts, classes))


def record_seed(history: list[dict], seed_info: dict | None) -> None:
    """Add the seed's record to the history's first iteration (of every problem)."""
    if seed_info is None:
        return
    for h in history:
        if h["iteration"] == 1:
            h.update(seed_info)


# -- the in-process route ---------------------------------------------------------------------
def fit_in_process(est, data, y, sample_weight) -> bool:
    """Fit ``est`` in the client's process when the rows are in its memory (arrays, not a
    Parquet data set or a Dask collection) and the cost model, told the machine's
    cores, says one solve of all rows beats sampling; no cluster is started. Asks
    ``est._in_process_allowed()`` first (its parameters may need the workers).

    Returns:
        True when fitted so (``est``'s fitted attributes and ``phases_`` set); False: the
        fit belongs on the cluster.
    """
    from randsvm_dist.engine.inputs import is_dask_collection, open_dataset
    from randsvm_dist.exact.in_process import in_memory_rows, machine, run_in_process

    if (not est._in_process_allowed() or open_dataset(data) is not None
            or is_dask_collection(data) or is_dask_collection(y)):
        return False
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) == 2 and shape[0] > 0 and judged_by_shape(
            getattr(data, "nbytes", np.inf), est._may_collapse()):  # before any copy
        cfg = RunConfig(k=None, sample_size=est._sample_sizes(shape[0])[1], route=est.route)
        if plan_route(cfg, [], shape[0], cfg.sample_size, shape[1], machine(),
                      "onedal", in_memory=True)[0] != "direct":  # not even at oneDAL's speed
            return False
    est.phases_ = {}
    rows = in_memory_rows(data, y, est._task, sample_weight, est._may_collapse(),
                          est.solver, est.kernel)
    t = time.perf_counter()
    setup = est._setup(rows, rows.classes, rows.feature_variance)
    route, why = plan_route(setup.cfg, setup.problems, rows.n_rows, setup.r,
                            rows.n_features, machine(),
                            cold_backend(setup.problems, rows.weighted, rows.is_sparse,
                                         rows.n_features), in_memory=True)
    if route != "direct":
        return False
    est.phases_ = {**rows.phases, "setup": time.perf_counter() - t}
    est.scaler_, est.seed_info_ = None, None
    log.info("RandSVM in the client's process: %d rows, %d features, %d problem(s): %s",
             rows.n_rows, rows.n_features, len(setup.problems), why)
    t = time.perf_counter()
    states, history = run_in_process(rows, setup.problems, setup.cfg, why,
                                     progress=log_iteration, cancelled=cancel_check())
    est.phases_["iterations"] = time.perf_counter() - t
    est._adopt_run(states, history, setup, rows.classes, rows.n_features,
                   rows.original_rows if rows.n_collapsed else None)
    return True
