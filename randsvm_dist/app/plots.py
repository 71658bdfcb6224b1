"""Pictures of a RandSVM training history (matplotlib, drawn off-screen with Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from randsvm_dist.exceptions import DataFormatError, ParameterError

#: the per-iteration fields a history record must have to be drawn
HISTORY_FIELDS = ("iteration", "relative_gap", "n_violators", "n_support", "solve_seconds",
                  "scan_seconds")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ParameterError("drawing needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def history_records(report: Any, source: str = "the report") -> list[dict]:
    """The history of a training report (``train --report/--json``, or a benchmark row).

    Args:
        report: a dict with ``history`` (or ``history`` under ``randsvm``), or the list itself.
        source: how to name the input in errors.

    Returns:
        the per-iteration records.

    Raises:
        DataFormatError: no history, or records without the fields drawn.
    """
    if isinstance(report, dict):
        report = report.get("history", (report.get("randsvm") or {}).get("history"))
    if not isinstance(report, list) or not report:
        raise DataFormatError(f"{source} has no training history (expected the JSON of "
                              "'randsvm-dist train --report FILE' with a 'history' list)")
    for i, rec in enumerate(report):
        missing = [f for f in HISTORY_FIELDS if not isinstance(rec, dict) or f not in rec]
        if missing:
            raise DataFormatError(f"{source}: history record {i} lacks {', '.join(missing)}")
    return report


def plot_history(history: Sequence[dict], path: str | Path, *, title: str = "") -> Path:
    """Draw relative gap, violators, #SV, and solve/scan seconds per iteration as a PNG.

    Args:
        history: records as in ``RandSVMClassifier.history_`` (one line per problem when a
            multi-class fit has several).
        path: the PNG to write.
        title: the figure's title.

    Returns:
        the path written.

    Raises:
        DataFormatError: records without the fields drawn.
        ParameterError: matplotlib is not installed.
    """
    history = history_records(list(history), "the history")
    plt = _pyplot()
    problems = sorted({rec.get("problem", 0) for rec in history})
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    (gap_ax, vio_ax), (sv_ax, time_ax) = axes
    for j in problems:
        recs = [r for r in history if r.get("problem", 0) == j]
        it = [r["iteration"] for r in recs]
        label = f"problem {j}" if len(problems) > 1 else None
        gap_ax.plot(it, [max(r["relative_gap"], 1e-16) for r in recs], "o-", label=label)
        vio_ax.plot(it, [r["n_violators"] for r in recs], "o-", label=label)
        sv_ax.plot(it, [r["n_support"] for r in recs], "o-", label=label)
        suffix = f" ({label})" if label else ""
        time_ax.plot(it, [r["solve_seconds"] for r in recs], "o-", label="solve" + suffix)
        time_ax.plot(it, [r["scan_seconds"] for r in recs], "s--", label="scan" + suffix)
    gap_ax.set(yscale="log", ylabel="relative primal-dual gap", title="gap")
    vio_ax.set_yscale("symlog", linthresh=1)
    vio_ax.set_ylim(bottom=0)
    vio_ax.set(ylabel="KKT violators (all rows)", title="violators")
    sv_ax.set(ylabel="support vectors", title="#SV", xlabel="iteration")
    time_ax.set(ylabel="seconds", title="solve and scan time", xlabel="iteration")
    time_ax.legend()
    if len(problems) > 1:
        gap_ax.legend()
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
