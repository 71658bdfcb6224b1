"""``randsvm-dist predict``: predictions of a saved model on a Parquet data set."""

from __future__ import annotations

import argparse

from randsvm_dist.cli.model_input import (
    add_model_input,
    check_model_input,
    load_model,
    model_data,
)
from randsvm_dist.cli.options import add_output, add_scheduler, emit


def cmd_predict(args: argparse.Namespace) -> int:
    """Predict ``args.data`` with the model at ``args.model``; write Parquet files to
    ``args.out``.

    Returns:
        0.
    """
    check_model_input(args)  # at once: before the imports and the cluster
    from randsvm_dist.distributed.predict import predict_dataset

    args.outputs.directory(args.out, overwrite=args.overwrite, what="output",
                           inputs=(args.data, args.model))  # before the cluster starts
    args.session.prefetch()  # the cluster starts while the model loads
    est = load_model(args)
    out = predict_dataset(est, model_data(args, est), args.out, client=args.session.client(),
                          overwrite=args.overwrite)
    emit(args, out, f"wrote predictions of {out['rows']} rows to {out['out']} in "
                    f"{out['seconds']:.1f} s")
    return 0


def register(subparsers) -> None:
    """Add the ``predict`` command."""
    p = subparsers.add_parser("predict", help="predict a Parquet data set with a saved model")
    add_model_input(p)
    p.add_argument("data", help="Parquet data set")
    p.add_argument("out", help="directory for the prediction Parquet files (published with "
                               "a _manifest.json when complete)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing prediction directory written by randsvm-dist "
                        "(only the files its _manifest.json lists)")
    from randsvm_dist.cli.data import add_one_hot

    add_one_hot(p)
    add_scheduler(p)
    add_output(p, report=False)
    p.set_defaults(func=cmd_predict)
