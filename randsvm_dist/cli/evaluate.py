"""``randsvm-dist evaluate``: accuracy and confusion matrix of a saved classifier; RMSE,
MAE and R^2 of a regressor; outlier fraction and ROC AUC of a one-class model."""

from __future__ import annotations

import argparse
import time

from randsvm_dist.cli.model_input import (
    add_model_input,
    check_model_input,
    load_model,
    model_data,
)
from randsvm_dist.cli.options import add_output, add_scheduler, check_report_path, emit


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Accuracy, confusion matrix, #SV (or core points) and seconds on a Parquet data set.

    Returns:
        0.
    """
    t0 = time.perf_counter()
    check_model_input(args)  # at once: before the imports and the cluster
    check_report_path(args, (args.data, args.model))
    from randsvm_dist.distributed.predict import evaluate_dataset

    args.session.prefetch()  # the cluster starts while the model loads
    est = load_model(args)
    result = evaluate_dataset(est, model_data(args, est), client=args.session.client(),
                              normal_label=getattr(args, "normal_label", None))
    result["n_support"] = (int(len(est.support_)) if hasattr(est, "support_")
                           else int(est.n_core_))
    result["seconds"] = time.perf_counter() - t0
    if result.get("task") in ("regression", "one_class"):
        emit(args, result, task_summary(result))
        return 0
    lines = [f"accuracy {result['accuracy']:.4f} on {result['rows']} rows, "
             f"{result['n_support']} support vectors (or core points), "
             f"{result['seconds']:.1f} s"]
    if "log_loss" in result:
        lines.append(f"log loss {result['log_loss']:.4f}, Brier score "
                     f"{result['brier_score']:.4f} (predicted probabilities)")
    lines += confusion_lines(result["confusion_matrix"], result["classes"])
    emit(args, result, "\n".join(lines))
    return 0


def confusion_lines(cm: list[list[int]], classes: list) -> list[str]:
    """The full confusion matrix as text: a header of predicted classes, one line per true
    class (every class, however many)."""
    names = [str(c) for c in classes]
    w = max(9, *(len(n) + 1 for n in names), *(len(str(v)) + 1 for r in cm for v in r))
    corner = "true/pred"
    lead = max(len(corner), *(len(n) for n in names))
    out = ["confusion matrix (rows: true, columns: predicted):",
           f"  {corner:>{lead}s}" + "".join(f"{n:>{w}s}" for n in names)]
    out += [f"  {n:>{lead}s}" + "".join(f"{v:{w}d}" for v in row)
            for n, row in zip(names, cm)]
    return out


def task_summary(result: dict) -> str:
    """The text of a regression or one-class evaluation (``evaluate_dataset``'s result)."""
    tail = (f" on {result['rows']} rows, {result.get('n_support', '?')} support vectors, "
            f"{result.get('seconds', 0.0):.1f} s")
    if result["task"] == "regression":
        return (f"RMSE {result['rmse']:.4f}, MAE {result['mae']:.4f}, "
                f"R^2 {result['r2']:.4f}{tail}")
    auc = (f"ROC AUC {result['roc_auc']:.4f} (normal label {result['normal_label']!r})"
           if result.get("roc_auc") is not None else result.get("roc_auc_note", "no ROC AUC"))
    return f"predicted outlier fraction {result['outlier_fraction']:.4f}, {auc}{tail}"


def register(subparsers) -> None:
    """Add the ``evaluate`` command."""
    p = subparsers.add_parser("evaluate", help="accuracy and confusion matrix of a model")
    add_model_input(p)
    p.add_argument("data", help="Parquet data set with labels")
    p.add_argument("--normal-label", default=None, metavar="LABEL",
                   help="one-class models: the label of normal rows for the ROC AUC "
                        "(default 1, LIBSVM's inlier label; other labels are outliers)")
    from randsvm_dist.cli.data import add_one_hot

    add_one_hot(p)
    add_scheduler(p)
    add_output(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --report")
    p.set_defaults(func=cmd_evaluate)
