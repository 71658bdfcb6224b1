"""One Dask client per command line: started on first use, closed when the command ends."""

from __future__ import annotations

from contextlib import ExitStack


class Session:
    """The Dask client shared by everything one ``randsvm-dist`` invocation does.

    ``train --test`` fits and evaluates on the same cluster; a command that needs no
    cluster (``data info``, ``report``) never starts one.
    """

    def __init__(self, scheduler: str | None = None, security=None) -> None:
        self.scheduler = scheduler
        self.security = security
        self._stack = ExitStack()
        self._client = None

    def client(self):
        """The ``distributed.Client`` (see :func:`randsvm_dist.engine.client.dask_client`).

        Raises:
            ClusterError: the scheduler cannot be reached or has no workers.
        """
        if self._client is None:
            from randsvm_dist.engine.client import dask_client

            self._client = self._stack.enter_context(
                dask_client(self.scheduler, security=self.security))
        return self._client

    def close(self) -> None:
        """Close the client and any cluster this session started."""
        self._client = None
        self._stack.close()
