"""One RandSVM fit, from its prepared input to its model: the functional core every fit
goes through (the estimators call it once and adopt its result; the ``train`` command,
jobs and grid search fit through the estimators).

    fit(client, inputs, problems, settings) -> FitResult

``inputs`` is the one prepared input (``engine.fit_input.prepare_fit_input``), ``problems``
what is solved (``exact.problems``), ``settings`` the run's parameters (``FitSettings``).
Arrays in this process's memory are solved here when the cost model says one solve of all
rows beats sampling and nothing needs the workers (``exact.in_process``; no cluster is
started). Everything else is placed on the workers (``engine.inputs.place``), scaled
there when asked (``distributed.scaling``), seeded (``exact.seeding``), checkpointed
(``exact.checkpoint``) and run by the sampling driver (``exact.driver.run_randsvm``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from randsvm_dist.core.seeds import resolve_seed
from randsvm_dist.engine.client import dask_client
from randsvm_dist.engine.fit_input import FitInput
from randsvm_dist.engine.inputs import place
from randsvm_dist.engine.partitions import original_rows
from randsvm_dist.engine.row_totals import WorkerTotals, feature_variance
from randsvm_dist.exact.bounds import support_bound
from randsvm_dist.exact.cancellation import cancel_check
from randsvm_dist.exact.driver import run_randsvm
from randsvm_dist.exact.in_process import in_memory_rows, machine, route_pilot, run_in_process
from randsvm_dist.exact.memory_plan import cache_fits
from randsvm_dist.exact.problems import ProblemSet
from randsvm_dist.exact.route import (
    auto_sample_size,
    cold_backend,
    judged_by_shape,
    pilot_pays,
    plan_route,
)
from randsvm_dist.exact.state import ProblemState, RunConfig
from randsvm_dist.model_files.libsvm_text import LibsvmModel
from randsvm_dist.numerics.kernels import Kernel, resolve_gamma
from randsvm_dist.solvers.params import SolverParams

log = logging.getLogger("randsvm_dist")

NO_LIMIT = 10**6  # max_iter=-1
HARD_MARGIN_C = 1e10  # C=np.inf (as scikit-learn: "equivalent to a very large C value")


@dataclass(frozen=True)
class FitSettings:
    """A fit's parameters besides the problems (the estimators' parameters of the same
    names; texts: ``core.parameter_texts``).

    Attributes:
        collapse: identical rows may become one weighted row (``engine.duplicates``).
        checkpoint, resume: a checkpoint directory, and whether to go on from it
            (``exact.checkpoint``).
    """

    kernel: str = "rbf"
    gamma: object = "scale"
    degree: int = 3
    coef0: float = 0.0
    k: object = None
    sample_size: object = "auto"
    bound_epsilon: float = 0.2
    bound_delta: float = 0.9
    separable: bool = False
    max_iter: int = 50
    tol: float = 1e-3
    violator_tol: float = 0.0
    gap_tol: float = 1e-3
    cache_size: float = 200.0
    random_state: int | None = None
    route: str = "auto"
    cache: object = "auto"
    solver: str = "auto"
    n_partitions: int | None = None
    scale: object = None
    seed: object = None
    collapse: bool = True
    checkpoint: str | None = None
    resume: bool = False


@dataclass(frozen=True)
class FitResult:
    """A fit's outcome.

    Attributes:
        model: the LIBSVM model (``model_files.libsvm_text.LibsvmModel``).
        support: the user's rows of its support vectors, in file order.
        states: the problems' final states (the solution: models, certificates, stops).
        history: one record per iteration and problem (``exact.history.IterationRecord``
            as a dict).
        classes: the sorted classes, or None.
        n_features, n_rows: of the rows fitted (n_rows after collapsing duplicates).
        kernel, gamma, k, sample_size: the kernel and the run's k and first sample size.
        random_seed: the resolved ``random_state``.
        scaler: the scaling learnt on the workers, or None.
        seed_info: the seed's record, or None.
        attributes: fitted attributes the problems decided (e.g. ``class_weight_``).
        phases: seconds of 'placement', 'duplicates' (in this process only), 'setup',
            'iterations', 'assembly', and 'after' when an ``after`` ran.
        on_cluster: fitted on the workers (False: in this process).
        after: what the caller's ``after`` returned (None without one).
    """

    model: LibsvmModel
    support: np.ndarray
    states: tuple
    history: list
    classes: np.ndarray | None
    n_features: int
    n_rows: int
    kernel: Kernel
    gamma: float
    k: int | None
    sample_size: int
    random_seed: int
    scaler: object
    seed_info: dict | None
    attributes: dict
    phases: dict
    on_cluster: bool
    after: object = None

    @property
    def stop_reasons(self) -> list[str]:
        """Each problem's stop reason."""
        return [p.stop_reason for p in self.states]

    @property
    def relative_gaps(self) -> np.ndarray:
        """Each problem's certified relative gap."""
        return np.array([p.relative_gap for p in self.states])


@dataclass(frozen=True)
class _Setup:
    """The kernel and gamma, k and r, the rows, the problems, the run's config, the
    attributes the problems decided, the resolved seed."""

    kernel: Kernel
    gamma: float
    k: int | None
    r: int
    n_rows: int
    problems: list
    cfg: RunConfig
    attributes: dict
    random_seed: int


AfterFit = Callable[[object, object, FitResult], object]


def fit(client, inputs: FitInput, problems: ProblemSet, settings: FitSettings, *,
        after: AfterFit | None = None) -> FitResult:
    """Fit ``problems`` on ``inputs``: in this process or on the cluster.

    Args:
        client: a ``distributed.Client``, a scheduler address, or None (the known or
            embedded cluster, resolved only when the fit needs the workers; None also lets
            arrays in memory be solved in this process).
        inputs: the prepared input (``engine.fit_input``).
        problems: what is solved (``exact.problems``).
        settings: the run's parameters.
        after: called as ``after(client, partitions, result)`` once the fit is done,
            while its partitions are on the workers (the classifier's Platt scaling); what
            it returns is the result's ``after``. Given, the fit runs on the workers.

    Returns:
        FitResult.

    Raises:
        ParameterError, SchemaError: parameters that do not fit the data.
        ClusterError: the cluster cannot be reached.
        FitCancelled: the fit was cancelled (``exact.cancellation``).
    """
    if after is None and _in_process_allowed(client, inputs, settings):
        result = _fit_in_process(inputs, problems, settings)
        if result is not None:
            return result
    with _cluster(client, inputs) as c:
        t = time.perf_counter()
        parts, classes = _placed(c, inputs, problems.task, settings)
        phases = ({} if inputs.source == "partitions"
                  else {"placement": inputs.seconds + time.perf_counter() - t})
        t = time.perf_counter()
        parts, scaler, dataset = _scaled(c, parts, settings, inputs.dataset)
        setup = _setup(WorkerTotals(c, parts), classes, lambda: feature_variance(c, parts),
                       problems, settings)
        setup, seed_info = _seeded(c, parts, classes, setup, settings, dataset)
        _log_start(parts, setup, settings.gap_tol)
        ckpt = _checkpoint(settings.checkpoint, setup, parts, classes)
        phases["setup"] = time.perf_counter() - t
        t = time.perf_counter()
        states, history = run_randsvm(c, parts, setup.problems, setup.cfg,
                                      progress=log_iteration,
                                      checkpoint=ckpt.save if ckpt else None,
                                      resume=ckpt.load() if ckpt and settings.resume else None,
                                      cancelled=cancel_check())
        phases["iterations"] = time.perf_counter() - t
        _record_seed(history, seed_info)
        result = _result(states, history, setup, problems, classes, parts.n_features, phases,
                         (lambda rows: original_rows(c, parts, rows)) if parts.n_collapsed
                         else None, scaler, seed_info)
        if after is None:
            return result
        t = time.perf_counter()
        got = after(c, parts, result)
        phases["after"] = time.perf_counter() - t
        return replace(result, after=got)


def _in_process_allowed(client, inputs: FitInput, settings: FitSettings) -> bool:
    """Whether a fit may take the in-process route (``exact.in_process``): arrays in
    memory, route 'auto', no client named (a scheduler address or Client given keeps the
    fit on its cluster) and nothing that needs the workers (a scaling learnt on them, a
    seed, a checkpoint)."""
    return (inputs.source == "arrays" and settings.route == "auto" and client is None
            and settings.scale is None and settings.seed is None
            and settings.checkpoint is None)


def _cluster(client, inputs: FitInput):
    """The client of a fit on the workers: the one its partitions are on, else resolved
    (``engine.client.dask_client``)."""
    if inputs.source == "partitions":
        return contextlib.nullcontext(client)
    return dask_client(client)


def _placed(client, inputs: FitInput, task: str, settings: FitSettings):
    """(PartitionSet, classes) of the input on the workers."""
    if inputs.source == "partitions":
        return inputs.partitions, inputs.classes
    cache = settings.cache
    if cache == "auto":
        cache = inputs.source != "dataset" or cache_fits(client, inputs.dataset,
                                                         _pairs(inputs.dataset, task))
    return place(client, inputs, task, settings.n_partitions, bool(cache),
                 settings.collapse, "auto")


def _pairs(ds, task: str) -> int:
    """The problems a scan of a Dataset's rows scans at once (one-vs-one: the pairs)."""
    k = len(ds.classes) if task == "classification" and ds.classes is not None else 2
    return max(1, k * (k - 1) // 2)


def _sample_sizes(n: int, settings: FitSettings) -> tuple:
    """(k, r): the support-set stop (None: off) and the first sample's rows."""
    k_paper = support_bound(n, settings.bound_epsilon, settings.bound_delta,
                            settings.separable)
    k = k_paper if settings.k == "auto" else settings.k
    r = (auto_sample_size(n, k_paper) if settings.sample_size == "auto"
         else int(settings.sample_size))
    return k, r


def _setup(totals, classes, x_var: Callable[[], float], problems: ProblemSet,
           settings: FitSettings) -> _Setup:
    """The kernel, the problems and the run's settings for data of ``totals.n_rows``
    rows (``x_var``: the feature values' variance, asked for gamma='scale' only)."""
    rs = resolve_seed(settings.random_state)
    gamma = (resolve_gamma(settings.gamma, n_features=totals.n_features,
                           x_var=x_var() if settings.gamma == "scale" else None)
             if settings.kernel != "linear" else 1.0)
    kernel = Kernel(settings.kernel, gamma, int(settings.degree), float(settings.coef0))
    k, r = _sample_sizes(totals.n_rows, settings)
    C = float(problems.C)
    solver = SolverParams(HARD_MARGIN_C if np.isinf(C) else C, kernel, tol=float(settings.tol),
                          cache_size=float(settings.cache_size), backend=settings.solver)
    states, attributes = problems.states(totals, classes, solver)
    cfg = RunConfig(k=k, sample_size=r, max_iter=NO_LIMIT if settings.max_iter == -1
                    else int(settings.max_iter),
                    violator_tol=float(settings.violator_tol),
                    gap_tol=float(settings.gap_tol), margin_tol=float(settings.tol),
                    random_state=rs, route=settings.route)
    return _Setup(kernel, gamma, k, r, totals.n_rows, states, cfg, attributes, rs)


def _fit_in_process(inputs: FitInput, problems: ProblemSet, settings: FitSettings
                    ) -> FitResult | None:
    """The fit in this process when the cost model, told the machine's cores, says one
    solve of all rows beats sampling; None: the fit belongs on the cluster."""
    shape = inputs.X.shape
    if inputs.n_bytes is not None and judged_by_shape(inputs.n_bytes, settings.collapse):
        cfg = RunConfig(k=None, sample_size=_sample_sizes(shape[0], settings)[1],
                        route=settings.route)
        if plan_route(cfg, [], shape[0], cfg.sample_size, shape[1], machine(),
                      "onedal", in_memory=True)[0] != "direct":  # not even at oneDAL's speed
            return None
    rows = in_memory_rows(inputs, problems.task, settings.collapse, settings.solver,
                          settings.kernel)
    t = time.perf_counter()
    setup = _setup(rows, rows.classes, rows.feature_variance, problems, settings)
    backend = cold_backend(setup.problems, rows.weighted, rows.is_sparse, rows.n_features)
    route, why = plan_route(setup.cfg, setup.problems, rows.n_rows, setup.r,
                            rows.n_features, machine(), backend, in_memory=True)
    if route == "direct" and setup.cfg.route == "auto" and pilot_pays(rows.n_rows, setup.r):
        pilot = route_pilot(rows, setup.problems, setup.r, setup.cfg.random_state, backend)
        route, why = plan_route(setup.cfg, setup.problems, rows.n_rows, setup.r,
                                rows.n_features, machine(), backend, in_memory=True,
                                pilot=pilot)
        why = f"the guess said one solve; {why}"
    if route != "direct":
        return None
    phases = {**rows.phases, "setup": time.perf_counter() - t}
    phases["placement"] += inputs.seconds
    log.info("RandSVM in the client's process: %d rows, %d features, %d problem(s): %s",
             rows.n_rows, rows.n_features, len(setup.problems), why)
    t = time.perf_counter()
    states, history = run_in_process(rows, setup.problems, setup.cfg, why,
                                     progress=log_iteration, cancelled=cancel_check())
    phases["iterations"] = time.perf_counter() - t
    return replace(_result(states, history, setup, problems, rows.classes, rows.n_features,
                           phases, rows.original_rows if rows.n_collapsed else None, None,
                           None), on_cluster=False)


def _result(states: list[ProblemState], history: list[dict], setup: _Setup,
            problems: ProblemSet, classes, n_features: int, phases: dict,
            user_rows: Callable | None, scaler, seed_info: dict | None) -> FitResult:
    """The FitResult of a run: its model assembled (``phases['assembly']``), its support
    vectors named by the user's rows (``user_rows``: the run's rows to the user's, when
    duplicates were collapsed)."""
    t = time.perf_counter()
    model, support = problems.model(states, classes, setup.kernel)
    if user_rows is not None:
        support = user_rows(np.asarray(support, np.int64))
    phases["assembly"] = time.perf_counter() - t
    return FitResult(model, np.asarray(support, np.int64), tuple(states), history, classes,
                     int(n_features), setup.n_rows, setup.kernel, setup.gamma, setup.k,
                     setup.r, setup.random_seed, scaler, seed_info, setup.attributes, phases,
                     True)


def _scaled(client, parts, settings: FitSettings, dataset):
    """The partitions scaled by the settings' ``scale``, learnt on the workers.

    Returns:
        (parts, the fitted scaler or None, the Dataset for streaming seeds: None once
        scaled, as the file's rows are no longer the rows fitted).
    """
    if settings.scale is None:
        return parts, None, dataset
    from randsvm_dist.distributed.scaling import make_scaler

    scaler = make_scaler(settings.scale).fit_partitions(client, parts)
    return scaler.transform_partitions(client, parts), scaler, None


def _seeded(client, parts, classes, setup: _Setup, settings: FitSettings, dataset
            ) -> tuple[_Setup, dict | None]:
    """The setup with the settings' ``seed`` rows (``exact.seeding``) in its config, and the
    seed's record (None without a seed)."""
    if settings.seed is None:
        return setup, None
    from randsvm_dist.exact.seeding import seed_rows

    problems, cfg = setup.problems, setup.cfg
    seeds, info = seed_rows(client, parts, settings.seed, classes, [p.kind for p in problems],
                            min(setup.r, parts.n_rows), problems[0].solver.C, setup.gamma,
                            cfg.random_state, dataset)
    log.info("seed %s: %s rows in %.1f s", info["seed"], info["seed_rows"],
             info["seed_seconds"])
    return replace(setup, cfg=replace(cfg, seed_rows=seeds)), info


def _checkpoint(path: str | None, setup: _Setup, parts, classes):
    """The run's ``exact.checkpoint.Checkpoint`` at ``path`` (None: no checkpoint)."""
    if path is None:
        return None
    from randsvm_dist.exact.checkpoint import Checkpoint, run_fingerprint

    return Checkpoint(path, run_fingerprint(setup.cfg, setup.problems, parts, classes))


def _record_seed(history: list[dict], seed_info: dict | None) -> None:
    """Add the seed's record to the history's first iteration (of every problem)."""
    if seed_info is None:
        return
    for h in history:
        if h["iteration"] == 1:
            h.update(seed_info)


def _log_start(parts, setup: _Setup, gap_tol: float) -> None:
    """The cluster route's first progress line (logger ``randsvm_dist``, INFO)."""
    log.info("RandSVM: %d rows, %d features, %d partitions (%s), %d problem(s), "
             "k=%s, r=%d, gap_tol=%g", parts.n_rows, parts.n_features, parts.n_partitions,
             "cached" if parts.futures is not None else "re-read each pass",
             len(setup.problems), setup.k, setup.r, gap_tol)


def log_iteration(record: dict) -> None:
    """The per-iteration progress line (logger ``randsvm_dist``, INFO), on either route."""
    log.info(
        "iter %2d %s: sample %6d  SV %6d  violators %8d (%.4f)  dual %.6g  "
        "gap %.2e  solve %.1fs scan %.1fs  total %.1fs%s",
        record["iteration"], record.get("label", record["problem"]), record["sample_size"],
        record["n_support"], record["n_violators"], record["violator_fraction"],
        record["dual_objective"], record["relative_gap"], record["solve_seconds"],
        record["scan_seconds"], record["seconds"],
        f"  stop: {record['stop_reason']}" if record["stop_reason"] else "",
    )
