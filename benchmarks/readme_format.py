"""Markdown building blocks of benchmarks/README.md (``make_readme.py`` and its sections):
tables, targets tables, command blocks, prose folding."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    """A Markdown table: takes the header cells and rows of cells, returns its lines."""
    header = list(header)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def met(ok: bool | None) -> str:
    """'met', '**missed**', or 'not run' (None: nothing to decide on)."""
    return "not run" if ok is None else "met" if ok else "**missed**"


def targets(rows: Iterable[tuple[str, str, bool | None]]) -> list[str]:
    """The targets table: (target, measured, met) triples, returns its lines."""
    return [""] + table(["target", "measured", "met?"], [(t, m, met(ok)) for t, m, ok in rows])


def command(*lines: str) -> list[str]:
    """A fenced block of the commands that reproduce a table."""
    return ["", "```bash", *lines, "```", ""]


def pct(x: float) -> str:
    """A fraction as a percentage with two decimals."""
    return f"{100 * x:.2f}"


def wrap(lines: list[str]) -> list[str]:
    """Prose lines folded at 92 columns; table rows and code blocks left as they are."""
    out, fenced = [], False
    for line in lines:
        fenced ^= line.startswith("```")
        keep = fenced or line.startswith(("|", "```")) or len(line) <= 92
        out += [line] if keep else textwrap.wrap(line, 92, break_on_hyphens=False)
    return out
