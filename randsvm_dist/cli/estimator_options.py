"""The RandSVM estimators' parameters as ``train`` options, read from the estimators' source.

One source for each fact: an option's name, default, choices, type and help are the
estimator's ``__init__`` signature, its ``_parameter_constraints`` and its docstring. They
are read with ``ast`` (nothing is imported), so ``--help`` stays fast and a new parameter
or a changed default reaches the command line without a second copy here. What the command
line cannot express as the Python API does (a ``FeatureScaler`` object, a streaming seed
model, the client) is named in ``CLI_FORMS`` or left out.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass, field
from pathlib import Path

from randsvm_dist.cli.options import bound, int_or_auto, number_or_name
from randsvm_dist.exceptions import ParameterError

ESTIMATORS = Path(__file__).resolve().parents[1] / "estimators"
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


@dataclass
class Option:
    """One estimator parameter as an option."""

    name: str
    help: str = ""
    defaults: dict = field(default_factory=dict)   # svm type -> the signature's default
    constraints: list = field(default_factory=list)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _svm_types() -> dict[str, tuple[str, str]]:
    """svm type -> (file, class) of every estimator that declares ``_svm_type``."""
    out = {}
    for path in sorted(ESTIMATORS.glob("*.py")):
        for cls in ast.parse(path.read_text()).body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == \
                        "_svm_type":
                    out[ast.literal_eval(node.value)] = (path.name, cls.name)
    return dict(sorted(out.items(), key=lambda kv: kv[0] != "c_svc"))


def _literal(node):
    """A literal's value; ``set(NAME)`` of a tuple that ``kernels.py`` defines (KERNELS)."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "set" and \
            isinstance(node.args[0], ast.Name):
        return set(_module_constant(ESTIMATORS.parent / "numerics" / "kernels.py", node.args[0].id))
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _module_constant(path: Path, name: str):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} is not a constant of {path}")


SVM_TYPES = _svm_types()  # c_svc first: the default


def _docstring_entries(doc: str) -> dict[str, str]:
    """``name: text`` entries of a Google-style docstring (continuation lines joined)."""
    out: dict[str, str] = {}
    current, at = None, 0
    for line in doc.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        head, sep, text = stripped.partition(": ")
        names = [n.strip() for n in head.split(",")]
        if current and stripped and indent > at:
            for n in current:
                out[n] += " " + stripped
        elif sep and all(n.isidentifier() for n in names):
            for n in names:
                out[n] = text
            current, at = names, indent
        else:
            current = None
    return out


def _class_facts(path: Path, name: str) -> tuple[dict, dict, dict]:
    """(defaults, constraints, docstring entries) of one estimator class in one file."""
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    defaults, constraints = {}, {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            defaults = {arg.arg: _literal(d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)}
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == \
                "_parameter_constraints" and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values):
                if k is not None:
                    constraints[_literal(k)] = v
    return defaults, constraints, _docstring_entries(ast.get_docstring(cls) or "")


def estimator_options() -> dict[str, Option]:
    """Every estimator parameter that is an option, with the svm types that have it."""
    _, base_constraints, base_doc = _class_facts(ESTIMATORS / "base.py", "RandSVMBase")
    options: dict[str, Option] = {}
    for svm_type, (file, name) in SVM_TYPES.items():
        defaults, constraints, doc = _class_facts(ESTIMATORS / file, name)
        for param, default in defaults.items():
            if param in NOT_OPTIONS:
                continue
            opt = options.setdefault(param, Option(param))
            opt.defaults[svm_type] = default
            opt.help = opt.help or doc.get(param) or base_doc.get(param, "")
            node = constraints.get(param, base_constraints.get(param))
            opt.constraints = node.elts if isinstance(node, ast.List) else []
    return options


def _argparse_kwargs(opt: Option) -> dict:
    """type/choices/action of an option from its constraints (or its CLI_FORMS entry)."""
    form = CLI_FORMS.get(opt.name)
    if form:
        return {k: v for k, v in form.items() if k != "convert"}
    kinds = [ast.unparse(c) for c in opt.constraints]
    strs = [c for c in opt.constraints if isinstance(c, ast.Call)
            and getattr(c.func, "id", "") == "StrOptions"]
    choices = sorted(_literal(strs[0].args[0])) if strs else None
    if kinds == ["'boolean'"]:
        return {"action": "store_true"}
    if any("Integral" in k for k in kinds):
        return {"type": int_or_auto if choices else int}
    if any("Real" in k for k in kinds):
        return {"type": number_or_name if choices else float}
    return {"choices": choices} if choices else {}


def add_estimator_options(p: argparse.ArgumentParser) -> None:
    """Add every estimator parameter as an option (absent unless given: the estimator's
    own default applies)."""
    for opt in estimator_options().values():
        types = sorted(opt.defaults)
        only = "" if len(types) == len(SVM_TYPES) else f"[{', '.join(types)}] "
        shown = {repr(v) for v in opt.defaults.values()}
        default = f" (default: {' / '.join(sorted(shown))})" if opt.defaults else ""
        p.add_argument(opt.flag, dest=opt.name, default=argparse.SUPPRESS,
                       help=f"{only}{opt.help}{default}".replace("%", "%%"),
                       **_argparse_kwargs(opt))


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
