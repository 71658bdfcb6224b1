"""The environment variable naming the scheduler every command uses when none is given
(``randsvm-dist cluster start`` prints its export; ``engine.client.dask_client`` and
``jobs.submission.scheduler_address`` read it). Imports nothing: the command line's help
reads it without Dask."""

SCHEDULER_ENV = "RANDSVM_DIST_SCHEDULER"
