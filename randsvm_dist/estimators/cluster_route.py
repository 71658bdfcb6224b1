"""The cluster route's steps of a RandSVM fit (data on the Dask workers), apart from the
estimator's parameters and attributes: the fit's settings (``FitSetup``), scaling learnt on
the workers, the seed rows, the checkpoint. ``RandSVMBase._fit_partitions`` runs them in
this order around ``exact.driver.run_randsvm``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from randsvm_dist.estimators.progress_log import log
from randsvm_dist.exact.state import RunConfig
from randsvm_dist.numerics.kernels import Kernel


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


def log_cluster_start(parts, setup: FitSetup, gap_tol: float) -> None:
    """The cluster route's first progress line (logger ``randsvm_dist``, INFO)."""
    log.info("RandSVM: %d rows, %d features, %d partitions (%s), %d problem(s), "
             "k=%s, r=%d, gap_tol=%g", parts.n_rows, parts.n_features, parts.n_partitions,
             "cached" if parts.futures is not None else "re-read each pass",
             len(setup.problems), setup.k, setup.r, gap_tol)
