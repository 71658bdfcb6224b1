"""What a job directory tells about its jobs: their status, logs and results, read from
the files each job's driver writes (``jobs.store``); waiting for a job to end."""

from __future__ import annotations

import time

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.jobs.store import JobStore


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
