"""The job directory: one sub-directory per job, on a local path or an fsspec URL.

``<job-dir>/<job-id>/``:

- ``spec.json``: the command and its arguments (written once, at submission);
- ``status.json``: state (submitted, running, done, failed, cancelled), times, worker,
  attempt, error; rewritten atomically at every change;
- ``log.txt``: the job's log lines (rewritten atomically, so a reader never sees half a
  line);
- ``result.json``: the command's result (its ``--report``), when done;
- ``cancel``: present when a cancel was asked for;
- ``checkpoint/``: the driver's state after each iteration (train jobs).

Every reader and writer is here, so the layout lives in one place.
"""

from __future__ import annotations

import json
import os
import time
import uuid

from randsvm_dist.data.filesystem import is_url, makedirs, read_bytes, url_fs
from randsvm_dist.data.publish import write_bytes_atomic
from randsvm_dist.exceptions import ParameterError

STATES = ("submitted", "running", "done", "failed", "cancelled")


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


class JobStore:
    """The files of the jobs under one job directory.

    Args:
        root: the job directory (local path or URL), shared by the submitting machine and
            the workers.
    """

    def __init__(self, root: str | os.PathLike):
        root = os.fspath(root)
        self.root = root if is_url(root) else os.path.abspath(os.path.expanduser(root))

    def new_id(self, kind: str) -> str:
        """A fresh job id: ``<kind>-<UTC time>-<random>``."""
        return f"{kind}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"

    def path(self, job_id: str, *name: str) -> str:
        """Path (or URL) of a file of job ``job_id``."""
        if not job_id or "/" in job_id or job_id.startswith("."):
            raise ParameterError(f"not a job id: {job_id!r}")
        return _join(self.root, job_id, *name)

    def write_json(self, job_id: str, name: str, obj: dict) -> None:
        """Write ``obj`` as ``<job>/<name>`` atomically (creating the job's directory)."""
        self.makedirs(job_id)
        write_bytes_atomic(self.path(job_id, name), json.dumps(obj, indent=1,
                                                               default=str).encode())

    def read_json(self, job_id: str, name: str) -> dict:
        """``<job>/<name>`` parsed.

        Raises:
            ParameterError: no such job (or file).
        """
        try:
            return json.loads(read_bytes(self.path(job_id, name)))
        except FileNotFoundError:
            raise ParameterError(f"job {job_id}: no {name} in {self.root} (no such job, or "
                                 "it has not got that far)") from None

    def exists(self, job_id: str, name: str) -> bool:
        """True when ``<job>/<name>`` exists."""
        p = self.path(job_id, name)
        if is_url(p):
            fs, q = url_fs(p)
            return fs.exists(q)
        return os.path.exists(p)

    def makedirs(self, job_id: str, *sub: str) -> str:
        """Create ``<job>/<sub>`` if missing; returns its path."""
        return makedirs(self.path(job_id, *sub))

    def write_text(self, job_id: str, name: str, text: str) -> None:
        """Write ``<job>/<name>`` atomically."""
        write_bytes_atomic(self.path(job_id, name), text.encode())

    def read_text(self, job_id: str, name: str) -> str:
        """``<job>/<name>`` as text ('' when missing)."""
        try:
            return read_bytes(self.path(job_id, name)).decode()
        except FileNotFoundError:
            return ""

    def job_ids(self) -> list[str]:
        """Every job under the directory, oldest first (ids sort by submission time)."""
        if is_url(self.root):
            fs, q = url_fs(self.root)
            names = [n.rstrip("/").rsplit("/", 1)[-1] for n in fs.ls(q, detail=False)] \
                if fs.exists(q) else []
        else:
            names = os.listdir(self.root) if os.path.isdir(self.root) else []
        return sorted(n for n in names if self.exists(n, "spec.json"))

    def set_status(self, job_id: str, **changes) -> dict:
        """Update ``status.json`` with ``changes`` (and the time); returns the new status."""
        status = self.read_json(job_id, "status.json") if self.exists(job_id, "status.json") \
            else {"job_id": job_id}
        status.update(changes, updated_at=time.time())
        self.write_json(job_id, "status.json", status)
        return status
