"""Array chunks placed on the workers once, and scattered again when lost with a worker.

``client.scatter`` puts each chunk of the caller's arrays on a worker under a fixed key;
the task that builds a partition names its chunk by that key (``loaded_chunk``), so no
array travels inside a task graph. When the last copy of a chunk dies with its worker, Dask
forgets the key; ``ChunkStore`` hears the scheduler's remove-worker event and scatters the
chunk again from the caller's arrays under the same key, and Dask rebuilds the lost
partitions from their tasks as usual (``fetch_chunk`` waits for the chunk to be back).
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref

from randsvm_dist.core.targets import LabelCoding
from randsvm_dist.engine.partition_build import Loaded, load_rows
from randsvm_dist.engine.partitions import make_array_partition
from randsvm_dist.exceptions import ClusterError

log = logging.getLogger("randsvm_dist")

# How long a partition's task waits for a lost chunk to be scattered again by the driver.
CHUNK_WAIT = 600.0


def loaded_chunk(key: str, offset: int, coding: LabelCoding, find_duplicates: bool
                 ) -> Loaded:
    """``partition_build.load_rows`` of a scattered chunk (runs on a worker)."""
    X, y, w = fetch_chunk(key)
    return load_rows(make_array_partition(X, y, offset, coding, w), find_duplicates)


def fetch_chunk(key: str, wait: float = CHUNK_WAIT):
    """The value of a chunk ``ChunkStore`` scattered, from this worker's memory or a peer's
    (runs on a worker). A chunk lost with its worker is waited for: the driver scatters it
    again as soon as the scheduler reports the loss.

    Raises:
        ClusterError: the chunk did not come back within ``wait`` seconds (the driver is
            gone).
    """
    from distributed import get_worker
    from distributed.utils import sync
    from distributed.utils_comm import gather_from_workers

    worker = get_worker()
    deadline = time.monotonic() + wait
    while True:
        if key in worker.data:
            return worker.data[key]
        who = sync(worker.loop, worker.scheduler.who_has, keys=[key]).get(key)
        if who:
            got, *_ = sync(worker.loop, gather_from_workers, {key: who}, rpc=worker.rpc,
                           who=worker.address)
            if key in got:
                return got[key]
        if time.monotonic() > deadline:
            raise ClusterError(f"array chunk {key} was lost with its worker and the driver "
                               f"did not send it again within {wait:.0f} s")
        time.sleep(0.2)


class ChunkStore:
    """Array chunks placed on the workers once (``client.scatter``, directly to the workers
    when the client can reach them), each under a fixed key that loading tasks name.

    The store keeps the caller's chunks (views of the arrays passed to ``fit``) and listens
    to the scheduler's remove-worker events: a chunk whose every copy was lost is scattered
    again under the same key, so the tasks that rebuild the lost partitions find it. The
    chunks leave the workers when the store is dropped (with its PartitionSet).
    """

    def __init__(self, client, chunks: list[tuple]):
        """Scatter ``chunks`` (tuples (X, y, weight)).

        Raises:
            ClusterError: no worker to scatter to.
        """
        self.client = client
        self.chunks = chunks
        tag = uuid.uuid4().hex[:12]
        self.keys = [f"randsvm-chunk-{tag}-{i}" for i in range(len(chunks))]
        self.futures: dict = {}
        self._holders: dict = {}
        self._scatter(dict(zip(self.keys, chunks)))
        try:
            self._holders = {k: list(v) for k, v in
                             client.who_has(list(self.futures.values())).items()}
        except Exception as exc:  # placement is a hint only
            log.debug("who_has of scattered chunks failed: %s", exc)
        _listen(client, self)

    def _direct(self) -> bool:
        return self.client.direct_to_workers is not False

    def _scatter(self, data: dict) -> None:
        try:
            got = self.client.scatter(data, hash=False, direct=self._direct())
        except (OSError, TimeoutError) as exc:  # workers not reachable: via the scheduler
            log.debug("direct scatter failed (%s); scattering through the scheduler", exc)
            got = self.client.scatter(data, hash=False, direct=False)
        self.futures.update(got)

    def holder(self, i: int) -> str | None:
        """A worker holding chunk i (where its partition is best built), or None."""
        who = self._holders.get(self.keys[i])
        return who[0] if who else None

    async def rescatter(self, lost: set) -> None:
        """Scatter again the chunks among the ``lost`` keys (from the scheduler's event;
        runs in the client's event loop)."""
        mine = {k: c for k, c in zip(self.keys, self.chunks) if k in lost}
        if not mine:
            return
        log.warning("a worker died with %d array chunk(s) of this fit; sending them again",
                    len(mine))
        for attempt in range(5):
            try:
                self.futures.update(await self.client.scatter(mine, hash=False))
                return
            except Exception as exc:  # e.g. the target died too: the next event retries
                log.debug("re-scatter attempt %d failed: %s", attempt, exc)
                await _sleep(1.0)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


_STORES: dict = {}   # client id -> WeakSet of its live ChunkStores
_PREVIOUS: dict = {}  # client id -> the "all" topic handler there was before ours


def _listen(client, store: ChunkStore) -> None:
    """Route the scheduler's remove-worker events of ``client`` to ``store`` (one
    subscription per client, dropped when its last store goes)."""
    cid = client.id
    if cid not in _STORES:
        _STORES[cid] = weakref.WeakSet()
        _PREVIOUS[cid] = getattr(client, "_event_handlers", {}).get("all")

        async def on_event(event) -> None:
            previous = _PREVIOUS.get(cid)
            if previous is not None:
                out = previous(event)
                if hasattr(out, "__await__"):
                    await out
            _, msg = event
            if not (isinstance(msg, dict) and msg.get("action") == "remove-worker"):
                return
            lost = {str(k) for k in msg.get("lost-scattered-tasks", ())}
            for s in list(_STORES.get(cid, ())):
                await s.rescatter(lost)

        client.subscribe_topic("all", on_event)
    _STORES[cid].add(store)
    weakref.finalize(store, _unlisten, client, cid)


def _unlisten(client, cid: str) -> None:
    stores = _STORES.get(cid)
    if stores is None or len(stores):
        return
    del _STORES[cid]
    previous = _PREVIOUS.pop(cid, None)
    try:
        client.unsubscribe_topic("all")
        if previous is not None:
            client.subscribe_topic("all", previous)
    except Exception as exc:  # the client is closing
        log.debug("could not unsubscribe from scheduler events: %s", exc)
