"""``randsvm-dist report RUN.json``: draw a training history as a PNG."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from randsvm_dist.cli.options import add_output, emit
from randsvm_dist.exceptions import DataFormatError, ParameterError


def cmd_report(args: argparse.Namespace) -> int:
    """Read a ``train --report`` (or ``--json``) file and draw its history.

    Returns:
        0.

    Raises:
        DataFormatError: the file is not JSON or has no history.
    """
    from randsvm_dist.cli.outputs import publish

    src = Path(args.run)
    out = Path(args.out) if args.out else src.with_suffix(".png")
    check_picture_suffix(out)
    args.outputs.file(out, overwrite=args.overwrite, what="--out", inputs=(src,))
    try:
        report = json.loads(src.read_text())
    except (OSError, ValueError) as e:
        raise DataFormatError(f"{src}: not a readable JSON report ({e})") from None
    from randsvm_dist.app.plots import history_records, plot_history

    history = history_records(report, str(src))
    title = args.title if args.title is not None else _title(report, src)
    publish(out, lambda tmp: plot_history(history, tmp, title=title),
            overwrite=args.overwrite, what="--out")
    last = history[-1]
    result = {"run": str(src), "png": str(out), "iterations": len(history),
              "final_relative_gap": last["relative_gap"], "final_n_support": last["n_support"],
              "final_n_violators": last["n_violators"]}
    emit(args, result, f"drew {len(history)} iterations of {src} to {out}")
    return 0


def check_picture_suffix(path: Path) -> None:
    """The picture's format comes from its suffix: refuse one matplotlib cannot write.

    Raises:
        ParameterError: naming the suffix and the formats that can be written.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in formats:
        raise ParameterError(f"--out {path}: a picture's suffix names its format; "
                             f"{path.suffix or 'no suffix'} is none of "
                             f"{', '.join(sorted(formats))}")


def _title(report, src: Path) -> str:
    if not isinstance(report, dict):
        return src.name
    parts = [str(report.get("data") or report.get("set") or src.name)]
    if report.get("n") is not None:  # a benchmark row
        parts.append(f"n={report['n']:,}")
    if report.get("n_support") is not None:
        parts.append(f"{report['n_support']:,} SV")
    if report.get("fit_seconds") is not None:
        parts.append(f"{report['fit_seconds']:.1f} s")
    if report.get("stop_reasons"):
        parts.append("stop: " + ", ".join(report["stop_reasons"]))
    return ", ".join(parts)


def register(subparsers) -> None:
    """Add the ``report`` command."""
    p = subparsers.add_parser(
        "report", help="draw a training history (train --report FILE) as a PNG",
        description="Plot relative primal-dual gap, KKT violators, support vectors, and "
                    "solve and scan seconds per iteration of a RandSVM run.")
    p.add_argument("run", help="JSON written by 'randsvm-dist train --report FILE' (or "
                               "its --json output)")
    p.add_argument("--out", default=None, metavar="PNG",
                   help="where to write the picture (default: RUN with .png)")
    p.add_argument("--title", default=None, help="figure title (default: from the report)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing PNG")
    add_output(p, report=False)
    p.set_defaults(func=cmd_report)
