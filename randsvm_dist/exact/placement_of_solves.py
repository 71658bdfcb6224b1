"""Which host runs each of an iteration's concurrent solves, and how many threads it gets.

Dask knows workers, not machines: a worker's ``host`` (the address it listens on) is what
tells two machines apart. A solve is offered the worker threads of the host it runs on,
shared by the solves placed there, and is submitted to that host's workers; the solves
of an iteration spread over the hosts first (one per host, the host with the most
threads first) and only then share a host, the next one going to the host whose threads
per solve stay the largest. ``allow_other_workers`` lets the scheduler run a solve
elsewhere when its host is lost, so a lost worker never stalls a fit; the threads are an
offer either way (every backend caps them by the cores of the process that runs it).
"""

from __future__ import annotations

from dataclasses import dataclass

from randsvm_dist.core.current_worker import worker_address


@dataclass(frozen=True)
class Host:
    """One machine of the cluster, as Dask sees it.

    Attributes:
        name: the workers' host address.
        workers: addresses of its workers, sorted.
        threads: worker threads of all its workers.
    """

    name: str
    workers: tuple[str, ...]
    threads: int


@dataclass(frozen=True)
class SolvePlace:
    """Where one solve runs and the threads it is offered.

    Attributes:
        host: the host's name ('' when the cluster has no workers: anywhere, one thread).
        workers: that host's worker addresses.
        threads: threads offered to the solve (its share of the host's, at least 1).
    """

    host: str
    workers: tuple[str, ...]
    threads: int

    def submit_options(self) -> dict:
        """``client.submit`` keywords running the solve on this host's workers (any other
        worker when they are gone); none for an empty cluster."""
        if not self.workers:
            return {}
        return {"workers": list(self.workers), "allow_other_workers": True}


def cluster_hosts(client) -> list[Host]:
    """The cluster's hosts, most threads first (then by name).

    Args:
        client: distributed.Client.

    Returns:
        one Host per distinct worker host (empty without workers).
    """
    members: dict[str, list[tuple[str, int]]] = {}
    for address, w in client.scheduler_info(n_workers=-1).get("workers", {}).items():
        host = str(w.get("host") or w.get("id") or address)
        members.setdefault(host, []).append((address, max(1, int(w.get("nthreads", 1)))))
    hosts = [Host(name, tuple(sorted(a for a, _ in ws)), sum(n for _, n in ws))
             for name, ws in members.items()]
    return sorted(hosts, key=lambda h: (-h.threads, h.name))


def spread(hosts: list[Host], n_solves: int) -> list[SolvePlace]:
    """Places for ``n_solves`` concurrent solves on these hosts.

    Each solve goes to a host without a solve while there is one (most threads first),
    then to the host where a further solve leaves the most threads per solve. A host's
    threads are shared out among its solves (the first ones get the remainder), so the
    threads offered on a host never sum to more than it has unless it has more solves
    than threads (each solve gets at least one).

    Args:
        hosts: the cluster's hosts (``cluster_hosts``).
        n_solves: concurrent solves (at least 0).

    Returns:
        one SolvePlace per solve, in the order the solves were counted.
    """
    if not hosts:
        return [SolvePlace("", (), 1) for _ in range(n_solves)]
    count = [0] * len(hosts)
    chosen = []
    for _ in range(n_solves):
        h = min(range(len(hosts)), key=lambda i: (count[i] > 0,
                                                  -hosts[i].threads / (count[i] + 1), i))
        chosen.append(h)
        count[h] += 1
    rank = [0] * len(hosts)
    places = []
    for h in chosen:
        share, extra = divmod(hosts[h].threads, count[h])
        places.append(SolvePlace(hosts[h].name, hosts[h].workers,
                                 max(1, share + (rank[h] < extra))))
        rank[h] += 1
    return places


def place_solves(client, n_solves: int) -> list[SolvePlace]:
    """``spread`` over the client's cluster as it is now (see ``cluster_hosts``)."""
    return spread(cluster_hosts(client), n_solves)


def place_here(client, n_threads: int) -> SolvePlace:
    """The place of a solve that continues one offered ``n_threads`` (a cascade's final
    solve): the host of the worker this runs on, or the host with the most threads when
    this is not a worker (or its host has left), with at most ``n_threads`` of its threads.

    Args:
        client: distributed.Client (a ``worker_client`` on a worker).
        n_threads: threads the solve it continues was offered.

    Returns:
        SolvePlace (anywhere, one thread, on a cluster without workers).
    """
    hosts = cluster_hosts(client)
    if not hosts:
        return SolvePlace("", (), 1)
    address = worker_address()  # None: not on a worker
    host = next((h for h in hosts if address in h.workers), hosts[0])
    return SolvePlace(host.name, host.workers, max(1, min(int(n_threads), host.threads)))
