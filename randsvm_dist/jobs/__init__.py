"""Submitted jobs: the driver runs on the cluster; the user's machine may disconnect.

Python::

    from randsvm_dist import jobs
    job = jobs.submit("train", ["data/train", "--model", "/shared/m.model", "--C", "10"],
                      scheduler="tls://head:8786", job_dir="/shared/jobs")
    jobs.status("/shared/jobs", job)["state"]   # submitted, running, done, failed, cancelled
    jobs.logs("/shared/jobs", job); jobs.result("/shared/jobs", job)
    jobs.cancel("/shared/jobs", job, scheduler="tls://head:8786")

The command line is the same: ``randsvm-dist submit train ... --scheduler ADDR --job-dir
DIR`` prints the job id at once; ``randsvm-dist jobs list|status|logs|result|cancel``.
Paths (data, model, outputs, job directory) must be visible to the workers at the same
path: a shared file system or URLs.
"""

from __future__ import annotations

import os
import time

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.jobs.store import JobStore

KINDS = ("train", "stream", "predict")
TASK_PREFIX = "randsvm-job-"
# options that belong to the submitting side, not to the command run on the cluster
_LOCAL_ONLY = ("func", "command", "verbose", "session", "scheduler", "tls_ca_file",
               "tls_cert", "tls_key", "job_dir", "json", "report")
_PATHS = ("data", "model", "out", "test")


def _absolute(value):
    if isinstance(value, str) and value and "://" not in value:
        return os.path.abspath(os.path.expanduser(value))
    return value


def _preflight(kind: str, args: dict) -> None:
    """The command's own output checks, before anything is submitted."""
    from randsvm_dist.data.storage import check_output_dir
    from randsvm_dist.model_files import check_model_path

    if kind in ("train", "stream") and args.get("model"):
        check_model_path(args["model"], args.get("overwrite", False))
    if kind == "predict":
        check_output_dir(args["out"], args.get("overwrite", False))


def submit_parsed(kind: str, args: dict, scheduler: str, job_dir: str, security=None) -> str:
    """Submit a parsed command (the options of ``randsvm-dist <kind>``).

    Returns:
        the job id (at once; the job runs on the cluster).

    Raises:
        ParameterError: unknown kind, no scheduler, or a bad output path.
        ClusterError: the scheduler cannot be reached.
    """
    from distributed import fire_and_forget

    from randsvm_dist.engine.client import dask_client
    from randsvm_dist.jobs.runner import run_job

    if kind not in KINDS:
        raise ParameterError(f"cannot submit {kind!r}; choose one of {', '.join(KINDS)}")
    if not scheduler:
        raise ParameterError("a submitted job needs --scheduler ADDRESS (a running cluster)")
    spec_args = {k: _absolute(v) if k in _PATHS else v for k, v in args.items()
                 if k not in _LOCAL_ONLY}
    _preflight(kind, spec_args)
    store = JobStore(job_dir)
    job_id = store.new_id(kind)
    store.write_json(job_id, "spec.json", {"kind": kind, "args": spec_args,
                                           "scheduler": scheduler})
    store.set_status(job_id, state="submitted", kind=kind, submitted_at=time.time(),
                     attempt=0)
    with dask_client(scheduler, security=security) as client:
        future = client.submit(run_job, store.root, job_id, key=TASK_PREFIX + job_id,
                               pure=False)
        fire_and_forget(future)  # the job outlives this client
    return job_id


def submit(kind: str, argv: list[str], *, scheduler: str, job_dir: str,
           security=None) -> str:
    """Submit ``randsvm-dist <kind> <argv...>`` to run on the cluster; see the module doc.

    Returns:
        the job id.

    Raises:
        ParameterError, ClusterError: see ``submit_parsed``.
    """
    from randsvm_dist.cli import build_parser

    if kind not in KINDS:
        raise ParameterError(f"cannot submit {kind!r}; choose one of {', '.join(KINDS)}")
    args = vars(build_parser().parse_args([kind, *argv]))
    return submit_parsed(kind, args, scheduler, job_dir, security)


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
    """Ask job ``job_id`` to stop: it stops at its next iteration (or before it starts).

    With ``scheduler``, the job's task is also cancelled on the cluster.

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
    if st["state"] == "submitted":
        return store.set_status(job_id, state="cancelled", finished_at=time.time())
    return status(job_dir, job_id)


def restart(job_dir: str, job_id: str, scheduler: str, security=None) -> str:
    """Run a job again on (e.g. a restarted) scheduler; a train job resumes from its last
    checkpoint.

    Returns:
        the job id.
    """
    from distributed import fire_and_forget

    from randsvm_dist.engine.client import dask_client
    from randsvm_dist.jobs.runner import run_job

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


__all__ = ["submit", "submit_parsed", "list_jobs", "status", "logs", "result", "cancel",
           "restart", "wait", "JobStore"]
