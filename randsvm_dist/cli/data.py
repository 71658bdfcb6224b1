"""``randsvm-dist data convert|make|info``: convert, generate and describe Parquet data sets."""

from __future__ import annotations

import argparse
import time

import numpy as np

from randsvm_dist.cli.options import add_output, add_overwrite_progress, emit
from randsvm_dist.data.generators import GENERATORS


def register(subparsers) -> None:
    """Add the ``data`` command group (long only because it lists its argparse options)."""
    data = subparsers.add_parser("data", help="convert, generate and inspect Parquet data sets")
    sub = data.add_subparsers(dest="data_command", required=True)

    p = sub.add_parser(
        "convert", help="svmlight/LIBSVM text, CSV or Parquet -> partitioned Parquet",
        description="Convert a data file to a partitioned Parquet data set, streamed in "
                    "bounded memory. The format comes from the name (.csv/.tsv: CSV; "
                    ".parquet or a directory: Parquet; anything else: svmlight), "
                    ".gz/.bz2/.xz are decompressed.")
    p.add_argument("src", help="input file or URL")
    p.add_argument("dst", help="output directory or URL (must not exist)")
    _add_partitioning(p)
    layout = p.add_mutually_exclusive_group()
    layout.add_argument("--dense", dest="dense", action="store_true", default=None,
                        help="one float32 column per feature (default for CSV)")
    layout.add_argument("--sparse", dest="dense", action="store_false",
                        help="indices/values list columns (default for svmlight)")
    p.add_argument("--n-features", type=int, default=None, metavar="D",
                   help="feature count (e.g. a test file whose highest index is lower: "
                        "a9a.t needs 123)")
    p.add_argument("--label-column", default=None, metavar="NAME|INDEX",
                   help="CSV: label column name or 0-based index (default: label/class/"
                        "target/y if present, else the first, said in a note), or 'none' "
                        "for data without labels (every column a feature, labels written "
                        "as 0: for predict); Parquet: its name")
    p.add_argument("--format", choices=["svmlight", "libsvm", "csv", "parquet"], default=None)
    p.add_argument("--header", choices=["auto", "yes", "no"], default="auto",
                   help="CSV: does line 1 hold column names (default: auto)")
    p.add_argument("--delimiter", default=None, help="CSV field separator (default ',')")
    add_overwrite_progress(p)
    p.set_defaults(func=_convert)

    p = sub.add_parser(
        "make", help="generate a synthetic data set partition by partition",
        description="Generate a seed paper's synthetic set. The same seed gives the same "
                    "rows whatever the partition count.")
    p.add_argument("name", choices=sorted(GENERATORS), metavar="NAME",
                   help="one of: " + ", ".join(sorted(GENERATORS)))
    p.add_argument("dst", help="output directory or URL (must not exist)")
    p.add_argument("--rows", type=int, required=True, help="number of rows")
    _add_partitioning(p)
    p.add_argument("--random-state", "--seed", dest="seed", type=int, default=0,
                   help="seed of the generator, as every command's --random-state "
                        "(default 0)")
    p.add_argument("--noise", type=float, default=None, metavar="SIGMA",
                   help="friedman1: standard deviation of the Gaussian noise (default 1.0)")
    p.add_argument("--outlier-fraction", type=float, default=None, metavar="F",
                   help="blobs_with_outliers: share of uniform outliers (default 0.05)")
    add_overwrite_progress(p)
    p.set_defaults(func=_make)

    p = sub.add_parser("info", help="rows, features, partitions, classes and bytes of a set",
                       description="Describe a Parquet data set from its metadata.")
    p.add_argument("data", metavar="DATA", help="data set directory, file or URL")
    p.add_argument("--label-column", default="label", help="label column (default: label)")
    add_feature_columns(p)
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip reading every part to check it against its manifest checksum")
    add_output(p, report=False)
    p.set_defaults(func=_info)

    from randsvm_dist.cli.scale import register_data_scale

    register_data_scale(sub)


FEATURES_HELP = ("dense Parquet: the feature columns, in order, comma-separated (Python's "
                 "feature_columns=; default: every column but the label, the weight column "
                 "and a pandas/Dask index)")
EXCLUDE_HELP = "dense Parquet: leave these columns (comma-separated) out of the features"


def add_feature_columns(p: argparse.ArgumentParser) -> None:
    """``--features`` / ``--exclude-columns``: which columns of a dense Parquet data set
    are features (``feature_columns``, see ``feature_columns``)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--features", default=None, metavar="A,B,...", help=FEATURES_HELP)
    g.add_argument("--exclude-columns", default=None, metavar="A,B,...", help=EXCLUDE_HELP)
    add_one_hot(p)


ONE_HOT_HELP = ("dense Parquet: one-hot encode these feature columns (comma-separated; "
                "strings, categoricals, integers or booleans): one 0/1 feature "
                "COLUMN=VALUE per category, the categories those of the training data, "
                "saved in the model (Python's one_hot_columns=)")


def add_one_hot(p: argparse.ArgumentParser) -> None:
    """``--one-hot COL[,COL]``: feature columns to one-hot encode (``one_hot_columns``)."""
    p.add_argument("--one-hot", dest="one_hot", default=None, metavar="A,B,...",
                   help=ONE_HOT_HELP)


def one_hot_columns(args) -> list[str] | None:
    """The ``one_hot_columns=`` that ``--one-hot`` asks for (None: none)."""
    listed = getattr(args, "one_hot", None)
    return [c.strip() for c in listed.split(",") if c.strip()] if listed else None


def feature_columns(args, label_column: str = "label",
                    weight_column: str | None = None) -> list[str] | None:
    """The ``feature_columns=`` that ``--features`` / ``--exclude-columns`` ask for (None:
    the default features).

    Raises:
        SchemaError: an excluded column the data set does not have.
    """
    from randsvm_dist.data.filesystem import resolve
    from randsvm_dist.data.footers import partition_files, read_footers
    from randsvm_dist.data.parquet_layout import hive_keys, index_columns
    from randsvm_dist.exceptions import SchemaError

    listed = getattr(args, "features", None)
    if listed:
        return [c.strip() for c in listed.split(",") if c.strip()]
    excluded = getattr(args, "exclude_columns", None)
    if not excluded:
        return None
    drop = [c.strip() for c in excluded.split(",") if c.strip()]
    fs, root = resolve(str(args.data))
    schema = read_footers(fs, partition_files(fs, root, str(args.data))[0][:1])[2]
    missing = [c for c in drop if c not in schema.names]
    if missing:
        raise SchemaError(f"{args.data}: --exclude-columns names {missing}, not columns of "
                          f"it; columns are {schema.names}")
    paths = partition_files(fs, root, str(args.data))[0]
    skip = {label_column, weight_column, *index_columns(schema), *drop,
            *hive_keys(paths, root)}
    return [c for c in schema.names if c not in skip]


def _add_partitioning(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="number of partitions (text input: rows are counted first)")
    g.add_argument("--rows-per-partition", type=int, default=None, metavar="R",
                   help="rows per partition (default 1,000,000)")


def _convert(args) -> int:
    from randsvm_dist.data.convert import convert

    args.outputs.directory(args.dst, overwrite=args.overwrite, what="output",
                           inputs=(args.src,))
    header = {"auto": "auto", "yes": True, "no": False}[args.header]
    t0 = time.perf_counter()
    ds = convert(args.src, args.dst, partitions=args.partitions,
                 rows_per_partition=args.rows_per_partition, dense=args.dense,
                 n_features=args.n_features, label_column=args.label_column,
                 format=args.format, header=header, delimiter=args.delimiter,
                 overwrite=args.overwrite, progress=args.progress)
    dt = time.perf_counter() - t0
    print(f"wrote {ds.url}: {ds.n_rows:,} rows x {ds.n_features:,} features "
          f"({'sparse' if ds.is_sparse else 'dense'}), {ds.n_partitions} partitions in "
          f"{dt:.2f} s ({ds.n_rows / max(dt, 1e-9):,.0f} rows/s)")
    return 0


def _make(args) -> int:
    from randsvm_dist.data.generators import make

    args.outputs.directory(args.dst, overwrite=args.overwrite, what="output")
    t0 = time.perf_counter()
    ds = make(args.name, args.dst, rows=args.rows, partitions=args.partitions,
              rows_per_partition=args.rows_per_partition, seed=args.seed,
              overwrite=args.overwrite, progress=args.progress,
              **{k: v for k, v in (("noise", args.noise),
                                   ("outlier_fraction", args.outlier_fraction))
                 if v is not None})
    dt = time.perf_counter() - t0
    print(f"wrote {ds.url}: {ds.n_rows:,} rows x {ds.n_features} features of {args.name} "
          f"(seed {args.seed}), {ds.n_partitions} partitions in {dt:.2f} s "
          f"({ds.n_rows / max(dt, 1e-9):,.0f} rows/s)")
    return 0


def describe(ds) -> dict:
    """A JSON-able summary of a Dataset (what ``data info`` prints)."""
    real = ds.meta.get("label_kind") == "real"   # regression targets: no classes
    classes = [] if real else ds.classes
    return {
        "path": ds.url,
        "rows": ds.n_rows,
        "features": ds.n_features,
        "partitions": ds.n_partitions,
        "layout": "sparse" if ds.is_sparse else "dense",
        "label_column": ds.label_column,
        "classes": [_py(v) for v in classes],
        "class_counts": [] if real else [int(c) for c in ds.class_counts],
        "label_kind": "real" if real else "classes",
        "label_mapping": ({str(k): v for k, v in
                           ds.label_mapping(binary=len(classes) == 2).items()}
                          if len(classes) >= 2 else None),
        "bytes": ds.nbytes_on_disk,
        "partition_rows": ds.partition_rows,
        "feature_names": ds.feature_names,
        "source": {k: ds.meta[k] for k in ("generator", "seed", "source", "source_format",
                                           "noise", "outlier_fraction") if k in ds.meta},
    }


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _info(args) -> int:
    from randsvm_dist.data.dataset import Dataset

    ds = Dataset.open(args.data, label_column=args.label_column,
                      feature_columns=feature_columns(args, args.label_column),
                      one_hot_columns=one_hot_columns(args))
    info = describe(ds)
    info["checksums_verified"] = ds.verify() if args.verify else 0
    emit(args, info, "" if args.json else _info_text(info))
    return 0


def _info_text(info: dict) -> str:
    rows = info["partition_rows"]
    lines = [
        f"path         {info['path']}",
        f"rows         {info['rows']:,}",
        f"features     {info['features']:,} ({info['layout']})" + (
            "" if not info.get("feature_names") else ": " + ", ".join(
                info["feature_names"][:12]) + (", ..." if len(info["feature_names"]) > 12
                                               else "")),
        f"partitions   {info['partitions']} (rows per partition {min(rows):,}..{max(rows):,})",
        f"bytes        {info['bytes']:,} ({info['bytes'] / 2**20:.1f} MiB on disk)",
        f"label        {info['label_column']!r}: " + (
            "real-valued targets (regression)" if info.get("label_kind") == "real"
            else f"{len(info['classes'])} classes"),
    ]
    total = max(info["rows"], 1)
    mapping = info["label_mapping"] or {}
    for v, c in zip(info["classes"][:20], info["class_counts"][:20], strict=False):
        code = mapping.get(str(v))
        to = f"  -> {code:+g}" if isinstance(code, float) else (
            f"  -> {code}" if code is not None else "")
        lines.append(f"  {v!r:>10}  {c:>12,}  ({100 * c / total:.1f}%){to}")
    if len(info["classes"]) > 20:
        lines.append(f"  ... {len(info['classes']) - 20} more")
    if len(info["classes"]) < 2 and info.get("label_kind") != "real":
        lines.append("  warning: one class only; an SVM needs at least two")
    for k, v in info["source"].items():
        lines.append(f"{k:<12} {v}")
    if info.get("checksums_verified"):
        lines.append(f"checksums    {info['checksums_verified']} parts match their "
                     "manifest crc32")
    return "\n".join(lines)
