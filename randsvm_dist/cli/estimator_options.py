"""The RandSVM estimators' parameters as ``train`` options, read from the estimators.

An option's name, default and svm types are the estimator's signature
(``inspect.signature``), its type and choices its ``_parameter_constraints``; the estimators
are the registry's (:data:`randsvm_dist.estimators.ESTIMATORS`). Its help is :data:`HELP`,
the one table of help texts (a test checks that every parameter has one). What the command
line cannot express as the Python API does (a ``FeatureScaler`` object, a streaming seed
model, the client) is named in :data:`CLI_FORMS` or :data:`NOT_OPTIONS`.

The estimators import scikit-learn, so the options are added only when ``train`` (or
``submit train``) is parsed: ``randsvm-dist --help`` and the other commands never import it
(see :class:`randsvm_dist.cli.options.DeferredParser`).
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass, field
from numbers import Integral, Real

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
                   "the rows and at least 5,000 (``exact.driver.auto_sample_size``).",
    "bound_epsilon": "parameters of the paper's k estimate.",
    "bound_delta": "parameters of the paper's k estimate.",
    "separable": "parameters of the paper's k estimate.",
    "max_iter": "most solve/scan iterations per problem.",
    "tol": "LIBSVM's tolerance of the first solve (its -e); also the slack of a violator. "
           "When the working set's own gap keeps the certified gap above gap_tol, the next "
           "solve divides tol by 10, or by the ratio of that gap to a quarter of gap_tol "
           "when larger (at most 1000x at once, never below 1e-7; "
           "``exact.steps.tightened``). ``history_`` records the tol of every solve.",
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
    "route": "'auto' (a direct LIBSVM solve of all rows when sampling cannot pay, else "
             "sampling; the history says which and why), 'sample' or 'direct'.",
    "cache": "keep the partitions in worker memory (True), re-read them from Parquet on "
             "every pass (False: data larger than the workers' memory), or 'auto' (cache "
             "when the data takes at most half of the workers' memory limit).",
    "solver": "who solves each working set: 'libsvm' (libsvm-official, the reference), "
              "'onedal' (oneDAL via scikit-learn-intelex for C-SVC and epsilon-SVR, LIBSVM "
              "for the rest; ``pip install randsvm-dist[fast]``) or 'auto' (oneDAL where it "
              "is installed, solves the problem and was measured faster: working sets of "
              "at least 500 rows that carry per-row weights, or are sparse with at least 5 "
              "non-zeros per row on average, or dense with at least 10 features; see "
              "``solvers.onedal_backend.prefer_onedal``). Same optimum, same certificate.",
    "nu": "an upper bound on the fraction of training outliers and a lower bound on the "
          "fraction of support vectors, in (0, 1].",
    "epsilon": "half-width of the epsilon-insensitive tube (>= 0), as SVR.",
}


@dataclass
class Option:
    """One estimator parameter as an option: its svm types' defaults and its constraints
    (scikit-learn's ``_parameter_constraints`` entry)."""

    name: str
    defaults: dict = field(default_factory=dict)   # svm type -> the signature's default
    constraints: list = field(default_factory=list)

    @property
    def flag(self) -> str:
        """The option's name on the command line (``--name-with-dashes``)."""
        return "--" + self.name.replace("_", "-")

    @property
    def help(self) -> str:
        """The option's help text (:data:`HELP`)."""
        return HELP[self.name]


def estimator_options() -> dict[str, Option]:
    """Every estimator parameter that is an option, with the svm types that have it
    (in the registry's order; a parameter's place is where its first estimator has it)."""
    from randsvm_dist.estimators import ESTIMATORS

    options: dict[str, Option] = {}
    for svm_type, cls in ESTIMATORS.items():
        for param in inspect.signature(cls).parameters.values():
            if param.name in NOT_OPTIONS:
                continue
            opt = options.setdefault(param.name, Option(param.name))
            opt.defaults[svm_type] = param.default
            constraints = cls._parameter_constraints.get(param.name)
            opt.constraints = constraints if isinstance(constraints, list) else []
    return options


def _argparse_kwargs(opt: Option) -> dict:
    """type/choices/action of an option from its constraints (or its CLI_FORMS entry)."""
    from sklearn.utils._param_validation import Interval, StrOptions

    form = CLI_FORMS.get(opt.name)
    if form:
        return {k: v for k, v in form.items() if k != "convert"}
    strs = [c for c in opt.constraints if isinstance(c, StrOptions)]
    choices = sorted(strs[0].options) if strs else None
    types = [c.type if isinstance(c, Interval) else c for c in opt.constraints]
    if opt.constraints == ["boolean"]:
        return {"action": "store_true"}
    if Integral in types:
        return {"type": int_or_auto if choices else int}
    if Real in types:
        return {"type": number_or_name if choices else float}
    return {"choices": choices} if choices else {}


def add_estimator_options(p: argparse.ArgumentParser) -> None:
    """Add ``--svm-type`` and every estimator parameter as an option (absent unless given:
    the estimator's own default applies)."""
    from randsvm_dist.estimators import ESTIMATORS

    p.add_argument("--svm-type", default="c_svc", choices=list(ESTIMATORS),
                   help="c_svc: classification (RandSVMClassifier, LIBSVM -s 0); "
                        "epsilon_svr: regression on a real-valued label column "
                        "(RandSVMRegressor, -s 3); one_class: novelty detection, labels "
                        "ignored (RandSVMOneClass, -s 2)")
    for opt in estimator_options().values():
        types = sorted(opt.defaults)
        only = "" if len(types) == len(ESTIMATORS) else f"[{', '.join(types)}] "
        shown = {repr(v) for v in opt.defaults.values()}
        p.add_argument(opt.flag, dest=opt.name, default=argparse.SUPPRESS,
                       help=f"{only}{opt.help} (default: {' / '.join(sorted(shown))})"
                       .replace("%", "%%"), **_argparse_kwargs(opt))


def estimator_params(args: argparse.Namespace, svm_type: str) -> dict:
    """The keyword arguments of the ``svm_type``'s estimator that the options set.

    Raises:
        ParameterError: an option that the svm type does not have.
    """
    params = {}
    for opt in estimator_options().values():
        value = getattr(args, opt.name, None)
        if value is None or value is False:
            continue
        if svm_type not in opt.defaults:
            raise ParameterError(f"{opt.flag} applies to --svm-type "
                                 f"{' or '.join(sorted(opt.defaults))}; this is {svm_type}")
        convert = CLI_FORMS.get(opt.name, {}).get("convert")
        params[opt.name] = convert(value) if convert else value
    return params
