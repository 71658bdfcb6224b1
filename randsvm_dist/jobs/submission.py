"""Submitting, cancelling and restarting jobs: each job is one task on the cluster, named
``TASK_PREFIX`` + its id, that runs ``jobs.runner.run_job`` and outlives the client that
submitted it."""

from __future__ import annotations

import os
import time

from randsvm_dist.engine.scheduler_env import SCHEDULER_ENV
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.jobs.queries import status
from randsvm_dist.jobs.spec import check_outputs, check_spec, check_unclaimed
from randsvm_dist.jobs.store import JobStore

TASK_PREFIX = "randsvm-job-"


def scheduler_address(scheduler: str | None) -> str:
    """The scheduler a job goes to: ``scheduler``, else ``$RANDSVM_DIST_SCHEDULER`` (what
    ``randsvm-dist cluster start`` exports).

    Raises:
        ParameterError: neither is set (a job needs a running cluster, not an embedded one).
    """
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
    check_outputs(kind, spec)
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
