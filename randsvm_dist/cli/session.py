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
        self._thread = None
        self._error: BaseException | None = None

    def prefetch(self) -> None:
        """Start connecting (or starting the embedded default) in the background, so the
        command's own start-up work (reading a model, importing the estimators) overlaps
        with it; :meth:`client` waits for it and raises what it raised."""
        import threading

        if self._client is not None or self._thread is not None:
            return

        def connect() -> None:
            try:
                self.client()
            except BaseException as e:  # noqa: BLE001 - re-raised by client()
                self._error = e

        self._thread = threading.Thread(target=connect, name="randsvm-connect", daemon=True)
        self._thread.start()

    def client(self):
        """The ``distributed.Client`` (see :func:`randsvm_dist.engine.client.dask_client`).

        Raises:
            ClusterError: the scheduler cannot be reached or has no workers.
        """
        import threading

        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            self._thread = None
            if self._error is not None:
                error, self._error = self._error, None
                raise error
        if self._client is None:
            from randsvm_dist.engine.client import dask_client

            self._client = self._stack.enter_context(
                dask_client(self.scheduler, security=self.security))
        return self._client

    def close(self) -> None:
        """Close the client and any cluster this session started."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._client = None
        self._stack.close()
