"""``randsvm-dist train | predict | evaluate``: the RandSVM trainer on the command line."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .exceptions import ParameterError


def _number_or_name(value: str):
    try:
        return float(value)
    except ValueError:
        return value


def _int_or_auto(value: str):
    return value if value == "auto" else int(value)


def _bound(value: str):
    return None if value == "none" else _int_or_auto(value)


def _client_arg(args):
    return args.scheduler or None


def _write_json(path: str | None, report: dict) -> None:
    text = json.dumps(report, indent=2, default=str)
    if path == "-":
        print(text)
    elif path:
        with open(path, "w") as f:
            f.write(text + "\n")


def cmd_train(args) -> int:
    """Train a RandSVMClassifier on a Parquet data set and save it as a LIBSVM model."""
    from .estimators import RandSVMClassifier

    class_weight = args.class_weight
    if class_weight not in (None, "balanced"):
        raise ParameterError(f"--class-weight must be 'balanced'; got {class_weight!r}")
    est = RandSVMClassifier(
        kernel=args.kernel, C=args.C, gamma=args.gamma, degree=args.degree, coef0=args.coef0,
        class_weight=class_weight, k=args.k, sample_size=args.sample_size,
        epsilon=args.epsilon, delta=args.delta, separable=args.separable,
        max_iter=args.max_iter, tol=args.tol, violator_tol=args.violator_tol,
        gap_tol=args.gap_tol,
        cache_size=args.cache_size, random_state=args.random_state,
        client=_client_arg(args),
    )
    est.fit(args.data)
    est.save(args.model)
    report = {
        "data": args.data, "model": args.model, "fit_seconds": est.fit_time_,
        "n_support": int(len(est.support_)), "n_iter": est.n_iter_,
        "stop_reasons": est.stop_reasons_, "optimal": est.optimal_, "k": est.k_,
        "sample_size": est.sample_size_, "gamma": est.gamma_, "history": est.history_,
    }
    if args.test:
        report["test"] = est.evaluate(args.test, client=_client_arg(args))
        print(f"test accuracy {report['test']['accuracy']:.4f} on {report['test']['rows']} "
              "rows")
    print(f"trained in {est.fit_time_:.1f} s: {len(est.support_)} support vectors, "
          f"{est.n_iter_} iterations, stop: {', '.join(est.stop_reasons_)}; "
          f"model written to {args.model}")
    _write_json(args.json, report)
    return 0


def load_model(path: str):
    """A saved model: a LIBSVM model file (with or without our meta file) or a joblib pickle
    of a streaming learner (``randsvm-dist stream --model``)."""
    from .estimators import RandSVMClassifier

    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith((b"svm_type", b"{")):
        return RandSVMClassifier.load(path)
    import joblib

    return joblib.load(path)


def cmd_predict(args) -> int:
    """Predict a Parquet data set with a saved model; writes Parquet files to OUT."""
    from .predict import predict_dataset

    est = load_model(args.model)
    out = predict_dataset(est, args.data, args.out, client=_client_arg(args))
    print(f"wrote predictions of {out['rows']} rows to {out['out']} in {out['seconds']:.1f} s")
    return 0


def cmd_evaluate(args) -> int:
    """Accuracy, confusion matrix, #SV and time of a saved model on a Parquet data set."""
    from .predict import evaluate_dataset

    t0 = time.perf_counter()
    est = load_model(args.model)
    report = evaluate_dataset(est, args.data, client=_client_arg(args))
    report["n_support"] = int(len(est.support_)) if hasattr(est, "support_") \
        else int(est.n_core_)
    report["seconds"] = time.perf_counter() - t0
    if args.json:
        _write_json("-" if args.json is True else args.json, report)
    else:
        print(f"accuracy {report['accuracy']:.4f} on {report['rows']} rows, "
              f"{report['n_support']} support vectors (or core points), "
              f"{report['seconds']:.1f} s")
        print(f"confusion matrix (rows: true, columns: predicted; classes "
              f"{report['classes']}):")
        for row in report["confusion_matrix"]:
            print("  " + " ".join(f"{v:9d}" for v in row))
    return 0


def register(subparsers) -> None:
    """Add the train, predict and evaluate commands."""
    p = subparsers.add_parser("train", help="train a kernel SVM with RandSVM on Dask",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("data", help="Parquet data set (directory or URL)")
    p.add_argument("--model", required=True, help="where to write the LIBSVM model file")
    p.add_argument("--kernel", default="rbf", choices=["linear", "poly", "rbf", "sigmoid"])
    p.add_argument("--C", type=float, default=1.0)
    p.add_argument("--gamma", type=_number_or_name, default="scale",
                   help="number, 'scale' or 'auto'")
    p.add_argument("--degree", type=int, default=3)
    p.add_argument("--coef0", type=float, default=0.0)
    p.add_argument("--class-weight", default=None, help="'balanced' or omit")
    p.add_argument("--k", type=_bound, default="auto",
                   help="support-set bound: 'auto' (the paper's estimate), a number, or "
                        "'none'")
    p.add_argument("--sample-size", type=_int_or_auto, default="auto",
                   help="rows per LIBSVM solve (r)")
    p.add_argument("--epsilon", type=float, default=0.2)
    p.add_argument("--delta", type=float, default=0.9)
    p.add_argument("--separable", action="store_true", help="use the separable k bound")
    p.add_argument("--max-iter", type=int, default=50)
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--violator-tol", type=float, default=0.0,
                   help="stop at this fraction of violators")
    p.add_argument("--gap-tol", type=float, default=0.0,
                   help="stop at this relative primal-dual gap (certified on all rows)")
    p.add_argument("--cache-size", type=float, default=200.0)
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--scheduler", default=None,
                   help="Dask scheduler address (default: an embedded LocalCluster)")
    p.add_argument("--test", default=None, help="Parquet data set to evaluate on afterwards")
    p.add_argument("--json", default=None, help="write a JSON report here ('-': stdout)")
    p.set_defaults(func=cmd_train)

    p = subparsers.add_parser("predict", help="predict a Parquet data set with a saved model")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("out", help="directory for the prediction Parquet files")
    p.add_argument("--scheduler", default=None)
    p.set_defaults(func=cmd_predict)

    p = subparsers.add_parser("evaluate", help="accuracy and confusion matrix of a model")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--json", nargs="?", const=True, default=None,
                   help="print (or write to a file) a JSON report")
    p.add_argument("--scheduler", default=None)
    p.set_defaults(func=cmd_evaluate)


if __name__ == "__main__":  # pragma: no cover
    from .cli import main

    sys.exit(main())
