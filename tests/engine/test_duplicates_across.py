"""Duplicates in different partitions: the hash-routed exchange (``engine.duplicate_exchange``)
collapses them into one weighted row each, the lowest row id representing its copies, with
the same model as no collapsing and the same collapsed set whatever the worker layout."""

from __future__ import annotations

import numpy as np
import pytest

from randsvm_dist import RandSVMClassifier, RandSVMOneClass
from randsvm_dist.data import make_arrays
from randsvm_dist.engine.duplicate_exchange import (
    apply_groups,
    estimated_copies,
    own_hash_range,
    route_rows,
    sampled_hashes,
)
from randsvm_dist.engine.inputs import load_partitions
from randsvm_dist.engine.partition_build import finish, load_rows
from randsvm_dist.engine.partitions import Partition, fetch_rows, original_rows
from randsvm_dist.engine.row_totals import class_counts

EXACT = {"gap_tol": 1e-5, "tol": 1e-6, "random_state": 0}


def _copies_apart(n: int = 150, seed: int = 2):
    """Rows whose copies sit in other partitions: X, X reversed, then 40 rows again (so
    that cut into 2 or 3 partitions, most copies are in another partition)."""
    X, y = make_arrays("twonorm", n, seed=seed)
    X, y = X.astype(np.float32), np.where(y > 0, 1, 0)
    idx = np.concatenate([np.arange(n), np.arange(n)[::-1], np.arange(40)])
    return X[idx], y[idx]


def _true_copies(X, y) -> int:
    return len(y) - len(np.unique(np.column_stack([X, y]), axis=0))


def _lowest_row_of_each_group(X, y) -> np.ndarray:
    _, first = np.unique(np.column_stack([X, y]), axis=0, return_index=True)
    return np.sort(first)


def _exchange_in_process(X, y, w, bounds, n_owners):
    """The exchange's three steps run in this process on partitions cut at ``bounds``."""
    loaded = [load_rows(Partition(X[a:b], y[a:b], int(a), None if w is None else w[a:b]),
                        True) for a, b in zip(bounds[:-1], bounds[1:])]
    routed = [route_rows(f, n_owners) for f in loaded]
    owned = [own_hash_range(np.asarray(bounds[:-1]), *[r[b] for r in routed])
             for b in range(n_owners)]
    return [apply_groups(f, *[o[p] for o in owned]) for p, f in enumerate(loaded)]


def _collapsed_rows(loaded):
    """(original row ids, weights, counts) of the kept rows, in row order."""
    parts = [finish(f, 0, True, "keep") for f in loaded]
    return (np.concatenate([p.original_rows() for p in parts]),
            np.concatenate([p.weights() for p in parts]),
            np.concatenate([p.counts() for p in parts]))


# -- the exchange's tasks, in process -------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_exchange_keeps_the_lowest_row_and_sums_weights_whatever_the_cut(weighted):
    X, y = _copies_apart()
    y = y.copy()
    y[-5:] = 1 - y[-5:]  # the same features with another label: a group of its own
    w = np.random.default_rng(3).uniform(-0.5, 2.0, len(y)) if weighted else None
    n = len(y)
    got = [_collapsed_rows(_exchange_in_process(X, y, w, bounds, n_owners))
           for bounds, n_owners in (([0, n], 1), ([0, 100, 200, n], 3), ([0, 7, 250, n], 2))]
    keep = _lowest_row_of_each_group(X, y)
    _, inverse = np.unique(np.column_stack([X, y]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    group_of_kept = inverse[keep]
    ones = np.ones(n) if w is None else np.maximum(w, 0.0)
    want_w = np.bincount(inverse, weights=ones)[group_of_kept]
    for rows, weights, counts in got:
        np.testing.assert_array_equal(rows, keep)
        np.testing.assert_array_equal(counts, np.bincount(inverse)[group_of_kept])
        np.testing.assert_allclose(weights, want_w, rtol=1e-12)
    for _, weights, _ in got[1:]:  # summed in row-id order: bit for bit the same
        np.testing.assert_array_equal(weights, got[0][1])


def test_hash_sample_estimates_the_copies_and_is_exact_when_it_holds_every_row():
    X, y = _copies_apart()
    loaded = [load_rows(Partition(X[a:b], y[a:b], a), True) for a, b in ((0, 170), (170, 340))]
    whole = np.concatenate([sampled_hashes(f, 1.0) for f in loaded])
    assert len(whole) == len(y) and estimated_copies(whole, 1.0) == _true_copies(X, y)
    half = np.concatenate([sampled_hashes(f, 0.5) for f in loaded])
    assert 0 < len(half) < len(y)
    every = np.concatenate([f.hashes for f in loaded])
    assert np.isin(every, half).sum() == len(half)  # a sampled row's copies are all sampled


# -- placed partitions -----------------------------------------------------------------------
def test_partitions_collapse_across_and_map_back(dask_client):
    X, y = _copies_apart()
    sw = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    parts, _ = load_partitions(dask_client, X, y, n_partitions=3, sample_weight=sw,
                               collapse=True)
    copies = _true_copies(X, y)
    assert parts.exchanged and parts.n_collapsed == copies
    assert 0 < parts.n_collapsed_across <= copies and parts.n_rows == len(y) - copies
    rows = np.arange(parts.n_rows)
    _, Xc, yc, w = fetch_rows(dask_client, parts, rows)
    orig = original_rows(dask_client, parts, rows)
    np.testing.assert_array_equal(orig, _lowest_row_of_each_group(X, y))
    np.testing.assert_array_equal(Xc, X[orig])
    np.testing.assert_array_equal(yc, y[orig])
    np.testing.assert_allclose(w.sum(), sw.sum())
    np.testing.assert_array_equal(class_counts(dask_client, parts, 2), np.bincount(y))


def test_copies_side_by_side_give_the_one_partition_set(dask_client):
    """Copies all within partitions: the exchange still runs (collapsing pays) and gives,
    bit for bit, what one partition's own grouping gives."""
    X, y = make_arrays("twonorm", 200, seed=4)
    X, y = np.repeat(X.astype(np.float32), 3, axis=0), np.repeat(np.where(y > 0, 1, 0), 3)
    sw = np.random.default_rng(8).uniform(0.5, 2.0, len(y))
    got = []
    for n_partitions in (1, 3):
        parts, _ = load_partitions(dask_client, X, y, n_partitions=n_partitions,
                                   sample_weight=sw, collapse=True)
        rows = np.arange(parts.n_rows)
        _, _, _, w = fetch_rows(dask_client, parts, rows)
        got.append((parts.exchanged, original_rows(dask_client, parts, rows), w,
                    parts.n_collapsed))
    assert not got[0][0] and got[1][0]
    np.testing.assert_array_equal(got[0][1], got[1][1])
    np.testing.assert_array_equal(got[0][2], got[1][2])
    assert got[0][3] == got[1][3] == _true_copies(X, y)


def test_few_copies_neither_exchange_nor_collapse(dask_client):
    X, y = make_arrays("twonorm", 300, seed=9)
    X, y = X.astype(np.float32), np.where(y > 0, 1, 0)
    X, y = np.vstack([X, X[:30]]), np.concatenate([y, y[:30]])  # 9% copies, all apart
    parts, _ = load_partitions(dask_client, X, y, n_partitions=2, collapse=True)
    assert not parts.exchanged and parts.n_collapsed == 0 and parts.n_rows == len(y)


# -- same model ------------------------------------------------------------------------------
def _fit(est_cls, client, X, y, collapse: bool, sample_weight=None, **params):
    est = est_cls(client=client, **params)
    est._may_collapse = lambda: collapse  # the rule under test, forced
    return est.fit(X, y, sample_weight=sample_weight) if y is not None else \
        est.fit(X, sample_weight=sample_weight)


@pytest.mark.parametrize("weighted", [False, True])
def test_classifier_collapsed_across_equals_uncollapsed(dask_client, weighted):
    X, y = _copies_apart()
    sw = np.random.default_rng(5).uniform(0.5, 2.0, len(y)) if weighted else None
    params = dict(C=2.0, class_weight={0: 1.0, 1: 3.0}, **EXACT)
    a = _fit(RandSVMClassifier, dask_client, X, y, False, sw, **params)
    b = _fit(RandSVMClassifier, dask_client, X, y, True, sw, **params)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)
    assert a.certified_ and b.certified_
    copies = _true_copies(X, y)
    assert {h["duplicates_collapsed"] for h in b.history_} == {copies}
    assert {h["duplicates_collapsed"] for h in a.history_} == {0}
    np.testing.assert_array_equal(X[b.support_], b.support_vectors_)
    assert set(b.support_) <= set(_lowest_row_of_each_group(X, y))


def test_one_class_collapsed_across_equals_uncollapsed(dask_client):
    X, _ = _copies_apart()
    a = _fit(RandSVMOneClass, dask_client, X, None, False, nu=0.3, **EXACT)
    b = _fit(RandSVMOneClass, dask_client, X, None, True, nu=0.3, **EXACT)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)
    assert a.certified_ and b.certified_


def test_same_collapsed_set_and_model_for_one_and_two_workers(dask_client):
    from distributed import Client, LocalCluster

    X, y = _copies_apart()
    sw = np.random.default_rng(6).uniform(0.5, 2.0, len(y))
    sets, models = [], []
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as one, \
            Client(one, set_as_default=False) as one_worker:
        clients = (one_worker, dask_client)
        for client in clients:
            parts, _ = load_partitions(client, X, y, sample_weight=sw, collapse=True)
            rows = np.arange(parts.n_rows)
            _, _, _, w = fetch_rows(client, parts, rows)
            sets.append((original_rows(client, parts, rows), w, parts.n_collapsed,
                         parts.n_partitions))
            models.append(_fit(RandSVMClassifier, client, X, y, True, sw, C=2.0, **EXACT))
    assert sets[0][3] != sets[1][3]  # another cut into partitions
    np.testing.assert_array_equal(sets[0][0], sets[1][0])
    np.testing.assert_array_equal(sets[0][1], sets[1][1])  # bit for bit
    assert sets[0][2] == sets[1][2] == _true_copies(X, y)
    a, b = models
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-3)
    assert a.certified_ and b.certified_


def test_a_worker_lost_after_the_exchange_loses_no_row():
    """SIGKILL a worker holding exchanged partitions: Dask recomputes them (and the
    exchange's tasks they come from) from the same inputs; the collapsed set is unchanged."""
    import os
    import signal
    import time

    from distributed import Client

    from randsvm_dist.engine.launcher import launch, wait_for_workers

    X, y = _copies_apart()
    sw = np.random.default_rng(7).uniform(0.5, 2.0, len(y))
    procs = launch(n_workers=2)
    try:
        with Client(procs.address, set_as_default=False, timeout="60s") as client:
            wait_for_workers(client, 2)
            parts, _ = load_partitions(client, X, y, n_partitions=4, sample_weight=sw,
                                       collapse=True)
            rows = np.arange(parts.n_rows)
            before = fetch_rows(client, parts, rows), original_rows(client, parts, rows)
            victim = next(iter(client.who_has(parts.futures[0]).values()))[0]
            os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
            deadline = time.monotonic() + 60
            while victim in client.scheduler_info()["workers"]:  # its partitions are lost
                assert time.monotonic() < deadline, "the killed worker was never removed"
                time.sleep(0.05)
            after = fetch_rows(client, parts, rows), original_rows(client, parts, rows)
    finally:
        procs.close()
    assert parts.exchanged
    for a, b in zip(before[0][1:], after[0][1:]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(before[1], after[1])
