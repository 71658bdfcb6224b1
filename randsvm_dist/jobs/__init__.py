"""Submitted jobs: the driver runs on the cluster; the user's machine may disconnect.

Python (a job is the library call it names, with plain keyword arguments)::

    from randsvm_dist import jobs
    job = jobs.submit("train", data="/shared/train", model="/shared/m.model",
                      params={"C": 10, "gamma": 1.0}, scheduler="tls://head:8786",
                      job_dir="/shared/jobs", security=sec)
    jobs.status("/shared/jobs", job)["state"]   # submitted, running, done, failed, cancelled
    jobs.logs("/shared/jobs", job); jobs.result("/shared/jobs", job)
    jobs.cancel("/shared/jobs", job, scheduler="tls://head:8786", security=sec)

Kinds and their arguments (see :mod:`randsvm_dist.jobs.runner`):

- ``train``: ``data``, ``model``, ``params`` (RandSVMClassifier parameters), ``test``,
  ``overwrite``, ``svm_type``, ``weight_column`` (a Parquet column of sample weights);
- ``stream``: ``data``, ``estimator`` (a class of :mod:`randsvm_dist.streaming`), ``params``,
  ``model``, ``test``, ``fan_in``, ``overwrite``;
- ``predict``: ``model``, ``data``, ``out``, ``overwrite``, ``allow_pickle``.

The command line is the same: ``randsvm-dist submit train ... --scheduler ADDR --job-dir
DIR`` prints the job id at once; ``randsvm-dist jobs list|status|logs|result|cancel``.
Paths (data, model, outputs, job directory) must be visible to the workers at the same
path: a shared file system or URLs. Nothing here imports the command line.
"""

from __future__ import annotations

import os
import time

from randsvm_dist.data.filesystem import is_url
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.jobs.store import JobStore

KINDS = ("train", "stream", "predict")
TASK_PREFIX = "randsvm-job-"
#: the keyword arguments each kind takes (besides scheduler, job_dir, security)
SPEC_KEYS = {
    "train": ("data", "model", "params", "test", "overwrite", "svm_type", "weight_column"),
    "stream": ("data", "estimator", "params", "model", "test", "fan_in", "overwrite"),
    "predict": ("model", "data", "out", "overwrite", "allow_pickle"),
}
_REQUIRED = {"train": ("data", "model"), "stream": ("data", "estimator"),
             "predict": ("model", "data", "out")}
_PATHS = ("data", "model", "out", "test")


def _absolute(value):
    if isinstance(value, str) and value and not is_url(value):
        return os.path.abspath(os.path.expanduser(value))
    return value


def _preflight(kind: str, spec: dict) -> None:
    """The job's own output checks, before anything is submitted."""
    from randsvm_dist.data.outputs import check_not_input, check_output_dir
    from randsvm_dist.model_files.load import check_model_path

    inputs = (spec.get("data"), spec.get("test"))
    if kind in ("train", "stream") and spec.get("model"):
        check_model_path(spec["model"], spec.get("overwrite", False))
        check_not_input(spec["model"], inputs, "model")
    if kind == "predict":
        check_not_input(spec["out"], (spec["data"], spec["model"]), "output", directory=True)
        check_output_dir(spec["out"], spec.get("overwrite", False))


#: the argument naming each kind's output
OUTPUT_KEY = {"train": "model", "stream": "model", "predict": "out"}
ACTIVE = ("submitted", "running")


def check_unclaimed(store: JobStore, kind: str, spec: dict) -> None:
    """A job claims its output at submit: refuse one that another job of the directory,
    submitted or running, is to write.

    Raises:
        DataFormatError: naming the other job and its state.
    """
    from randsvm_dist.exceptions import DataFormatError

    output = spec.get(OUTPUT_KEY[kind])
    if not output:
        return
    for other in store.job_ids():
        if not store.exists(other, "status.json"):
            continue  # being submitted this moment
        st = store.read_json(other, "status.json")
        if st.get("state") not in ACTIVE:
            continue
        theirs = store.read_json(other, "spec.json")
        if theirs["args"].get(OUTPUT_KEY[theirs["kind"]]) == output:
            raise DataFormatError(f"{output} is the output of job {other} ({st['state']}) "
                                  "in this job directory; wait for it, cancel it, or choose "
                                  "another path")


def check_spec(kind: str, spec: dict) -> dict:
    """The job's arguments, checked and with absolute paths.

    Raises:
        ParameterError: unknown kind, a missing or unknown argument.
    """
    if kind not in KINDS:
        raise ParameterError(f"cannot submit {kind!r}; choose one of {', '.join(KINDS)}")
    unknown = sorted(set(spec) - set(SPEC_KEYS[kind]))
    if unknown:
        raise ParameterError(f"a {kind} job does not take {', '.join(unknown)}; it takes "
                             f"{', '.join(SPEC_KEYS[kind])}")
    missing = [k for k in _REQUIRED[kind] if not spec.get(k)]
    if missing:
        raise ParameterError(f"a {kind} job needs {', '.join(missing)}")
    if "params" in spec and not isinstance(spec["params"], dict):
        raise ParameterError(f"params must be a dict of keyword arguments; got "
                             f"{type(spec['params']).__name__}")
    return {k: _absolute(v) if k in _PATHS else v for k, v in spec.items()}


def scheduler_address(scheduler: str | None) -> str:
    """The scheduler a job goes to: ``scheduler``, else ``$RANDSVM_DIST_SCHEDULER`` (what
    ``randsvm-dist cluster start`` exports).

    Raises:
        ParameterError: neither is set (a job needs a running cluster, not an embedded one).
    """
    from randsvm_dist.engine.client import SCHEDULER_ENV

    address = scheduler or os.environ.get(SCHEDULER_ENV)
    if not address:
        raise ParameterError(f"a submitted job needs --scheduler ADDRESS or ${SCHEDULER_ENV} "
                             "(a running cluster)")
    return address


def submit(kind: str, *, scheduler: str | None, job_dir: str, security=None, **spec) -> str:
    """Submit a job: the library call ``kind`` names runs as a task on the cluster.

    Args:
        kind: "train", "stream" or "predict".
        scheduler: the cluster's scheduler address (None: ``$RANDSVM_DIST_SCHEDULER``).
        job_dir: the job directory shared with the workers.
        security: a ``distributed.Security`` (TLS).
        **spec: the job's keyword arguments (module docstring), JSON-able.

    Returns:
        the job id (at once; the job runs on the cluster).

    Raises:
        ParameterError: unknown kind or argument, no scheduler.
        DataFormatError: an output may not be written.
        ClusterError: the scheduler cannot be reached.
    """
    from distributed import fire_and_forget

    from randsvm_dist.engine.client import dask_client
    from randsvm_dist.jobs.runner import run_job

    spec = check_spec(kind, spec)
    scheduler = scheduler_address(scheduler)
    _preflight(kind, spec)
    store = JobStore(job_dir)
    check_unclaimed(store, kind, spec)
    job_id = store.new_id(kind)
    store.write_json(job_id, "spec.json", {"kind": kind, "args": spec,
                                           "scheduler": scheduler})
    store.set_status(job_id, state="submitted", kind=kind, submitted_at=time.time(),
                     attempt=0)
    with dask_client(scheduler, security=security) as client:
        future = client.submit(run_job, store.root, job_id, key=TASK_PREFIX + job_id,
                               pure=False)
        fire_and_forget(future)  # the job outlives this client
    return job_id


def list_jobs(job_dir: str) -> list[dict]:
    """The status of every job in ``job_dir``, oldest first."""
    store = JobStore(job_dir)
    return [store.read_json(j, "status.json") for j in store.job_ids()]


def status(job_dir: str, job_id: str) -> dict:
    """The status of one job (``state``, times, ``worker``, ``attempt``, ``error``).

    Raises:
        ParameterError: no such job.
    """
    return JobStore(job_dir).read_json(job_id, "status.json")


def logs(job_dir: str, job_id: str) -> str:
    """The job's log so far."""
    store = JobStore(job_dir)
    store.read_json(job_id, "spec.json")  # no such job: a clear error
    return store.read_text(job_id, "log.txt")


def result(job_dir: str, job_id: str) -> dict:
    """The result of a finished job (what the command reports).

    Raises:
        ParameterError: no such job, or it is not done (its state is named).
    """
    st = status(job_dir, job_id)
    if st["state"] != "done":
        raise ParameterError(f"job {job_id} is {st['state']}"
                             + (f": {st['error']}" if st.get("error") else "")
                             + "; it has no result")
    return JobStore(job_dir).read_json(job_id, "result.json")


def cancel(job_dir: str, job_id: str, scheduler: str | None = None, security=None) -> dict:
    """Cancel job ``job_id``: its state is ``cancelled`` at once; the job's driver, which
    watches for the request, cancels its own tasks within a second and stops (a LIBSVM
    solve already running on a worker ends on its own, its result unused).

    With ``scheduler``, the job's task is also cancelled on the cluster (a job not started
    yet then never starts).

    Returns:
        the status.
    """
    store = JobStore(job_dir)
    st = status(job_dir, job_id)
    if st["state"] in ("done", "failed", "cancelled"):
        return st
    store.write_text(job_id, "cancel", f"{time.time()}\n")
    if scheduler:
        from distributed import Future

        from randsvm_dist.engine.client import dask_client

        with dask_client(scheduler, security=security) as client:
            Future(TASK_PREFIX + job_id, client).cancel()
    return store.set_status(job_id, state="cancelled", cancelled_at=time.time())


def restart(job_dir: str, job_id: str, scheduler: str | None = None, security=None) -> str:
    """Run a job again on (e.g. a restarted) scheduler; a train job resumes from its last
    checkpoint.

    Returns:
        the job id.
    """
    from distributed import fire_and_forget

    from randsvm_dist.engine.client import dask_client
    from randsvm_dist.jobs.runner import run_job

    scheduler = scheduler_address(scheduler)
    store = JobStore(job_dir)
    st = status(job_dir, job_id)
    if st["state"] == "done":
        raise ParameterError(f"job {job_id} is done; nothing to restart")
    store.set_status(job_id, state="submitted", error=None)
    with dask_client(scheduler, security=security) as client:
        fire_and_forget(client.submit(run_job, store.root, job_id,
                                      key=f"{TASK_PREFIX}{job_id}-{time.time_ns()}",
                                      pure=False))
    return job_id


def wait(job_dir: str, job_id: str, timeout: float = 600.0, poll: float = 0.5) -> dict:
    """Wait until the job is done, failed or cancelled; returns its status.

    Raises:
        TimeoutError: still running after ``timeout`` seconds.
    """
    t0 = time.monotonic()
    while True:
        st = status(job_dir, job_id)
        if st["state"] in ("done", "failed", "cancelled"):
            return st
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"job {job_id} still {st['state']} after {timeout:.0f} s")
        time.sleep(poll)


__all__ = ["submit", "check_spec", "list_jobs", "status", "logs", "result", "cancel",
           "restart", "wait", "JobStore"]
