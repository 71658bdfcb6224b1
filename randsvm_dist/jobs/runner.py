"""Running a submitted job on the cluster: the library call runs inside a Dask task.

The task secedes from the worker's thread pool (``worker_client``), so the driver's own
tasks can use every thread, and calls the library directly with the job's keyword
arguments (:func:`run_train`, :func:`run_stream`, :func:`run_predict`; nothing here
imports the command line). If the worker dies, the scheduler runs the task again
elsewhere; a train job then resumes from its last checkpoint in the job directory. A
watcher thread polls for a cancel request and cancels the job's tasks, so the driver stops
within about a second. The submitting machine may disconnect at any time.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
import time
import traceback

from randsvm_dist.exact.cancellation import cancel_when
from randsvm_dist.exceptions import FitCancelled
from randsvm_dist.jobs.store import JobStore

log = logging.getLogger("randsvm_dist")
CANCEL_POLL = 0.5  # seconds between two looks for a cancel request


class _JobLog(logging.Handler):
    """Copies the job's log records (and printed lines) to ``log.txt``; ``cancelled`` is set
    by the watcher once a cancel was asked for."""

    def __init__(self, store: JobStore, job_id: str):
        super().__init__(logging.INFO)
        self.store, self.job_id = store, job_id
        self.lines = store.read_text(job_id, "log.txt").splitlines()
        self.last_flush = 0.0
        self.cancelled = threading.Event()
        self.setFormatter(logging.Formatter("%(asctime)s %(message)s"))

    def add(self, line: str) -> None:
        self.lines.append(line)
        if time.monotonic() - self.last_flush > 1.0:
            self.flush()

    def emit(self, record: logging.LogRecord) -> None:
        self.add(self.format(record))

    def flush(self) -> None:
        self.last_flush = time.monotonic()
        self.store.write_text(self.job_id, "log.txt", "\n".join(self.lines) + "\n")


class _Lines(io.TextIOBase):
    def __init__(self, sink: _JobLog):
        self.sink = sink

    def write(self, s: str) -> int:
        for line in s.splitlines():
            if line.strip():
                self.sink.add(line)
        return len(s)


def _watch_cancel(store: JobStore, job_id: str, client, handler: _JobLog,
                  stop: threading.Event) -> None:
    """Until ``stop``: on a cancel request, cancel every task the job's client holds (the
    driver's waits then end with an error at once)."""
    while not stop.wait(CANCEL_POLL):
        if store.exists(job_id, "cancel"):
            handler.cancelled.set()
            from distributed import Future

            keys = list(getattr(client, "futures", {}))
            if keys:
                with contextlib.suppress(Exception):
                    client.cancel([Future(k, client) for k in keys], force=True)
            return


def run_train(client, *, data: str, model: str, params: dict | None = None,
              test: str | None = None, overwrite: bool = False,
              checkpoint: str | None = None, svm_type: str = "c_svc",
              weight_column: str | None = None) -> dict:
    """Fit a RandSVM estimator (``svm_type``: c_svc, epsilon_svr or one_class), save it,
    optionally evaluate it (a ``train`` job). ``weight_column``: a Parquet column of
    per-row sample weights (``train --weight-column``).

    Returns:
        the result (what ``randsvm-dist train --json`` reports).

    Raises:
        RandSVMError: bad parameters, data or outputs.
    """
    from randsvm_dist.app.model_io import check_model_path
    from randsvm_dist.app.train import estimator_class, train

    estimator_class(svm_type)  # an unknown svm type fails before anything else
    check_model_path(model, overwrite)
    trained = train(data, model, client=client, svm_type=svm_type, params=params,
                    weight_column=weight_column, checkpoint=checkpoint,
                    resume=checkpoint is not None, overwrite=overwrite)
    log.info("%s", trained.summary())
    if test:
        trained.evaluate(test, client)
    return trained.as_dict()


def run_stream(client, *, data: str, estimator: str, params: dict | None = None,
               model: str | None = None, test: str | None = None, fan_in: int = 2,
               overwrite: bool = False) -> dict:
    """One pass of a streaming learner per partition, tree-merged (a ``stream`` job).

    Returns:
        the result (what ``randsvm-dist stream --json`` reports).

    Raises:
        RandSVMError: bad parameters, data or outputs.
    """
    from randsvm_dist.app.model_io import check_model_path
    from randsvm_dist.app.stream import stream, streaming_class

    est = streaming_class(estimator)(**(params or {}))
    if model:
        check_model_path(model, overwrite)
    trained = stream(est, data, client=client, fan_in=fan_in, model=model,
                     overwrite=overwrite)
    if test:
        trained.evaluate(test, client)
    return trained.as_dict()


def run_predict(client, *, model: str, data: str, out: str, overwrite: bool = False,
                allow_pickle: bool = False) -> dict:
    """Predictions of a saved model, one Parquet file per partition (a ``predict`` job).

    Returns:
        ``{"rows", "partitions", "seconds", "out"}``.

    Raises:
        RandSVMError: a bad model, data or output.
    """
    from randsvm_dist.app.model_io import load_model
    from randsvm_dist.distributed.predict import predict_dataset

    return predict_dataset(load_model(model, allow_pickle=allow_pickle), data, out,
                           client=client, overwrite=overwrite)


RUNNERS = {"train": run_train, "stream": run_stream, "predict": run_predict}


def run_job(root: str, job_id: str) -> dict:
    """Run job ``job_id`` of job directory ``root`` (the body of the submitted task).

    Returns:
        the final status (also in ``status.json``). Errors of the job are recorded there,
        not raised: raising would make Dask run a failing job again.
    """
    import json

    from distributed import get_worker, worker_client

    store = JobStore(root)
    spec = store.read_json(job_id, "spec.json")
    previous = store.read_json(job_id, "status.json")
    if store.exists(job_id, "cancel"):
        return store.set_status(job_id, state="cancelled", finished_at=time.time())
    attempt = int(previous.get("attempt", 0)) + 1
    store.set_status(job_id, state="running", worker=get_worker().address, attempt=attempt,
                     started_at=time.time())
    handler = _JobLog(store, job_id)
    handler.add(f"--- attempt {attempt} on worker {get_worker().address}"
                + (" (resuming from the last checkpoint)" if attempt > 1 else ""))
    logger = logging.getLogger("randsvm_dist")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    stop = threading.Event()
    try:
        kwargs = dict(spec["args"])
        if spec["kind"] == "train":
            kwargs["checkpoint"] = store.path(job_id, "checkpoint")
        with worker_client() as client, contextlib.redirect_stdout(_Lines(handler)):
            watcher = threading.Thread(target=_watch_cancel, daemon=True,
                                       args=(store, job_id, client, handler, stop))
            watcher.start()
            with cancel_when(handler.cancelled.is_set):  # the driver checks it at every step
                result = RUNNERS[spec["kind"]](client, **kwargs)
        store.write_text(job_id, "result.json", json.dumps(result, indent=1, default=str))
        state = {"state": "done"}
    except FitCancelled:
        state = {"state": "cancelled"}
    except BaseException as e:  # noqa: BLE001 - every failure is recorded for `jobs status`
        if store.exists(job_id, "cancel"):
            state = {"state": "cancelled"}
        else:
            handler.add(traceback.format_exc())
            state = {"state": "failed", "error": f"{type(e).__name__}: {e}"}
    finally:
        stop.set()
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    if store.exists(job_id, "cancel"):
        state = {"state": "cancelled"}  # asked for while it ended: cancel's answer stands
    handler.add(f"--- {state['state']}")
    handler.flush()
    return store.set_status(job_id, finished_at=time.time(), **state)
