"""``randsvm-dist stream``: one-pass training with a streaming learner on Dask.

Every partition is learnt by its own task and the learners are tree-merged
(:func:`randsvm_dist.distributed.streaming.fit_streaming`). The model is a .npz file
(JSON header and arrays, see :mod:`randsvm_dist.model_files.streaming_files`).
"""

from __future__ import annotations

import argparse

from randsvm_dist.cli.options import (
    add_output,
    add_random_state,
    add_scheduler,
    check_report_path,
    emit,
    number_or_name,
    say,
)
from randsvm_dist.exceptions import ParameterError

# method (the names of randsvm_dist.streaming.LEARNERS, docs/streaming.md's) -> (class name
# in randsvm_dist.streaming, options it takes besides C/random-state)
METHODS: dict[str, tuple[str, tuple[str, ...]]] = {
    "streamsvm": ("StreamSVM", ("gamma", "lookahead", "kernel")),
    "blurred_ball": ("BlurredBallSVM", ("gamma", "lookahead", "kernel", "epsilon")),
    "bsgd": ("BudgetedSGD", ("gamma", "budget")),
    "ramp": ("OnlineRampSVM", ("gamma", "kernel")),
}
# old spellings still accepted (scripts and submitted jobs written with them keep working);
# not listed in the help
ALIASES = {"blurred": "blurred_ball"}
OPTIONAL = ("gamma", "lookahead", "kernel", "epsilon", "budget")


def method_name(text: str) -> str:
    """``--method``'s value: a method name, an old spelling mapped to it (ALIASES)."""
    return ALIASES.get(text, text)


def build_estimator(method: str, *, C: float | None = None, random_state: int = 0,
                    **options):
    """The streaming estimator of ``method`` with the given (non-None) options.

    Args:
        method: a key of :data:`METHODS`.
        C: cost (None: the learner's default).
        random_state: seed.
        **options: gamma, lookahead, kernel, epsilon, budget (None: not given).

    Returns:
        an unfitted StreamingClassifier.

    Raises:
        ParameterError: unknown method, or an option the method does not take.
    """
    from randsvm_dist import streaming

    method = method_name(method)
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    cls_name, allowed = METHODS[method]
    given = {k: v for k, v in options.items() if v is not None}
    bad = sorted(set(given) - set(allowed))
    if bad:
        raise ParameterError(f"--method {method} does not take "
                             f"{', '.join('--' + b for b in bad)}")
    params = {"random_state": random_state, **given}
    if C is not None:
        params["C"] = C
    return getattr(streaming, cls_name)(**params)


def cmd_stream(args: argparse.Namespace) -> int:
    """Fit a streaming learner per partition, tree-merge, save, optionally evaluate (all on
    one cluster).

    Returns:
        0.

    Raises:
        ParameterError: an option the method does not take.
        SchemaError: ``--test`` does not match the training set.
    """
    from randsvm_dist.app.model_io import check_model_path

    if args.model:  # a bad or busy --model at once, before the imports
        check_model_path(args.model, args.overwrite)
        args.outputs.file(args.model, overwrite=args.overwrite, what="--model",
                          inputs=(args.data, args.test))
    from randsvm_dist.app.stream import stream

    est = build_estimator(args.method, C=args.C, random_state=args.random_state,
                          **{k: getattr(args, k) for k in OPTIONAL})
    if args.test:  # fail before training, not after
        from randsvm_dist.distributed.predict import check_test_set

        check_test_set(args.data, args.test)
    check_report_path(args, (args.data, args.test))
    client = args.session.client()
    trained = stream(est, args.data, client=client, fan_in=args.fan_in, model=args.model,
                     overwrite=args.overwrite)
    summary = trained.summary()
    if args.test:
        say(args, summary)
        test = trained.evaluate(args.test, client)
        summary = f"test accuracy {test['accuracy']:.4f} on {test['rows']} rows"
    emit(args, {"data": args.data, "method": args.method, **trained.as_dict()}, summary)
    return 0


def register(subparsers) -> None:
    """Add the ``stream`` command."""
    p = subparsers.add_parser(
        "stream", help="one-pass training: a streaming learner per partition, tree-merged",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Learn each Parquet partition with a streaming SVM on the Dask workers "
                    "and combine the learners by tree reduction. Options left out take "
                    "the learner's own default.")
    p.add_argument("data", help="Parquet data set (directory or URL, readable by workers)")
    p.add_argument("--method", required=True, choices=list(METHODS), type=method_name,
                   help="streamsvm: StreamSVM (MEB); blurred_ball: BlurredBallSVM; bsgd: "
                        "BudgetedSGD; ramp: OnlineRampSVM")
    p.add_argument("--C", type=float, default=None, help="cost")
    p.add_argument("--gamma", type=number_or_name, default=None,
                   help="kernel width: number, 'scale' or 'auto' (resolved once for the "
                        "whole data set)")
    p.add_argument("--kernel", default=None, choices=["linear", "rbf", "poly", "sigmoid"],
                   help="streamsvm/blurred_ball/ramp")
    p.add_argument("--budget", type=int, default=None, help="bsgd: support vectors kept")
    p.add_argument("--lookahead", type=int, default=None, help="streamsvm/blurred_ball: L")
    p.add_argument("--epsilon", type=float, default=None, help="blurred_ball: blur epsilon")
    p.add_argument("--fan-in", type=int, default=2, help="models merged per tree node")
    add_random_state(p)
    add_scheduler(p)
    p.add_argument("--test", default=None, help="Parquet data set to evaluate on")
    p.add_argument("--model", default=None,
                   help="write the fitted estimator (.npz: JSON header and arrays, no pickle)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing model file written by randsvm-dist")
    add_output(p)
    p.set_defaults(func=cmd_stream)
