"""Shared fixtures: the ../shared data sets and a small LocalCluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(os.environ.get("RANDSVM_SHARED_DATASETS",
                                      ROOT.parent / "shared" / "datasets"))


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """Path of ../shared/datasets (the real LIBSVM-format data sets)."""
    if not SHARED_DATASETS.is_dir():
        pytest.fail(f"shared data sets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def dask_client():
    """A LocalCluster sized for 2 cores: 2 workers x 1 thread, no dashboard."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client
