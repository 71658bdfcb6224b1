"""Data-layer throughput: generation, svmlight conversion and partition reads.

Each generation/conversion runs as the real CLI command under ``/usr/bin/time -v`` in a
fresh process, so the peak RSS is that of the whole command (interpreter and imports
included). Scratch data goes to ``--workdir`` (default /tmp/randsvm-bench-data), never into
the repository.

Usage::

    python benchmarks/bench_data.py                       # full run (about 2-4 minutes)
    python benchmarks/bench_data.py --quick               # small sizes, a smoke test
    python benchmarks/bench_data.py --make-rows 10000000 --svm-rows 3000000

Prints a Markdown table (and writes ``results.json`` in the workdir).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TIME = "/usr/bin/time"


def run_cli(args: list[str]) -> dict:
    """Run ``randsvm-dist ARGS`` under /usr/bin/time -v; return wall s, peak RSS MiB, output."""
    cmd = [TIME, "-v", "randsvm-dist", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)[1])
    inner = re.search(r" in ([\d.]+) s ", proc.stdout)
    return {
        "command": "randsvm-dist " + " ".join(args),
        "wall_s": wall,
        "inner_s": float(inner[1]) if inner else None,
        "peak_rss_mib": rss_kb / 1024,
        "stdout": proc.stdout.strip(),
    }


def write_svmlight(name: str, rows: int, path: Path, seed: int = 0,
                   block: int = 200_000) -> float:
    """Write ``rows`` rows of generator ``name`` as svmlight text (gz if path ends .gz).

    Every value is written (float32's shortest exact text). Returns seconds taken.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from randsvm_dist.data import make_arrays

    t0 = time.perf_counter()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb", **({"compresslevel": 1} if path.suffix == ".gz" else {})) as f:
        for start in range(0, rows, block):
            X, y = make_arrays(name, min(block, rows - start), seed, start)
            # Arrow's float32 -> string cast gives the shortest exact text of each value.
            toks = [pc.binary_join_element_wise(f"{j + 1}", pc.cast(pa.array(X[:, j]),
                                                                     pa.string()), ":")
                    for j in range(X.shape[1])]
            lines = pc.binary_join_element_wise(pc.cast(pa.array(y), pa.string()), *toks, " ")
            f.write(("\n".join(lines.to_pylist()) + "\n").encode())
    return time.perf_counter() - t0


def bench_read(dst: Path) -> dict:
    """Read every partition of a data set once in this process; rows/s."""
    from randsvm_dist.data import Dataset

    ds = Dataset.open(dst)
    t0 = time.perf_counter()
    for i in range(ds.n_partitions):
        ds.read_partition(i)
    s = time.perf_counter() - t0
    return {"what": f"read_partition x {ds.n_partitions} ({dst.name})", "rows": ds.n_rows,
            "seconds": s, "rows_per_s": ds.n_rows / s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/tmp/randsvm-bench-data")
    ap.add_argument("--make-rows", type=int, default=10_000_000)
    ap.add_argument("--make-partitions", type=int, default=40)
    ap.add_argument("--svm-rows", type=int, default=3_000_000)
    ap.add_argument("--svm-set", default="twonorm", help="generator written as svmlight")
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"
                                            / "datasets"),
                    help="the shared LIBSVM data sets (default ../shared/datasets)")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch data")
    args = ap.parse_args(argv)
    if args.quick:
        args.make_rows, args.make_partitions, args.svm_rows = 200_000, 4, 50_000
    if not shutil.which(TIME.split("/")[-1]) and not os.path.exists(TIME):
        raise SystemExit("needs /usr/bin/time (GNU time) for peak RSS")
    work = Path(args.workdir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    results: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                     "machine": f"{platform.node()} {os.cpu_count()} cpu, "
                                f"load {os.getloadavg()[0]:.1f} at start",
                     "runs": []}

    # 1. Generation.
    gens = [("checkerboard", args.make_rows, args.make_partitions),
            ("twonorm", args.make_rows // 5, max(1, args.make_partitions // 5)),
            ("waveform", args.make_rows // 5, max(1, args.make_partitions // 5))]
    for name, rows, parts in gens:
        dst = work / f"make_{name}"
        r = run_cli(["data", "make", name, str(dst), "--rows", str(rows), "--partitions",
                     str(parts), "--seed", "0", "--no-progress"])
        r.update(kind="make", rows=rows)
        results["runs"].append(r)
        print(f"make {name}: {rows:,} rows, wall {r['wall_s']:.1f} s, "
              f"peak {r['peak_rss_mib']:.0f} MiB", file=sys.stderr)

    # 2. svmlight conversion (plain and gzip), sparse and dense.
    svm = work / f"{args.svm_set}.svm"
    svm_gz = work / f"{args.svm_set}.svm.gz"
    t_plain = write_svmlight(args.svm_set, args.svm_rows, svm)
    t_gz = write_svmlight(args.svm_set, args.svm_rows // 3, svm_gz)
    results["svmlight_files"] = {
        str(svm): {"rows": args.svm_rows, "bytes": svm.stat().st_size, "write_s": t_plain},
        str(svm_gz): {"rows": args.svm_rows // 3, "bytes": svm_gz.stat().st_size,
                      "write_s": t_gz},
    }
    convs = [
        (svm, args.svm_rows, ["--sparse"]),
        (svm, args.svm_rows, ["--dense", "--n-features", "20"]),
        (svm, args.svm_rows, ["--dense", "--partitions", "8"]),
        (svm_gz, args.svm_rows // 3, ["--sparse"]),
    ]
    for k, (src, rows, extra) in enumerate(convs):
        dst = work / f"conv_{k}"
        r = run_cli(["data", "convert", str(src), str(dst), *extra, "--no-progress"])
        r.update(kind="convert", rows=rows, input_bytes=src.stat().st_size)
        results["runs"].append(r)
        print(f"convert {src.name} {' '.join(extra)}: wall {r['wall_s']:.1f} s, "
              f"peak {r['peak_rss_mib']:.0f} MiB", file=sys.stderr)

    # 3. The real LIBSVM sets in ../shared/datasets (read in place, never copied).
    shared = Path(args.shared)
    for rel, extra in [("a9a/a9a.train.svm.gz", []),
                       ("a9a/a9a.test.svm.gz", ["--n-features", "123"]),
                       ("ijcnn1/ijcnn1.train.svm.gz", []),
                       ("ijcnn1/ijcnn1.test.svm.gz", []),
                       ("skin_nonskin/skin_nonskin.svm.gz", ["--dense"])]:
        src = shared / rel
        if not src.exists():
            continue
        dst = work / ("real_" + src.name.split(".svm")[0])
        r = run_cli(["data", "convert", str(src), str(dst), *extra, "--no-progress"])
        rows = int(re.search(r": ([\d,]+) rows", r["stdout"])[1].replace(",", ""))
        r.update(kind="convert", rows=rows, input_bytes=src.stat().st_size)
        r["command"] = r["command"].replace(str(shared), "$SHARED")
        results["runs"].append(r)

    # 4. Reads.
    results["reads"] = [bench_read(work / "make_twonorm"), bench_read(work / "conv_0"),
                        bench_read(work / "conv_1")]

    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(f"\nDate: {results['date']}; {results['machine']}\n")
    print("| command | rows | wall s (process) | rows/s (process) | rows/s (work only) "
          "| peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results["runs"]:
        inner = f"{r['rows'] / r['inner_s']:,.0f}" if r["inner_s"] else "-"
        cmd = r["command"].replace(str(work), "$W")
        print(f"| `{cmd}` | {r['rows']:,} | {r['wall_s']:.1f} | "
              f"{r['rows'] / r['wall_s']:,.0f} | {inner} | {r['peak_rss_mib']:.0f} |")
    print("\n| read | rows | seconds | rows/s |\n|---|---:|---:|---:|")
    for r in results["reads"]:
        print(f"| {r['what']} | {r['rows']:,} | {r['seconds']:.2f} | {r['rows_per_s']:,.0f} |")
    for p, f in results["svmlight_files"].items():
        print(f"\n{p.replace(str(work), '$W')}: {f['rows']:,} rows, "
              f"{f['bytes'] / 2**20:.0f} MiB")
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
