"""The fit's progress line (logger ``randsvm_dist``, INFO): one per iteration of each
problem, on either route."""

from __future__ import annotations

import logging

log = logging.getLogger("randsvm_dist")


def log_iteration(record: dict) -> None:
    """The per-iteration progress line (logger ``randsvm_dist``, INFO)."""
    log.info(
        "iter %2d %s: sample %6d  SV %6d  violators %8d (%.4f)  dual %.6g  "
        "gap %.2e  solve %.1fs scan %.1fs  total %.1fs%s",
        record["iteration"], record.get("label", record["problem"]), record["sample_size"],
        record["n_support"], record["n_violators"], record["violator_fraction"],
        record["dual_objective"], record["relative_gap"], record["solve_seconds"],
        record["scan_seconds"], record["seconds"],
        f"  stop: {record['stop_reason']}" if record["stop_reason"] else "",
    )
