"""The RandSVM estimators' parameters as ``train`` options: one source, the estimators.

An option's name, default and svm types are the estimator's signature
(``inspect.signature``), its type and choices its ``_parameter_constraints``, for every
estimator of the registry (:data:`randsvm_dist.estimators.ESTIMATORS`); its help is
:data:`HELP`, the one table of help texts. What the command line cannot express as the
Python API does (a ``FeatureScaler`` object, a streaming seed model, the client) is named
in :data:`CLI_FORMS` or :data:`NOT_OPTIONS`.

The estimators import scikit-learn (seconds), which ``--help`` and argument errors must
not, so the parser reads what :func:`describe_options` derives from them through a
generated module, ``cli/estimator_option_table.py`` (plain literals). Regenerate it with
``python -m randsvm_dist.cli.estimator_options`` after changing an estimator's parameters:
``tests/cli/test_estimator_options.py`` fails while it differs from the estimators, so a
change of the estimators never changes the command line silently.
"""

from __future__ import annotations

import argparse
import inspect
from numbers import Integral, Real
from pathlib import Path

from randsvm_dist.cli.options import bound, int_or_auto, number_or_name
from randsvm_dist.exceptions import ParameterError

# parameters the command line sets otherwise: --random-state, --scheduler, --seed-from
NOT_OPTIONS = {"random_state", "client", "n_partitions", "seed"}
# the command-line form of parameters whose Python values are objects or booleans
CLI_FORMS = {
    "scale": {"choices": ["minmax", "standard"]},
    "cache": {"choices": ["auto", "true", "false"],
              "convert": {"auto": "auto", "true": True, "false": False}.get},
    "class_weight": {"choices": ["balanced"]},
    "k": {"type": bound, "metavar": "none|auto|N"},
}
# the help of every option: one text per estimator parameter (NOT_OPTIONS aside)
HELP = {
    "C": "box constraint (> 0).",
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
    "probability": "fit Platt's sigmoid per pair on held-out decision values (see "
                   "``estimators.calibration``: about 0.8 of a fit more), for "
                   "``predict_proba``; written into the model file as LIBSVM's "
                   "probA/probB.",
    "k": "the paper's support-set bound, an option: stop when a solve has k or more support "
         "vectors ('auto': the paper's estimate from bound_epsilon and bound_delta, see "
         "``exact.bounds``). None (the default) drops it: the fit runs to the certified "
         "gap. A stop at k is not certified and warns.",
    "sample_size": "r, rows of the first uniform sample (and the least a later working set "
                   "is filled to). 'auto': 2 x the paper's k estimate, at most an eighth of "
                   "the rows and at least 5,000 (``exact.route.auto_sample_size``).",
    "bound_epsilon": "parameters of the paper's k estimate.",
    "bound_delta": "parameters of the paper's k estimate.",
    "separable": "parameters of the paper's k estimate.",
    "max_iter": "most solve/scan iterations per problem.",
    "tol": "LIBSVM's tolerance of the first solve (its -e); also the slack of a violator. "
           "When the working set's own gap keeps the certified gap above gap_tol, the next "
           "solve divides tol by the ratio of that gap to 0.35 x gap_tol (at least 2x, "
           "at most 1000x at once, never below 1e-7; "
           "``exact.certificate.tightened``). ``history_`` records the tol of every solve.",
    "violator_tol": "stop when at most this fraction of rows are violators (0: off). Not "
                    "certified: warns.",
    "gap_tol": "the default stop: (primal - dual) / |primal| <= gap_tol, the primal "
               "objective taken over all rows, the dual that of the working set; by weak "
               "duality this certifies that the model's objective is within that relative "
               "distance of the optimum of the whole data set. 0: run until no row "
               "violates.",
    "cache_size": "LIBSVM's kernel cache in MB per solve.",
    "scale": "None, 'minmax', 'standard', or a ``preprocessing.FeatureScaler``: learnt on "
             "the training rows on the workers, applied before training and by "
             "predict/evaluate, saved with the model.",
    "route": "'auto' (the cost model's choice: one solve of all rows when it predicts that "
             "faster than sampling, else sampling, asked again with the share of support "
             "vectors the first sampled solve found; the history says which and why), "
             "'sample' or 'direct' (one solve of all rows on a worker).",
    "cache": "keep the partitions in worker memory (True), re-read them from Parquet on "
             "every pass (False: data larger than the workers' memory), or 'auto' (cache "
             "when the data takes at most half of the workers' memory limit).",
    "solver": "who solves each working set: 'auto' (the default: oneDAL where it is "
              "installed, solves the problem and was measured faster: working sets of at "
              "least 500 rows that carry per-row weights, or are sparse with at least 5 "
              "non-zeros per row on average, or dense with at least 10 features, see "
              "``solvers.onedal_auto.prefer_onedal``; LIBSVM otherwise), 'libsvm' "
              "(libsvm-official, the reference) or 'onedal' (oneDAL via scikit-learn-intelex "
              "for C-SVC and epsilon-SVR, LIBSVM for the rest). scikit-learn-intelex comes "
              "with the default install on x86-64. Same optimum, same certificate.",
    "nu": "an upper bound on the fraction of training outliers and a lower bound on the "
          "fraction of support vectors, in (0, 1].",
    "epsilon": "half-width of the epsilon-insensitive tube (>= 0), as SVR.",
}


TABLE = Path(__file__).with_name("estimator_option_table.py")
# an option's argparse form by the kind describe_options() names
KINDS = {"int": {"type": int}, "float": {"type": float},
         "int_or_auto": {"type": int_or_auto}, "number_or_name": {"type": number_or_name},
         "flag": {"action": "store_true"}, "str": {}}


def _kind(name: str, constraints: list) -> tuple[str, list | None]:
    """The argparse kind of a parameter (a key of KINDS, 'choices' or 'form') and its
    choices, from its ``_parameter_constraints`` entry."""
    from randsvm_dist.core.constraints import Interval, StrOptions

    if name in CLI_FORMS:
        return "form", None
    strs = [c for c in constraints if isinstance(c, StrOptions)]
    choices = sorted(strs[0].options) if strs else None
    types = [c.type if isinstance(c, Interval) else c for c in constraints]
    if constraints == ["boolean"]:
        return "flag", None
    if Integral in types:
        return ("int_or_auto" if choices else "int"), choices
    if Real in types:
        return ("number_or_name" if choices else "float"), choices
    return ("choices", choices) if choices else ("str", None)


def describe_options() -> dict:
    """What the command line takes from the estimators (imports them: scikit-learn).

    Returns:
        ``{"svm_types": [...], "options": [{"name", "svm_types", "defaults", "kind",
        "choices"}, ...]}``: the registry's svm types in order, and every parameter that
        is an option in the order its first estimator lists it (``defaults``: the sorted
        reprs of its signatures' defaults).
    """
    from randsvm_dist.estimators import ESTIMATORS

    options: dict[str, dict] = {}
    for svm_type, cls in ESTIMATORS.items():
        constraints = cls._parameter_constraints
        for param in inspect.signature(cls).parameters.values():
            if param.name in NOT_OPTIONS:
                continue
            entry = options.setdefault(param.name, {"name": param.name, "svm_types": [],
                                                    "defaults": []})
            entry["svm_types"].append(svm_type)
            entry["defaults"] = sorted({*entry["defaults"], repr(param.default)})
            c = constraints.get(param.name)
            entry["kind"], entry["choices"] = _kind(param.name, c if isinstance(c, list)
                                                    else [])
    return {"svm_types": list(ESTIMATORS), "options": list(options.values())}


def render_table(described: dict) -> str:
    """The source of ``estimator_option_table.py`` holding ``described``."""
    from pprint import pformat

    options = pformat(described["options"], width=88, sort_dicts=False)
    return ('"""Generated by ``python -m randsvm_dist.cli.estimator_options`` from the '
            "estimators'\nsignatures and ``_parameter_constraints`` (see "
            '``cli/estimator_options.py``); do not edit.\n"""\n\n'
            f"SVM_TYPES = {described['svm_types']!r}\nOPTIONS = {options}\n")


def flag(name: str) -> str:
    """A parameter's name on the command line (``--name-with-dashes``)."""
    return "--" + name.replace("_", "-")


def add_estimator_options(p: argparse.ArgumentParser) -> None:
    """Add ``--svm-type`` and every estimator parameter as an option (absent unless given:
    the estimator's own default applies)."""
    from randsvm_dist.cli.estimator_option_table import OPTIONS, SVM_TYPES

    p.add_argument("--svm-type", default="c_svc", choices=SVM_TYPES,
                   help="c_svc: classification (RandSVMClassifier, LIBSVM -s 0); "
                        "epsilon_svr: regression on a real-valued label column "
                        "(RandSVMRegressor, -s 3); one_class: novelty detection, labels "
                        "ignored (RandSVMOneClass, -s 2)")
    for opt in OPTIONS:
        types = opt["svm_types"]
        only = "" if len(types) == len(SVM_TYPES) else f"[{', '.join(sorted(types))}] "
        if opt["kind"] == "form":
            kwargs = {k: v for k, v in CLI_FORMS[opt["name"]].items() if k != "convert"}
        elif opt["kind"] == "choices":
            kwargs = {"choices": opt["choices"]}
        else:
            kwargs = KINDS[opt["kind"]]
        p.add_argument(flag(opt["name"]), dest=opt["name"], default=argparse.SUPPRESS,
                       help=f"{only}{HELP[opt['name']]} (default: "
                            f"{' / '.join(opt['defaults'])})".replace("%", "%%"), **kwargs)


def estimator_params(args: argparse.Namespace, svm_type: str) -> dict:
    """The keyword arguments of the ``svm_type``'s estimator that the options set.

    Raises:
        ParameterError: an option that the svm type does not have.
    """
    from randsvm_dist.cli.estimator_option_table import OPTIONS

    params = {}
    for opt in OPTIONS:
        value = getattr(args, opt["name"], None)
        if value is None or value is False:
            continue
        if svm_type not in opt["svm_types"]:
            raise ParameterError(f"{flag(opt['name'])} applies to --svm-type "
                                 f"{' or '.join(sorted(opt['svm_types']))}; this is "
                                 f"{svm_type}")
        convert = CLI_FORMS.get(opt["name"], {}).get("convert")
        params[opt["name"]] = convert(value) if convert else value
    return params


if __name__ == "__main__":
    TABLE.write_text(render_table(describe_options()))
