"""Duplicates found across partitions: a hash-routed exchange on the workers.

Within a partition, ``duplicates.duplicate_representatives`` groups identical rows. Copies
that sit in different partitions are found by an exchange between the partitions' tasks:

1. ``route_rows`` (one task per partition): each row's key (two independent 64-bit
   ``row_hashes`` and its label) with its original global row id (and sample weight),
   split by the hash range that owns it;
2. ``own_hash_range`` (one task per range): groups the rows with equal keys; each group's
   representative is its lowest global row id, its weight the sum of its copies' positive
   weights (summed in row-id order), its count the copies; the answers go back split by
   the partition holding each row;
3. ``apply_groups`` (one task per partition): the partition's ``partition_build.Groups``:
   the representatives it holds (with the summed weights and counts) are kept, the other
   copies leave its rows.

Every task is a pure function of its inputs, submitted with retries: a worker lost during
the exchange makes Dask recompute what it held from the same inputs, no row is lost. The
grouping depends on the rows only (lowest row id, sums in row-id order), not on how rows
are cut into partitions or how many hash ranges there are: the collapsed set is the same
for any worker layout, and the same as a data set cut into one partition groups within it.
When the exchange runs: ``exchange_pays``.

A collapsed copy is the same point as its representative (same features, same label), so
it has the representative's margin and KKT status; scans and the certificate count it
through the representative's summed weight, exactly as the unweighted problem counts each
copy, so it needs no row of its own.

Unlike the grouping within a partition (compared in full), rows in different partitions
are matched on 128 bits of hash and the exact label, not compared value by value.
"""

from __future__ import annotations

import operator

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.duplicates import collapse_pays, row_hashes
from randsvm_dist.engine.partition_build import Groups, Loaded, positive_weights

# Rows whose hash falls in the lowest SAMPLE_ROWS / n_rows of the hash space form the
# estimate's sample (all rows when there are fewer): a row and its copies hash alike, so
# a sampled group is sampled whole and (sampled rows - distinct sampled hashes) / share is
# an unbiased estimate of the rows a full grouping removes. 20,000 hashes are 160 kB.
SAMPLE_ROWS = 20_000
# Hash ranges (owner tasks): one per partition up to this many, so the number of small
# routing tasks (partitions x ranges, twice) stays bounded.
MAX_OWNERS = 32


def sampled_hashes(loaded: Loaded, share: float) -> np.ndarray:
    """The row hashes of a loaded partition that fall in the lowest ``share`` of the hash
    space (runs on a worker; needs ``loaded.hashes``)."""
    return loaded.hashes[loaded.hashes <= _hash_threshold(share)]


def _hash_threshold(share: float) -> np.uint64:
    return np.uint64(min(2**64 - 1, int(share * 2.0**64)))


def estimated_copies(sample: np.ndarray, share: float) -> int:
    """The estimated rows a grouping over all partitions removes, from ``sample``: the
    hashes of every row in the lowest ``share`` of the hash space (see SAMPLE_ROWS)."""
    removed = len(sample) - len(np.unique(sample))
    return int(round(removed / share)) if share > 0 else 0


def exchange_pays(client, loaded: list, stats: np.ndarray, weighted: bool,
                  names: list[str]) -> bool:
    """Whether to group the rows over the whole data set (the exchange) rather than within
    each partition: when there are two partitions or more and collapsing pays
    (``duplicates.collapse_pays``) on the copies of the whole data set, estimated on a hash
    sample (``estimated_copies``; the copies found within partitions when more).

    Why whenever collapsing pays, not only when many copies sit in different partitions:
    the exchange costs one pass over the rows' hashes and ~24 bytes a row sent once (less
    than one violator scan, which computes a kernel row per row), and it makes the
    collapsed set a function of the rows alone, so a fit gives the same model, support_
    and certificate whatever the worker layout; a grouping within partitions keeps the
    copies split by the cut (another cut, other rows and weights). The estimate, not the
    counts within partitions, decides because those miss the copies split by the cut (a
    data set sorted by label or written in blocks: few copies within, many overall).

    Args:
        client: distributed.Client.
        loaded: futures of ``partition_build.Loaded`` with hashes.
        stats: the partitions' ``partition_build.survey`` rows (n, distinct, nnz, nnz).
        weighted: the rows carry sample weights (collapsing pays at any copy).
        names: the partitions' names for errors of the gather.
    """
    n, within = int(stats[:, 0].sum()), int((stats[:, 0] - stats[:, 1]).sum())
    if len(loaded) < 2 or n == 0:
        return False
    if collapse_pays(n, n - within, weighted):
        return True  # the copies within partitions suffice: no sample needed
    share = min(1.0, SAMPLE_ROWS / n)
    got = gather(client, [client.submit(sampled_hashes, f, share, pure=False, retries=2)
                          for f in loaded], "the duplicate estimate's hash sample", names)
    copies = estimated_copies(np.concatenate(got), share)
    return collapse_pays(n, n - min(n, copies), weighted)


def route_rows(loaded: Loaded, n_owners: int) -> tuple[dict, ...]:
    """Each row's key, global row id and weight, split by the hash range owning it (runs
    on a worker; pure).

    Returns:
        ``n_owners`` dicts of arrays: h1, h2 (uint64 hashes), y (labels), row (int64
        original global row ids) and, when the rows carry sample weights, w (their
        positive weights).
    """
    part, h1 = loaded.part, loaded.hashes
    h2 = row_hashes(part.X, part.y, seed=1)
    row = part.offset + np.arange(part.n_rows, dtype=np.int64)
    arrays = {"h1": h1, "h2": h2, "y": part.y, "row": row}
    if part.weight is not None:
        arrays["w"] = positive_weights(part)
    owner = ((h1 >> np.uint64(32)) * np.uint64(n_owners)) >> np.uint64(32)
    return _split(arrays, owner, n_owners)


def _split(arrays: dict, where: np.ndarray, n: int) -> tuple[dict, ...]:
    """``arrays`` (aligned) cut into n dicts by ``where`` (values 0..n-1), each keeping
    the arrays' order."""
    order = np.argsort(where, kind="stable")
    cuts = np.searchsorted(where[order], np.arange(n + 1))
    ordered = {k: v[order] for k, v in arrays.items()}
    return tuple({k: v[cuts[i]:cuts[i + 1]] for k, v in ordered.items()} for i in range(n))


def own_hash_range(offsets: np.ndarray, *pieces: dict) -> tuple[dict, ...]:
    """Group the rows of one hash range (runs on a worker; pure).

    Args:
        offsets: each partition's original global offset (ascending).
        pieces: ``route_rows``' dicts for this range, one per partition.

    Returns:
        one dict per partition about its rows in groups of two or more: row (global row
        ids), rep (bool: the group's representative), count (int64 copies in the group)
        and weight (float64 summed positive weights), the last two at representatives.
    """
    cat = {k: np.concatenate([p[k] for p in pieces]) for k in ("h1", "h2", "y", "row")}
    weighted = "w" in pieces[0]
    order = np.lexsort((cat["row"], cat["y"], cat["h2"], cat["h1"]))
    s = {k: v[order] for k, v in cat.items()}
    n = len(order)
    starts = np.ones(n, bool)
    starts[1:] = ((s["h1"][1:] != s["h1"][:-1]) | (s["h2"][1:] != s["h2"][:-1])
                  | (s["y"][1:] != s["y"][:-1]))
    first = np.flatnonzero(starts)
    size = np.diff(np.append(first, n))
    if weighted:  # bincount sums in order (row ids), as ``partition_build.groups_of`` does
        w = np.concatenate([p["w"] for p in pieces])[order]
        weight = np.bincount(np.cumsum(starts) - 1, weights=w, minlength=len(first))
    else:
        weight = size.astype(np.float64)
    in_group = np.repeat(size > 1, size)
    starts_kept = starts[in_group]
    rows = s["row"][in_group]
    count = np.zeros(len(rows), np.int64)
    wsum = np.zeros(len(rows))
    count[starts_kept], wsum[starts_kept] = size[size > 1], weight[size > 1]
    dest = np.searchsorted(offsets, rows, side="right") - 1
    return _split({"row": rows, "rep": starts_kept, "count": count, "weight": wsum}, dest,
                  len(offsets))


def apply_groups(loaded: Loaded, *answers: dict) -> Loaded:
    """``loaded`` with its ``Groups`` from the owners' answers about its rows (runs on a
    worker; pure): representatives kept with their summed weights and counts, the other
    copies dropped, rows in no group kept as they are."""
    part = loaded.part
    keep = np.ones(part.n_rows, bool)
    count = np.ones(part.n_rows, np.int64)
    weight = (np.ones(part.n_rows) if part.weight is None else positive_weights(part))
    for a in answers:
        local = a["row"] - part.offset
        keep[local[~a["rep"]]] = False
        count[local[a["rep"]]] = a["count"][a["rep"]]
        weight[local[a["rep"]]] = a["weight"][a["rep"]]
    kept = np.flatnonzero(keep)
    return Loaded(part, loaded.rep, loaded.hashes, Groups(kept, weight[kept], count[kept]))


def exchanged(client, loaded: list, offsets: np.ndarray) -> list:
    """Futures of the partitions' ``Loaded`` grouped over the whole data set (the
    exchange's three steps; see the module docstring).

    Args:
        client: distributed.Client.
        loaded: futures of ``partition_build.Loaded`` with hashes, in partition order.
        offsets: each partition's original global offset.

    Returns:
        futures of ``Loaded`` with ``groups`` set, in partition order.
    """
    n_parts = len(loaded)
    n_owners = max(1, min(n_parts, MAX_OWNERS))
    offsets = np.asarray(offsets, np.int64)
    routed = [client.submit(route_rows, f, n_owners, pure=False, retries=2) for f in loaded]
    owned = [client.submit(own_hash_range, offsets,
                           *[client.submit(operator.getitem, r, b, pure=False, retries=2)
                             for r in routed], pure=False, retries=2)
             for b in range(n_owners)]
    return [client.submit(apply_groups, f,
                          *[client.submit(operator.getitem, o, p, pure=False, retries=2)
                            for o in owned], pure=False, retries=2)
            for p, f in enumerate(loaded)]
