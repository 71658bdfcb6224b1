"""The scan of partitions re-read from Parquet on every pass (``cache=False``).

One task scans several of a worker's partitions in turn and reads the next one in a
thread of its own while it scans the current (Parquet decoding and the scan's kernels
release the GIL), so a worker's core waits on no read but the first. Each partition is
read straight into the float32 rows the kernel takes (``data.dataset``) and scanned by
``partition.scan_partition_task`` under its own first global row, so its screening bounds
stay on this worker between passes as a cached partition's do, and the answers are those
of one task per partition.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from randsvm_dist.core.targets import LabelCoding
from randsvm_dist.engine.partitions import load_dataset_partition
from randsvm_dist.exact.scan.partition import ScanAnswer, ScanInputs, scan_partition_task


def scan_reread_task(dataset, items: list[tuple[int, int]], coding: LabelCoding,
                     inputs: ScanInputs, transform=None) -> list[ScanAnswer]:
    """Read and scan the partitions ``items`` ((index, first global row) each), in order,
    the next one read while the current one is scanned (runs on a worker).

    Args:
        dataset: the ``data.dataset.Dataset`` the partitions are read from.
        items: (partition index, its first global row), in the order to scan them.
        coding: how the labels are coded.
        inputs: the scan's models and requests.
        transform: applied to each partition after its read (``PartitionSet.transform``).

    Returns:
        one ScanAnswer per item, in order.

    Raises:
        DataFormatError, SchemaError: a partition cannot be read (as ``Dataset``).
    """
    out: list[ScanAnswer] = []
    if not items:
        return out
    with ThreadPoolExecutor(1, thread_name_prefix="randsvm-read") as reader:
        upcoming = reader.submit(load_dataset_partition, dataset, *items[0], coding,
                                 transform)
        for k in range(len(items)):
            part = upcoming.result()
            if k + 1 < len(items):
                upcoming = reader.submit(load_dataset_partition, dataset, *items[k + 1],
                                         coding, transform)
            out.append(scan_partition_task(part, inputs, part.offset))
            del part
    return out
