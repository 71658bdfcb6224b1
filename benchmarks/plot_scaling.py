"""Time against n, LIBSVM vs RandSVM, on log-log axes, from the recorded benchmark rows.

Reads whatever rows ``bench_randsvm.py --out`` appended to the results file (last
certified run per set and n, see ``load_rows``) and draws one colour per data set: LIBSVM
solid with circles (hollow: a reference figure, not measured in-run), RandSVM dashed with
squares. Run after new benchmarks land:

    python benchmarks/plot_scaling.py                       # -> benchmarks/randsvm_scaling.png
    python benchmarks/plot_scaling.py --results R.jsonl --out P.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_rows(path: Path) -> list[dict]:
    """The last certified RandSVM row per (set, n) with default solver settings (no seed,
    no cache_size; the cache/memory settings of the 1e7 rows kept), in file order. Rows of
    LIBSVM alone (``--libsvm-only``) and of the earlier, uncertified defaults are skipped.
    """
    rows: dict = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            key = (r["set"], int(r["n"]))
            r["libsvm"]  # noqa: B018 - required field
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}:{i}: not a benchmark row ({e!r})") from None
        if (not r.get("randsvm") or "relative_gap" not in r["randsvm"] or r.get("seed")
                or r.get("cache_size")):
            continue
        rows[key] = r
    return list(rows.values())


def plot(rows: list[dict], out: Path) -> Path:
    """Draw the rows; returns ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, list[dict]] = {}
    for r in rows:
        series.setdefault(r["set"], []).append(r)
    fig, ax = plt.subplots(figsize=(8, 6))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, rs) in enumerate(sorted(series.items())):
        rs = sorted(rs, key=lambda r: r["n"])
        c = colours[i % len(colours)]
        n = [r["n"] for r in rs]
        lib = [r for r in rs if r["libsvm"].get("seconds")]  # 1e7: LIBSVM not run
        ax.plot([r["n"] for r in lib], [r["libsvm"]["seconds"] for r in lib], "o-", color=c,
                label=f"{name}: LIBSVM")
        for r in lib:
            measured = r["libsvm"].get("source", "run") == "run"
            ax.plot(r["n"], r["libsvm"]["seconds"], "o", color=c, ms=7,
                    markerfacecolor=c if measured else "white")
        ax.plot(n, [r["randsvm"]["seconds"] for r in rs], "s--", color=c,
                label=f"{name}: RandSVM")
    ax.set(xscale="log", yscale="log", xlabel="training rows n", ylabel="wall seconds",
           title="RandSVM vs LIBSVM on all rows (hollow circle: reference LIBSVM figure)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--results`` JSON lines in, ``--out`` PNG out."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=HERE / "results" / "randsvm.jsonl")
    p.add_argument("--out", type=Path, default=HERE / "randsvm_scaling.png")
    args = p.parse_args(argv)
    rows = load_rows(args.results)
    if not rows:
        raise SystemExit(f"{args.results}: no benchmark rows")
    print(f"drew {len(rows)} rows of {args.results} to {plot(rows, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
