"""``randsvm-dist train``: fit a RandSVM classifier, regressor (``--svm-type epsilon_svr``)
or one-class model (``--svm-type one_class``) on a Parquet data set, save the model."""

from __future__ import annotations

import argparse

from randsvm_dist.cli.data import add_feature_columns
from randsvm_dist.cli.estimator_options import add_estimator_options
from randsvm_dist.cli.estimator_options import estimator_params as options_to_params
from randsvm_dist.cli.options import (
    add_output,
    add_random_state,
    add_scheduler,
    check_report_path,
    emit,
    say,
)
from randsvm_dist.exceptions import ParameterError


def estimator_params(args: argparse.Namespace) -> dict:
    """The parameters of the ``--svm-type``'s estimator that the options set (``client``
    aside; every other parameter keeps the estimator's own default).

    Raises:
        ParameterError: an option of another SVM type.
    """
    svm_type = getattr(args, "svm_type", "c_svc")
    params = options_to_params(args, svm_type)
    params["random_state"] = args.random_state
    if getattr(args, "seed_from", None) is not None:
        params["seed"] = args.seed_from
    return params


def claim_model_outputs(args: argparse.Namespace) -> None:
    """Check and lock ``--model`` (and ``MODEL.range`` with ``--scale``) before any work.

    Raises:
        ParameterError, DataFormatError: the path may not be written.
    """
    from randsvm_dist.app.model_io import RANGE_SUFFIX, check_model_path

    inputs = (args.data, getattr(args, "test", None))
    check_model_path(args.model, args.overwrite)
    args.outputs.file(args.model, overwrite=args.overwrite, what="--model", inputs=inputs)
    if getattr(args, "scale", None):
        args.outputs.file(args.model + RANGE_SUFFIX, overwrite=args.overwrite,
                          what="range file", inputs=inputs)


def cmd_train(args: argparse.Namespace) -> int:
    """Train, save the LIBSVM model, and with ``--test`` evaluate on the same cluster.

    Returns:
        0.

    Raises:
        ParameterError: a bad option value.
    """
    if getattr(args, "resume", False) and not getattr(args, "checkpoint", None):
        raise ParameterError("--resume needs --checkpoint DIR (where the state was saved)")
    claim_model_outputs(args)  # a bad or busy --model at once, before the imports
    from randsvm_dist.app.train import estimator_class, train
    from randsvm_dist.cli.data import feature_columns, one_hot_columns

    params = estimator_params(args)
    est = estimator_class(getattr(args, "svm_type", "c_svc"))(**params)
    est._check_params()  # a bad value fails now, not after the cluster started
    features = feature_columns(args, weight_column=getattr(args, "weight_column", None))
    one_hot = one_hot_columns(args)
    if getattr(args, "weight_column", None) or features or one_hot:  # bad columns fail now
        from randsvm_dist.data import Dataset

        Dataset.open(args.data, weight_column=getattr(args, "weight_column", None),
                     feature_columns=features, one_hot_columns=one_hot)
    if args.test:  # the test set fails before training, not after
        from randsvm_dist.distributed.predict import check_test_set

        check_test_set(args.data, args.test,
                       classify=getattr(args, "svm_type", "c_svc") == "c_svc",
                       options={"weight_column": getattr(args, "weight_column", None),
                                "feature_columns": features, "one_hot_columns": one_hot})
    check_report_path(args, (args.data, args.test))
    if getattr(args, "checkpoint", None):
        from randsvm_dist.data.filesystem import makedirs

        args.outputs.checkpoint(args.checkpoint, resume=args.resume, overwrite=args.overwrite,
                                inputs=(args.data, args.test))
        makedirs(args.checkpoint)  # a read-only place fails now, not after the cluster
    client = args.session.client()
    try:
        trained = train(args.data, args.model, client=client,
                        svm_type=getattr(args, "svm_type", "c_svc"), params=params,
                        weight_column=getattr(args, "weight_column", None),
                        feature_columns=features, one_hot_columns=one_hot,
                        checkpoint=getattr(args, "checkpoint", None),
                        resume=getattr(args, "resume", False), overwrite=args.overwrite)
    except Exception as e:  # a lost cluster: a cluster error naming the checkpoint
        raise _cluster_lost(e, getattr(args, "checkpoint", None)) from None
    summary = trained.summary()
    if args.test:
        say(args, summary)
        test = trained.evaluate(args.test, client)
        if "accuracy" in test:
            summary = f"test accuracy {test['accuracy']:.4f} on {test['rows']} rows"
        else:
            from randsvm_dist.cli.evaluate import task_summary

            summary = "test " + task_summary(test)
    emit(args, trained.as_dict(), summary)
    return 0


def _cluster_lost(e: Exception, checkpoint: str | None) -> Exception:
    """``e`` itself, or for a lost scheduler or cluster the ClusterError saying so, and
    where the state so far is for ``--resume`` when the run checkpoints."""
    from randsvm_dist.engine.client import lost_cluster
    from randsvm_dist.exceptions import ClusterError

    lost = lost_cluster(e) or (e if isinstance(e, ClusterError) else None)
    if lost is None:
        return e
    if checkpoint and "--resume" not in str(lost):
        return ClusterError(f"{lost}; the state so far is in --checkpoint {checkpoint}: run "
                            "the same command with --resume to go on from it")
    return lost


def register(subparsers) -> None:
    """Add the ``train`` command."""
    p = subparsers.add_parser("train", help="train a kernel SVM with RandSVM on Dask",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("data", help="Parquet data set (directory or URL)")
    p.add_argument("--model", required=True, default=argparse.SUPPRESS,
                   help="where to write the LIBSVM model file")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing model file written by randsvm-dist (and "
                        "MODEL.range, --report)")
    add_estimator_options(p)
    p.add_argument("--weight-column", default=None, metavar="COLUMN",
                   help="a numeric column of per-row sample weights (a row's box is C x "
                        "class weight x its weight; not a feature)")
    add_feature_columns(p)
    p.add_argument("--seed-from", default=None, choices=["bsgd", "ramp"],
                   help="start from this streaming learner, trained per partition on the "
                        "workers and tree-merged: its support vectors join the first sample")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="write the driver's state here after every iteration (a state of "
                        "an earlier run there needs --resume, or --overwrite to start over)")
    p.add_argument("--resume", action="store_true",
                   help="go on from the state in --checkpoint (same data and options)")
    add_random_state(p)
    add_scheduler(p)
    p.add_argument("--test", default=None,
                   help="Parquet data set to evaluate on afterwards (same cluster)")
    add_output(p)
    p.set_defaults(func=cmd_train)
