"""The one text of every RandSVM estimator parameter: the estimators' docstrings, the
command line's help (``cli.estimator_options``) and docs/cli.md's option table are made
from ``PARAMETER_TEXTS`` (a rule, such as how tol is tightened or when oneDAL solves, is
named by the module that implements it, never restated). Imports nothing: the command
line's ``--help`` reads it without scikit-learn.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

PARAMETER_TEXTS: dict[str, str] = {
    "C": "box constraint (> 0); infinite: a hard margin, solved as C = 1e10 "
         "(``estimators.base.HARD_MARGIN_C``), as SVC/SVR treat it.",
    "kernel": "'linear', 'poly', 'rbf' or 'sigmoid' (LIBSVM's meanings).",
    "gamma": "kernel coefficient: a number, 'scale' (1 / (n_features * X.var())) or 'auto' "
             "(1 / n_features).",
    "degree": "poly/sigmoid parameters.",
    "coef0": "poly/sigmoid parameters.",
    "class_weight": "None, 'balanced' or {label: weight}; C of a class is C x weight.",
    "multi_class": "'ovo' (LIBSVM's and SVC's one-vs-one: a C-SVC per pair of classes on "
                   "the rows of those two classes, all pairs solved concurrently on the "
                   "workers, each certified) or 'ovr' (one class against all others; k "
                   "problems over all rows).",
    "decision_function_shape": "'ovr' ((n, k) scores, as SVC's default) or 'ovo' ((n, "
                               "k(k-1)/2) pairwise values); one-vs-rest models always give "
                               "'ovr'.",
    "break_ties": "predict by the argmax of the 'ovr'-shaped decision function instead of "
                  "the votes (as SVC; more than two classes and "
                  "decision_function_shape='ovr').",
    "probability": "fit Platt's sigmoid per pair on held-out decision values, for "
                   "``predict_proba``; written into the model file as LIBSVM's probA/probB. "
                   "Rows in memory (arrays, DataFrames) get LIBSVM's internal 5-fold "
                   "cross-validation with SVC's fold assignment for the same "
                   "``random_state`` (``estimators.cross_val_probability``); data on the "
                   "workers 5 folds by row keys, fitted at once from the full fit's solution, or "
                   "above ``estimators.calibration.CV_MAX_ROWS`` rows one hold-out (its share "
                   "of the rows: ``estimators.calibration.holdout_share``) when the folds "
                   "would cost far more (``estimators.calibration``). "
                   "``probability_method_`` "
                   "says which: 'libsvm_cv5', 'cv5' or 'holdout'.",
    "epsilon": "half-width of the epsilon-insensitive tube (>= 0), as SVR.",
    "nu": "an upper bound on the fraction of training outliers and a lower bound on the "
          "fraction of support vectors, in (0, 1].",
    "k": "the paper's support-set bound, an option: stop when a solve has k or more support "
         "vectors ('auto': the paper's estimate from bound_epsilon and bound_delta, see "
         "``exact.bounds``). None (the default) drops it: the fit runs to the certified "
         "gap. A stop at k is not certified and warns.",
    "sample_size": "r, rows of the first uniform sample (and the least a later working set "
                   "is filled to). 'auto': the cost model's size "
                   "(``exact.route.auto_sample_size``).",
    "bound_epsilon": "parameters of the paper's k estimate.",
    "bound_delta": "parameters of the paper's k estimate.",
    "separable": "parameters of the paper's k estimate.",
    "max_iter": "most solve/scan iterations per problem; -1: no limit (SVC's -1; SVC's "
                "counts the solver's iterations, this the driver's).",
    "tol": "LIBSVM's tolerance of the first solve (its -e); also the slack of a violator. "
           "When the working set's own gap keeps the certified gap above gap_tol, the next "
           "solve runs with a tighter tol (the rule: ``exact.certificate.tightened``). "
           "``history_`` records the tol of every solve.",
    "violator_tol": "stop when at most this fraction of rows are violators (0: off). Not "
                    "certified: warns.",
    "gap_tol": "the default stop: (primal - dual) / |primal| <= gap_tol, the primal "
               "objective taken over all rows, the dual that of the working set; by weak "
               "duality this certifies that the model's objective is within that relative "
               "distance of the optimum of the whole data set. 0: run until no row "
               "violates; such a stop certifies no gap (``certified_`` False) and warns.",
    "cache_size": "LIBSVM's kernel cache in MB per solve.",
    "seed": "rows that join the first sample (see ``exact.seeding``): None, 'bsgd' or "
            "'ramp' (classification only), an unfitted streaming learner, or a fitted model "
            "(a RandSVM estimator fitted on these rows or their first rows). A seed changes "
            "the speed, never the result.",
    "route": "'auto' (the cost model's choice, ``exact.route.plan_route``: one solve of all "
             "rows when it predicts that faster than sampling, else sampling, asked again "
             "with the share of support vectors the first sampled solve found; arrays "
             "fitted without a ``client`` that it sends to one solve are solved and "
             "certified in this process on all its cores, starting no cluster, "
             "``exact.in_process``, except with scale, seed, probability or a checkpoint; "
             "``history_`` says which route, where and why), 'sample' or 'direct' (one "
             "solve of all rows on a worker).",
    "cache": "keep the partitions in worker memory (True), re-read them from Parquet on "
             "every pass (False: data larger than the workers' memory), or 'auto' (cache "
             "when every worker's share of the rows fits its memory limit beside a scan, "
             "by the fit's memory plan).",
    "solver": "who solves each working set: 'auto' (the default: oneDAL where it is "
              "installed, solves the problem and was measured faster, the rule of "
              "``solvers.onedal_auto.prefer_onedal``; LIBSVM otherwise), 'libsvm' "
              "(libsvm-official, the reference) or 'onedal' (oneDAL via scikit-learn-intelex "
              "for C-SVC and epsilon-SVR, LIBSVM for the rest). scikit-learn-intelex comes "
              "with the default install on x86-64. Same optimum, same certificate.",
    "random_state": "seed of every random choice (same value, same model, whatever the "
                    "partitioning or the number of workers); None draws a fresh seed at "
                    "each fit, recorded as ``random_seed_``.",
    "client": "None (the default Dask client, else an embedded LocalCluster), a scheduler "
              "address, or a ``distributed.Client``. Never saved or pickled with the model.",
    "n_partitions": "chunks for array input (default 2 per worker).",
    "scale": "None, 'minmax', 'standard', or a ``distributed.scaling.FeatureScaler``: learnt on "
             "the training rows on the workers, applied before training and by "
             "predict/evaluate, saved with the model.",
}

MARKER = "<parameters>"  # the line of a docstring that ``documented`` replaces
WIDTH = 92


def parameters_section(names: Sequence[str], indent: int = 8) -> str:
    """The docstring lines of ``names``: ``name: text`` wrapped at WIDTH columns, the
    continuation lines indented 4 more.

    Args:
        names: parameters, in the order the docstring lists them.
        indent: the spaces before each name.

    Returns:
        the lines joined by newlines (no trailing newline).

    Raises:
        KeyError: a name without a text.
    """
    lines = []
    for name in names:
        lines += textwrap.wrap(f"{name}: {PARAMETER_TEXTS[name]}", WIDTH,
                               initial_indent=" " * indent,
                               subsequent_indent=" " * (indent + 4),
                               break_on_hyphens=False)
    return "\n".join(lines)


def documented(*names: str) -> Callable[[type], type]:
    """A class decorator: the line holding MARKER in the class's docstring becomes the
    ``parameters_section`` of ``names``, indented as the marker is.

    Raises:
        ValueError: the docstring has no marker line.
    """
    def decorate(cls: type) -> type:
        doc = cls.__doc__ or ""
        for line in doc.splitlines():
            if line.strip() == MARKER:
                indent = len(line) - len(line.lstrip())
                cls.__doc__ = doc.replace(line, parameters_section(names, indent), 1)
                return cls
        raise ValueError(f"{cls.__name__}'s docstring has no {MARKER} line")

    return decorate
