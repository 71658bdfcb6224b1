"""The in-process route of a RandSVM fit (``exact.in_process``): arrays in the client's
memory solved in its process when the cost model sends them to one solve; no cluster is
started."""

from __future__ import annotations

import time

import numpy as np

from randsvm_dist.engine.fit_input import FitInput
from randsvm_dist.estimators.progress_log import log, log_iteration
from randsvm_dist.exact.cancellation import cancel_check
from randsvm_dist.exact.route import cold_backend, judged_by_shape, plan_route
from randsvm_dist.exact.state import RunConfig


def fit_in_process(est, inputs: FitInput) -> bool:
    """Fit ``est`` in the client's process when the rows are in its memory (arrays, not a
    Parquet data set or a Dask collection) and the cost model, told the machine's
    cores, says one solve of all rows beats sampling; no cluster is started. Asks
    ``est._in_process_allowed()`` first (its parameters may need the workers).

    Args:
        est: the estimator.
        inputs: the fit's input (``engine.fit_input.prepare_fit_input``).

    Returns:
        True when fitted so (``est``'s fitted attributes and ``phases_`` set); False: the
        fit belongs on the cluster.
    """
    from randsvm_dist.exact.in_process import in_memory_rows, machine, run_in_process

    if not est._in_process_allowed() or not inputs.in_memory:
        return False
    data, y, sample_weight = inputs.data, inputs.y, inputs.sample_weight
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
