"""``randsvm-dist grid``: the guide's cross-validated (C, gamma) search as a Dask job."""

from __future__ import annotations

import argparse
import os
import re

from randsvm_dist.cli.options import (
    add_output,
    add_random_state,
    add_scheduler,
    check_report_path,
    emit,
)


def check_folds(args: argparse.Namespace) -> None:
    """``--folds`` against the data set's rows, from its metadata, before the cluster
    starts (the class counts are checked on the cluster before any fold is solved).

    Raises:
        ParameterError: fewer than 2 folds, or more folds than rows.
    """
    from randsvm_dist.app.grid_folds import check_fold_count
    from randsvm_dist.data import Dataset
    from randsvm_dist.exceptions import ParameterError

    if args.folds < 2:
        raise ParameterError(f"--folds must be >= 2; got {args.folds}")
    check_fold_count([Dataset.open(args.data).n_rows], args.folds)


def resumes(gs, args: argparse.Namespace, folds: str) -> bool:
    """Whether ``folds`` (OUT/folds.csv) holds this very search's results, to resume.

    Raises:
        DataFormatError: it holds another search's, and ``--overwrite`` was not given.
    """
    from randsvm_dist.app.grid_cache import recorded_key, search_key
    from randsvm_dist.exceptions import DataFormatError

    if not os.path.exists(folds):
        return False
    if recorded_key(folds) == search_key(gs, args.data):
        return True
    if not args.overwrite:
        raise DataFormatError(f"--out {args.out} holds the results of another search (other "
                              "data, folds or settings); choose another --out or pass "
                              "--overwrite to start over")
    return False


def claim_out(gs, args: argparse.Namespace, folds: str, points: str, png: str) -> None:
    """Claim ``--out``'s files before any work. OUT/folds.csv is the search's own state,
    re-read to resume only by the same search (same data, folds and settings); else it,
    grid.csv and grid.png are another's, replaced only with ``--overwrite``.

    Raises:
        DataFormatError: OUT is a file, an input or another output, is not writable, or
            holds another search's files without ``--overwrite``.
    """
    from randsvm_dist.cli.output_plan import check_distinct
    from randsvm_dist.data.filesystem import makedirs
    from randsvm_dist.data.outputs import check_not_input
    from randsvm_dist.exceptions import DataFormatError

    check_not_input(args.out, (args.data,), "--out", directory=True)
    check_distinct(args.outputs.claimed, args.out, "--out")
    if os.path.isfile(args.out):
        raise DataFormatError(f"--out {args.out} is a file; give a directory")
    resume = resumes(gs, args, folds)
    makedirs(args.out)
    for path in (points, png):
        args.outputs.file(path, overwrite=args.overwrite or resume, what="--out file")
    if not os.access(args.out, os.W_OK):
        raise DataFormatError(f"--out {args.out}: directory is not writable")
    args.outputs.file(folds, overwrite=True, what="--out file")
    if not resume and os.path.exists(folds):
        os.unlink(folds)  # another search's results, replaced under --overwrite


def cmd_grid(args: argparse.Namespace) -> int:
    """Cross-validate every (C, gamma), refine around the best, write the CSV, the contour
    plot and (with ``--model``) the best pair trained on all rows.

    Returns:
        0.

    Raises:
        ParameterError: a bad grid or option; DataFormatError: a results file of another
        search.
    """
    from randsvm_dist.cli.outputs import publish

    check_grid_inputs(args)
    folds, points, png = (os.path.join(args.out, n) for n in ("folds.csv", "grid.csv",
                                                              "grid.png"))
    gs = make_search(args, folds)
    claim_out(gs, args, folds, points, png)
    gs.client = args.session.client()
    gs.fit(args.data)
    # claimed (checked and locked) above: replacing them now is this search's own write
    publish(points, gs.write_points, overwrite=True, what="--out file")
    publish(png, gs.plot, overwrite=True, what="--out file")
    result, summary = search_result(gs, args)
    if args.model:
        summary += refit_best(gs, args, result)
    emit(args, result, summary)
    return 0


def check_grid_inputs(args: argparse.Namespace) -> None:
    """``--folds``, ``--model`` and ``--report`` checked (and claimed) before any work.

    Raises:
        ParameterError: bad folds; DataFormatError: an output that may not be written.
    """
    from randsvm_dist.app.model_io import check_model_path

    check_folds(args)
    if args.model:
        check_model_path(args.model, args.overwrite)
        args.outputs.file(args.model, overwrite=args.overwrite, what="--model",
                          inputs=(args.data,))
    check_report_path(args, (args.data,))


def make_search(args: argparse.Namespace, folds: str):
    """The GridSearch of the command line, its fold results kept in ``folds``."""
    from randsvm_dist.app.grid_search import GridSearch

    return GridSearch(log2C=args.C, log2gamma=args.gamma, n_folds=args.folds,
                      refine=args.refine, fine_step=args.fine_step, scale=args.scale,
                      libsvm_max_rows=args.libsvm_max_rows, solver=args.solver, tol=args.tol,
                      cache_size=args.cache_size, gap_tol=args.gap_tol,
                      random_state=args.random_state, results=folds, estimator=args.svm_type,
                      scoring=args.scoring, epsilon=args.epsilon, log2nu=args.nu,
                      normal_label=args.normal_label)


def search_result(gs, args: argparse.Namespace) -> tuple[dict, str]:
    """The result record (``--json``/``--report``) and the summary line of a fitted search."""
    result = {"data": args.data, "best": gs.best_params_, "scoring": gs.scoring_.name,
              "cv_score": gs.best_score_,
              "rows": gs.n_rows_, "points": len(gs.points_), "folds": args.folds,
              "search_seconds": gs.search_seconds_, "out": args.out,
              "solvers": sorted({p["solver"] for p in gs.points_})}
    if gs.scoring_.name == "accuracy":
        result["cv_accuracy"] = gs.best_score_
    score = (f"accuracy {100 * gs.best_score_:.2f}%" if gs.scoring_.name == "accuracy"
             else f"{gs.scoring_.name} {gs.best_score_:.4f}")
    summary = (f"best {gs.axis_}={gs.best_params_[gs.axis_]:g} "
               f"gamma={gs.best_params_['gamma']:g}: {args.folds}-fold CV {score} "
               f"({len(gs.points_)} points in {gs.search_seconds_:.1f} s); "
               f"{args.out}/grid.csv, grid.png")
    return result, summary


def refit_best(gs, args: argparse.Namespace, result: dict) -> str:
    """Train the best pair on all rows and save it to ``--model``; adds the model to
    ``result`` and returns the summary's addition."""
    from randsvm_dist.app.model_output import save_model_file

    est = gs.refit(args.data)
    save_model_file(est, args.model, overwrite=args.overwrite)
    result.update(model=args.model, refit_seconds=est.fit_time_,
                  n_support=int(len(est.support_)))
    return f"; refit on all rows -> {args.model}"


def register(subparsers) -> None:
    """Add the ``grid`` command (long only because it lists the command's argparse options)."""
    from randsvm_dist.app.grid_folds import LIBSVM_MAX_ROWS
    from randsvm_dist.app.grid_space import (
        GUIDE_FINE_STEP,
        GUIDE_LOG2C,
        GUIDE_LOG2GAMMA,
        ONE_CLASS_LOG2NU,
        parse_exponent_range,
    )
    from randsvm_dist.cli.estimator_option_table import SVM_TYPES

    def exponents(text: str) -> tuple[float, float, float]:
        try:
            return parse_exponent_range(text)
        except ValueError as e:  # argparse shows an ArgumentTypeError's own message
            raise argparse.ArgumentTypeError(str(e)) from None

    def show(r):
        return f"2^{r[0]:g}..2^{r[1]:g}:{abs(r[2]):g}"

    p = subparsers.add_parser(
        "grid", help="cross-validated (C, gamma) grid search of an RBF SVM on Dask",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="LIBSVM guide's grid search: every (fold, C, gamma) is a Dask task set; "
                    "folds are stratified and seeded; small folds are solved by LIBSVM, "
                    "large ones by RandSVM. Writes OUT/folds.csv (every finished fold, "
                    "re-read to resume), OUT/grid.csv (mean/std accuracy per point) and "
                    "OUT/grid.png (contours like grid.py's).")
    # "--C -1..1:1" and grid.py's "--C -5,15,2" are values, not options
    p._negative_number_matcher = re.compile(r"^-\d")
    p.add_argument("data", help="Parquet data set (directory or URL), scaled already or "
                                "with --scale")
    p.add_argument("--C", type=exponents, default=GUIDE_LOG2C, metavar="2^A..2^B",
                   help=f"C exponents, optional ':STEP' (default {show(GUIDE_LOG2C)})")
    p.add_argument("--gamma", type=exponents, default=GUIDE_LOG2GAMMA,
                   metavar="2^A..2^B",
                   help=f"gamma exponents (default {show(GUIDE_LOG2GAMMA)})")
    p.add_argument("--svm-type", default="c_svc",
                   choices=SVM_TYPES,
                   help="c_svc: scored by accuracy; epsilon_svr: by --scoring rmse or r2 "
                        "(fixed --epsilon); one_class: (nu, gamma) scored by the ROC AUC of "
                        "held-out rows, normal rows labelled --normal-label")
    p.add_argument("--scoring", choices=["accuracy", "rmse", "r2", "auc"], default=None,
                   help="default: accuracy, rmse (epsilon_svr), auc (one_class)")
    p.add_argument("--epsilon", type=float, default=0.1, help="epsilon_svr: the tube")
    p.add_argument("--nu", type=exponents, default=ONE_CLASS_LOG2NU,
                   metavar="2^A..2^B", help=f"one_class: nu exponents (default "
                                            f"{show(ONE_CLASS_LOG2NU)})")
    p.add_argument("--normal-label", default=None, metavar="LABEL",
                   help="one_class: the label of normal rows (default 1)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--no-refine", dest="refine", action="store_false",
                   help="only the coarse grid (default: then best +- one step, finer)")
    p.add_argument("--fine-step", type=float, default=GUIDE_FINE_STEP,
                   help="exponent step of the fine grid")
    p.add_argument("--scale", choices=["minmax", "standard"], default=None,
                   help="scale the features first (learnt on all rows)")
    p.add_argument("--solver", choices=["auto", "libsvm", "randsvm"], default="auto")
    p.add_argument("--libsvm-max-rows", type=int, default=LIBSVM_MAX_ROWS,
                   help="'auto': LIBSVM up to this many training rows per fold, RandSVM above")
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--gap-tol", type=float, default=1e-3,
                   help="RandSVM's stop gap (large folds and the refit)")
    p.add_argument("--cache-size", type=float, default=200.0)
    p.add_argument("--out", default="grid-out", help="directory for the CSVs and the plot")
    p.add_argument("--model", default=None,
                   help="train the best (C, gamma) on all rows and save the model here")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --model, --report, and OUT/grid.csv and "
                        "OUT/grid.png of another search (OUT/folds.csv: same command resumes)")
    add_random_state(p)
    add_scheduler(p)
    add_output(p)
    p.set_defaults(func=cmd_grid)
