"""The ``train`` options come from the estimators: every parameter has an option and help,
the generated table matches the estimators, and the command line is what it was."""

from __future__ import annotations

import inspect

from randsvm_dist.cli import build_parser
from randsvm_dist.cli.estimator_option_table import OPTIONS, SVM_TYPES
from randsvm_dist.cli.estimator_options import (
    DOC,
    HELP,
    NOT_OPTIONS,
    TABLE,
    describe_options,
    doc_with_table,
    render_doc_table,
    render_table,
)
from randsvm_dist.core.parameter_texts import PARAMETER_TEXTS
from randsvm_dist.estimators import ESTIMATORS

# the options of `train --help` before they were generated from the estimators' signatures
# and constraints (when they were ast-parsed from the estimators' source and docstrings),
# and the feature-column choice added since (--features, --exclude-columns)
TRAIN_OPTIONS_BEFORE = {
    "--features", "--exclude-columns", "--one-hot",
    "--C", "--bound-delta", "--bound-epsilon", "--break-ties", "--cache", "--cache-size",
    "--checkpoint", "--class-weight", "--coef0", "--decision-function-shape", "--degree",
    "--epsilon", "--gamma", "--gap-tol", "--help", "--json", "--k", "--kernel",
    "--max-iter", "--model", "--multi-class", "--nu", "--overwrite", "--probability",
    "--random-state", "--report", "--resume", "--route", "--sample-size", "--scale",
    "--scheduler", "--seed-from", "--separable", "--solver", "--svm-type", "--test",
    "--tls-ca-file", "--tls-cert", "--tls-key", "--tol", "--violator-tol",
    "--weight-column", "-h",
}


def _train_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["train"]


def test_the_generated_table_is_the_estimators_parameters():
    """Regenerate with `python -m randsvm_dist.cli.estimator_options` when this fails."""
    assert {"svm_types": SVM_TYPES, "options": OPTIONS} == describe_options()
    assert TABLE.read_text() == render_table(describe_options())
    assert SVM_TYPES == list(ESTIMATORS)


def test_every_estimator_parameter_has_an_option_with_help():
    options = {o["name"]: o for o in OPTIONS}
    for svm_type, cls in ESTIMATORS.items():
        for name, param in inspect.signature(cls).parameters.items():
            if name in NOT_OPTIONS:
                continue
            assert svm_type in options[name]["svm_types"], (svm_type, name)
            assert repr(param.default) in options[name]["defaults"], (svm_type, name)
            assert len(HELP[name]) > 10, name
    assert set(HELP) == set(options)  # no help for a parameter that is gone
    actions = {a.dest: a for a in _train_parser()._actions}
    for name in options:
        assert HELP[name] in actions[name].help.replace("%%", "%"), name


def test_train_options_are_those_before():
    parser = _train_parser()
    assert {s for a in parser._actions for s in a.option_strings} == TRAIN_OPTIONS_BEFORE
    assert [a.dest for a in parser._actions if not a.option_strings] == ["data"]


def test_an_option_takes_its_constraints_type_and_choices():
    args = build_parser().parse_args(
        ["train", "d", "--model", "m", "--svm-type", "one_class", "--nu", "0.25",
         "--sample-size", "auto", "--gamma", "scale", "--max-iter", "7", "--kernel", "poly",
         "--separable"])
    assert (args.nu, args.sample_size, args.gamma, args.max_iter, args.kernel,
            args.separable) == (0.25, "auto", "scale", 7, "poly", True)
    args = build_parser().parse_args(["train", "d", "--model", "m", "--sample-size", "900",
                                      "--gamma", "0.5"])
    assert (args.sample_size, args.gamma) == (900, 0.5)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_help_of_every_option_is_the_estimators_docstring_text():
    """One text per parameter (``core.parameter_texts``): each estimator's docstring says
    it, the option's help says the same words."""
    for cls in ESTIMATORS.values():
        doc = " ".join(_words(c.__doc__ or "") for c in cls.__mro__)
        for name in inspect.signature(cls).parameters:
            assert _words(f"{name}: {PARAMETER_TEXTS[name]}") in doc, (cls.__name__, name)
            if name not in NOT_OPTIONS:
                assert HELP[name] == PARAMETER_TEXTS[name], name


def test_the_option_table_of_docs_cli_md_is_generated():
    """Regenerate with `python -m randsvm_dist.cli.estimator_options` when this fails."""
    text = DOC.read_text()
    table = render_doc_table(OPTIONS, SVM_TYPES)
    assert doc_with_table(text, table) == text
