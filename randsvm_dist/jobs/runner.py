"""Running a submitted job on the cluster: the command's driver runs inside a Dask task.

The task secedes from the worker's thread pool (``worker_client``), so the driver's own
tasks can use every thread, and runs the very command the user would run locally
(``cmd_train`` / ``cmd_stream`` / ``cmd_predict``) with the worker's client. If the worker
dies, the scheduler runs the task again elsewhere; a train job then resumes from its last
checkpoint in the job directory. The submitting machine may disconnect at any time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import tempfile
import time
import traceback

from randsvm_dist.jobs.store import JobStore

log = logging.getLogger("randsvm_dist")


class JobCancelled(Exception):
    """A cancel was asked for (the ``cancel`` file of the job exists)."""


class _WorkerSession:
    """What the commands call ``args.session``: here, the worker's client."""

    def __init__(self, client):
        self._client = client

    def client(self):
        return self._client

    def close(self) -> None:
        pass


class _JobLog(logging.Handler):
    """Copies the job's log records (and printed lines) to ``log.txt``, and stops the job at
    a log line once a cancel was asked for (the driver logs once per iteration)."""

    def __init__(self, store: JobStore, job_id: str):
        super().__init__(logging.INFO)
        self.store, self.job_id = store, job_id
        self.lines = store.read_text(job_id, "log.txt").splitlines()
        self.last_flush = 0.0
        self.setFormatter(logging.Formatter("%(asctime)s %(message)s"))

    def add(self, line: str) -> None:
        self.lines.append(line)
        if time.monotonic() - self.last_flush > 1.0:
            self.flush()

    def emit(self, record: logging.LogRecord) -> None:
        self.add(self.format(record))
        if self.store.exists(self.job_id, "cancel"):
            raise JobCancelled(f"job {self.job_id} was cancelled")

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


def _command(kind: str):
    from randsvm_dist.cli.predict import cmd_predict
    from randsvm_dist.cli.stream import cmd_stream
    from randsvm_dist.cli.train import cmd_train

    return {"train": cmd_train, "stream": cmd_stream, "predict": cmd_predict}[kind]


def run_job(root: str, job_id: str) -> dict:
    """Run job ``job_id`` of job directory ``root`` (the body of the submitted task).

    Returns:
        the final status (also in ``status.json``). Errors of the command are recorded
        there, not raised: raising would make Dask run a failing job again.
    """
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
    fd, report = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        args = argparse.Namespace(**spec["args"], json=False, report=report)
        if spec["kind"] == "train":
            args.checkpoint = store.path(job_id, "checkpoint")
            args.resume = True
        with worker_client() as client, contextlib.redirect_stdout(_Lines(handler)):
            args.session = _WorkerSession(client)
            _command(spec["kind"])(args)
        with open(report) as f:
            store.write_text(job_id, "result.json", f.read())
        state = {"state": "done"}
    except JobCancelled:
        state = {"state": "cancelled"}
    except Exception as e:  # noqa: BLE001 - every failure is recorded for `jobs status`
        handler.add(traceback.format_exc())
        state = {"state": ("cancelled" if store.exists(job_id, "cancel") else "failed"),
                 "error": f"{type(e).__name__}: {e}"}
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        os.unlink(report)
    handler.add(f"--- {state['state']}")
    handler.flush()
    return store.set_status(job_id, finished_at=time.time(), **state)
