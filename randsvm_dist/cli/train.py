"""``randsvm-dist train``: fit a RandSVM classifier, regressor (``--svm-type epsilon_svr``)
or one-class model (``--svm-type one_class``) on a Parquet data set, save the model."""

from __future__ import annotations

import argparse

from randsvm_dist.cli.options import (
    add_output,
    add_random_state,
    add_scheduler,
    bound,
    check_report_path,
    emit,
    int_or_auto,
    number_or_name,
    say,
)
from randsvm_dist.exceptions import ParameterError

SVM_TYPES = {"c_svc": "RandSVMClassifier", "epsilon_svr": "RandSVMRegressor",
             "one_class": "RandSVMOneClass"}


def estimator_class(svm_type: str = "c_svc") -> type:
    """The estimator class of an ``--svm-type`` (LIBSVM's names: c_svc, epsilon_svr,
    one_class).

    Raises:
        ParameterError: an unknown type.
    """
    import randsvm_dist.estimators as estimators

    if svm_type not in SVM_TYPES:
        raise ParameterError(f"--svm-type must be one of {', '.join(SVM_TYPES)}; got "
                             f"{svm_type!r}")
    return getattr(estimators, SVM_TYPES[svm_type])


def estimator_params(args: argparse.Namespace) -> dict:
    """The parameters of the ``--svm-type``'s estimator the options name (``client``
    aside): C-SVC takes ``--C``/``--class-weight``, epsilon-SVR ``--C``/``--epsilon``,
    one-class ``--nu``.

    Raises:
        ParameterError: a bad option value, or an option of another SVM type.
    """
    svm_type = getattr(args, "svm_type", "c_svc")
    if args.class_weight not in (None, "balanced"):
        raise ParameterError(f"--class-weight must be 'balanced'; got {args.class_weight!r}")
    eps, nu = getattr(args, "epsilon", None), getattr(args, "nu", None)
    for flag, value, kind in (("--epsilon", eps, "epsilon_svr"), ("--nu", nu, "one_class"),
                              ("--class-weight", args.class_weight, "c_svc")):
        if value is not None and svm_type != kind:
            raise ParameterError(f"{flag} applies to --svm-type {kind}; this is {svm_type}")
    own = {"c_svc": {"C": args.C, "class_weight": args.class_weight},
           "epsilon_svr": {"C": args.C, "epsilon": 0.1 if eps is None else eps},
           "one_class": {"nu": 0.5 if nu is None else nu}}
    if svm_type not in own:
        raise ParameterError(f"--svm-type must be one of {', '.join(SVM_TYPES)}; got "
                             f"{svm_type!r}")
    return dict(
        kernel=args.kernel, gamma=args.gamma, degree=args.degree, coef0=args.coef0,
        **own[svm_type], k=args.k, sample_size=args.sample_size,
        bound_epsilon=args.bound_epsilon, bound_delta=args.bound_delta,
        separable=args.separable,
        max_iter=args.max_iter, tol=args.tol, violator_tol=args.violator_tol,
        gap_tol=args.gap_tol, cache_size=args.cache_size, random_state=args.random_state,
        scale=args.scale, seed=args.seed_from, route=args.route,
        cache={"auto": "auto", "true": True, "false": False}[args.cache],
    )


def claim_model_outputs(args: argparse.Namespace) -> None:
    """Check and lock ``--model`` (and ``MODEL.range`` with ``--scale``) before any work.

    Raises:
        ParameterError, DataFormatError: the path may not be written.
    """
    from randsvm_dist.model_files import RANGE_SUFFIX, check_model_path

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
    from randsvm_dist.cli.outputs import save_model_file
    from randsvm_dist.data.storage import check_not_input

    if getattr(args, "resume", False) and not getattr(args, "checkpoint", None):
        raise ParameterError("--resume needs --checkpoint DIR (where the state was saved)")
    params = estimator_params(args)
    claim_model_outputs(args)
    check_report_path(args, (args.data, args.test))
    if getattr(args, "checkpoint", None):
        from randsvm_dist.data.storage import makedirs

        check_not_input(args.checkpoint, (args.data, args.test), "--checkpoint",
                        directory=True)
        makedirs(args.checkpoint)  # a read-only place fails now, not after the cluster
    client = args.session.client()
    est = estimator_class(getattr(args, "svm_type", "c_svc"))(**params, client=client)
    est.fit(args.data, checkpoint=getattr(args, "checkpoint", None),
            resume=getattr(args, "resume", False))
    save_model_file(est, args.model, overwrite=args.overwrite)
    result = {
        "data": args.data, "model": args.model, "fit_seconds": est.fit_time_,
        "n_support": int(len(est.support_)), "n_iter": est.n_iter_,
        "stop_reasons": est.stop_reasons_, "optimal": est.optimal_, "k": est.k_,
        "sample_size": est.sample_size_, "gamma": est.gamma_,
        "relative_gap": est.relative_gap_, "certified": est.certified_,
        "seed": est.seed_info_, "history": est.history_,
    }
    summary = (f"trained in {est.fit_time_:.1f} s: {len(est.support_)} support vectors, "
               f"{est.n_iter_} iterations, stop: {', '.join(est.stop_reasons_)}, relative "
               f"gap {est.relative_gap_:.2e} ({'certified' if est.certified_ else 'NOT certified'}"
               f" <= {est.gap_tol:g}); "
               f"model written to {args.model}")
    if args.test:
        say(args, summary)
        result["test"] = est.evaluate(args.test, client=client)
        if "accuracy" in result["test"]:
            summary = (f"test accuracy {result['test']['accuracy']:.4f} on "
                       f"{result['test']['rows']} rows")
        else:
            from randsvm_dist.cli.evaluate import task_summary

            summary = "test " + task_summary(result["test"])
    emit(args, result, summary)
    return 0


def register(subparsers) -> None:
    """Add the ``train`` command."""
    p = subparsers.add_parser("train", help="train a kernel SVM with RandSVM on Dask",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("data", help="Parquet data set (directory or URL)")
    p.add_argument("--model", required=True, help="where to write the LIBSVM model file")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing model file written by randsvm-dist (and "
                        "MODEL.range, --report)")
    p.add_argument("--svm-type", default="c_svc", choices=list(SVM_TYPES),
                   help="c_svc: classification (RandSVMClassifier, LIBSVM -s 0); "
                        "epsilon_svr: regression on a real-valued label column "
                        "(RandSVMRegressor, -s 3); one_class: novelty detection, labels "
                        "ignored (RandSVMOneClass, -s 2)")
    p.add_argument("--kernel", default="rbf", choices=["linear", "poly", "rbf", "sigmoid"])
    p.add_argument("--C", type=float, default=1.0, help="c_svc, epsilon_svr: box constraint")
    p.add_argument("--epsilon", type=float, default=None,
                   help="epsilon_svr: half-width of the epsilon-insensitive tube (default "
                        "0.1, as SVR)")
    p.add_argument("--nu", type=float, default=None,
                   help="one_class: bound on the outlier fraction, in (0, 1] (default 0.5, "
                        "as OneClassSVM)")
    p.add_argument("--gamma", type=number_or_name, default="scale",
                   help="number, 'scale' or 'auto'")
    p.add_argument("--degree", type=int, default=3)
    p.add_argument("--coef0", type=float, default=0.0)
    p.add_argument("--class-weight", default=None, help="'balanced' or omit")
    p.add_argument("--k", type=bound, default=None,
                   help="the paper's support-set bound, an option: 'auto' (its estimate), a "
                        "number, or 'none' (the default: run to the certified gap); a stop "
                        "at k is not certified and warns")
    p.add_argument("--sample-size", type=int_or_auto, default="auto",
                   help="rows per LIBSVM solve (r)")
    p.add_argument("--bound-epsilon", type=float, default=0.2,
                   help="epsilon of the paper's k estimate (sample_size='auto', --k auto)")
    p.add_argument("--bound-delta", type=float, default=0.9,
                   help="delta of the paper's k estimate")
    p.add_argument("--separable", action="store_true", help="use the separable k bound")
    p.add_argument("--max-iter", type=int, default=50)
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--violator-tol", type=float, default=0.0,
                   help="stop at this fraction of violators")
    p.add_argument("--gap-tol", type=float, default=1e-3,
                   help="stop at this relative primal-dual gap, certified on all rows (0: run "
                        "until no row violates the margin)")
    p.add_argument("--seed-from", default=None, choices=["bsgd", "ramp"],
                   help="start from this streaming learner, trained per partition on the "
                        "workers and tree-merged: its support vectors join the first sample")
    p.add_argument("--route", default="auto", choices=["auto", "sample", "direct"],
                   help="'direct': one LIBSVM solve of all rows on a worker; 'auto' chooses "
                        "by the measured rule")
    p.add_argument("--cache", default="auto", choices=["auto", "true", "false"],
                   help="keep partitions in worker memory; 'false' re-reads them from "
                        "Parquet every pass (data larger than the workers' memory)")
    p.add_argument("--cache-size", type=float, default=200.0)
    p.add_argument("--scale", choices=["minmax", "standard"], default=None,
                   help="scale the features (learnt on the training rows, kept in the model, "
                        "applied by predict/evaluate; also written as MODEL.range)")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="write the driver's state here after every iteration")
    p.add_argument("--resume", action="store_true",
                   help="go on from the state in --checkpoint (same data and options)")
    add_random_state(p)
    add_scheduler(p)
    p.add_argument("--test", default=None,
                   help="Parquet data set to evaluate on afterwards (same cluster)")
    add_output(p)
    p.set_defaults(func=cmd_train)
