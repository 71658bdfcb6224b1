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

from randsvm_dist.jobs.queries import list_jobs, logs, result, status, wait
from randsvm_dist.jobs.spec import check_spec
from randsvm_dist.jobs.store import JobStore
from randsvm_dist.jobs.submission import cancel, restart, submit

__all__ = ["submit", "check_spec", "list_jobs", "status", "logs", "result", "cancel",
           "restart", "wait", "JobStore"]
