"""``randsvm-dist data scale``: svm-scale for Parquet data sets, learnt and applied on Dask."""

from __future__ import annotations

import argparse

from randsvm_dist.cli.options import add_output, add_scheduler, check_report_path, emit


def cmd_scale(args: argparse.Namespace) -> int:
    """Learn a scaling on DATA (or read it with ``--restore``), write the scaled copy to OUT
    and, with ``--range``, the scaling as an svm-scale range file.

    Returns:
        0.

    Raises:
        ParameterError, SchemaError, DataFormatError: bad options, data or range file.
    """
    from randsvm_dist.cli.outputs import publish
    from randsvm_dist.distributed.scaling import FeatureScaler
    from randsvm_dist.engine.inputs import open_dataset

    inputs = (args.data, args.restore)
    args.outputs.directory(args.out, overwrite=args.overwrite, what="output", inputs=inputs)
    args.outputs.file(args.range, overwrite=args.overwrite, what="--range", inputs=inputs)
    check_report_path(args, inputs)
    ds = open_dataset(args.data)
    client = args.session.client()
    if args.restore:
        scaler = FeatureScaler.load_range(args.restore, n_features=ds.n_features)
        how = f"restored from {args.restore}"
    else:
        scaler = FeatureScaler(args.method, lower=args.lower, upper=args.upper,
                               client=client).fit(ds)
        how = f"{args.method} learnt on {ds.n_rows} rows"
    out = scaler.transform_dataset(ds, args.out, overwrite=args.overwrite, client=client)
    if args.range:
        publish(args.range, scaler.save_range, overwrite=args.overwrite, what="--range")
    result = {"data": args.data, "out": args.out, "range": args.range, "method": scaler.method,
              "lower": scaler.lower_, "upper": scaler.upper_, "rows": out.n_rows,
              "sparse_zeros_kept": scaler.sparse_,
              "constant_features": int((scaler.scale_ == 0).sum())}
    note = " (sparse: zeros kept at zero)" if scaler.sparse_ else ""
    emit(args, result, f"scaled {out.n_rows} rows ({how}){note} -> {args.out}"
         + (f"; range file {args.range}" if args.range else ""))
    return 0


def register_data_scale(sub) -> None:
    """Add ``scale`` to the ``data`` command group's subparsers."""
    p = sub.add_parser(
        "scale", help="scale features like svm-scale (learnt on the workers)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Scale every feature to [lower, upper] (svm-scale's min-max) or to mean "
                    "0, variance 1, learnt over all rows on the Dask workers, and write the "
                    "scaled data set. Sparse data keeps zeros at zero (lower must be 0; a "
                    "feature is divided by its largest |value|, or by its standard deviation "
                    "without centring). --range writes svm-scale's -s file; --restore applies "
                    "one (svm-scale -r), e.g. the training range to a test set.")
    p.add_argument("data", help="Parquet data set (directory or URL)")
    p.add_argument("out", help="output directory or URL (must not exist)")
    p.add_argument("--range", default=None, metavar="FILE",
                   help="write the scaling as an svm-scale range file")
    p.add_argument("--restore", default=None, metavar="FILE",
                   help="apply this svm-scale range file instead of learning one")
    p.add_argument("--method", choices=["minmax", "standard"], default="minmax")
    p.add_argument("--lower", type=float, default=None,
                   help="min-max lower bound (default -1; 0 for sparse data)")
    p.add_argument("--upper", type=float, default=1.0, help="min-max upper bound")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing OUT written by randsvm-dist, --range, --report")
    add_scheduler(p)
    add_output(p)
    p.set_defaults(func=cmd_scale)
