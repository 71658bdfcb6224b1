"""Every dotted reference in a docstring of the package or in its documents resolves: a
module, or a name in one (``exact.certificate.tightened``, ``solvers.warm_smo.solve``,
``randsvm_dist.streaming.LEARNERS``), written from the package's root or relative to the
referring module's packages (``certificate.tightened`` inside ``exact/``), a class of the
package and its attribute (``BinarySolution.kernel_sums``), or another library's name
(``distributed.Client``). A renamed or removed module shows up here, not in a reader's
search.

Not references: file names (``status.json``), Dask's configuration keys (``CONFIG_KEYS``),
placeholders (``MODEL.range``) and attributes of a variable of the text (``client.submit``,
``args.model``, ``est.scaler_``): their first names are in ``NOT_MODULES``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "randsvm_dist"
DOCUMENTS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
REFERENCE = re.compile(
    r"``~?\.?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``"            # ``a.b``
    r"|(?<![`\w])`~?\.?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?`(?![`\w])"  # `a.b` (Markdown)
    r"|:(?:mod|func|class|data|meth|attr):`~?\.?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`")
FILE_SUFFIXES = {"json", "cpp", "pem", "py", "range", "npz", "csv", "txt", "md", "sh", "log",
                 "model", "gz", "svm", "parquet", "toml", "jsonl", "png", "yml", "yaml"}
# first names that are variables of the text, placeholders, or libraries not installed here
NOT_MODULES = {
    "args", "client", "kind", "params", "est", "estimator", "wrapper", "p", "cfg", "model",
    "self", "setup", "totals", "loaded", "fig", "ds", "part", "parts", "store", "sol", "X",
    "y", "state", "MODEL", "PATH", "OUT", "DIR", "xgboost", "lightgbm", "dask_ml", "river",
    "svm", "cls", "h", "r", "job", "opt", "out", "result", "data", "run", "problem", "spec",
}


# Dask configuration keys look like dotted names
CONFIG_KEYS = ("distributed.worker.memory.", "distributed.comm.", "distributed.scheduler.")


def module_name(path: pathlib.Path) -> str:
    parts = ["randsvm_dist", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstrings(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def references(text: str):
    for m in REFERENCE.finditer(text):
        ref = next(g for g in m.groups() if g)
        first, last = ref.split(".")[0], ref.rsplit(".", 1)[1]
        if last in FILE_SUFFIXES or first in NOT_MODULES or ref.startswith(CONFIG_KEYS):
            continue
        yield ref


def _has(obj, name: str) -> bool:
    if hasattr(obj, name):
        return True
    if isinstance(obj, type):
        return any(name in getattr(c, "__annotations__", {})
                   or (dataclasses.is_dataclass(c)
                       and name in {f.name for f in dataclasses.fields(c)})
                   for c in obj.__mro__)
    return False


def _walk(obj, names: list[str]) -> bool:
    for name in names:
        if isinstance(obj, type) and name.endswith("_") and not name.startswith("_"):
            return True  # a fitted attribute (``RandSVMClassifier.history_``)
        if _has(obj, name):
            obj = getattr(obj, name, None)
            if obj is None:  # an annotated field: nothing further to check
                return True
            continue
        try:
            obj = importlib.import_module(f"{obj.__name__}.{name}")
        except (ImportError, AttributeError, TypeError):
            return False
    return True


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _classes() -> dict[str, type]:
    """Every class the package defines, by name (references name them unqualified)."""
    out: dict[str, type] = {}
    for f in PACKAGE.rglob("*.py"):
        if f.name == "__main__.py":  # runs the command line when imported
            continue
        mod = _import(module_name(f))
        for name, obj in vars(mod).items() if mod else ():
            if isinstance(obj, type) and obj.__module__ == mod.__name__:
                out.setdefault(name, obj)
    return out


def resolves(ref: str, where: str, classes: dict[str, type]) -> bool:
    """Whether ``ref`` names something, read from the package's root, from the referring
    module ``where`` and its packages, as a class of the package, or as another library's."""
    parts = ref.split(".")
    bases = [where.rsplit(".", n)[0] for n in range(where.count(".") + 1)]
    for base in dict.fromkeys(["", *bases, "randsvm_dist"]):
        full = f"{base}.{ref}" if base else ref
        if not full.startswith("randsvm_dist") and base:
            continue
        names = full.split(".")
        for k in range(len(names), 0, -1):
            mod = _import(".".join(names[:k]))
            if mod is not None:
                if _walk(mod, names[k:]):
                    return True
                break
    return parts[0] in classes and _walk(classes[parts[0]], parts[1:])


@pytest.fixture(scope="module")
def classes():
    return _classes()


def test_every_dotted_reference_in_a_docstring_resolves(classes):
    stale = [f"{module_name(f)}: {ref}" for f in sorted(PACKAGE.rglob("*.py"))
             for text in docstrings(f) for ref in references(text)
             if not resolves(ref, module_name(f), classes)]
    assert stale == []


def test_every_dotted_reference_in_the_documents_resolves(classes):
    stale = [f"{f.relative_to(ROOT)}: {ref}" for f in DOCUMENTS
             for line in f.read_text().splitlines() for ref in references(line)
             if not resolves(ref, _described(line), classes)]
    assert stale == []


def _described(line: str) -> str:
    """The module a line of ARCHITECTURE.md's module list describes (its references are
    its docstring's, relative to it), else the package."""
    m = re.match(r"- `([\w.]+)`: ", line)
    return f"randsvm_dist.{m.group(1)}" if m and m.group(1) != "randsvm_dist" else "randsvm_dist"


def test_every_dotted_reference_in_a_parameter_text_resolves(classes):
    """The texts the estimators' docstrings are made of (``core.parameter_texts``)."""
    from randsvm_dist.core.parameter_texts import PARAMETER_TEXTS

    stale = [f"{name}: {ref}" for name, text in PARAMETER_TEXTS.items()
             for ref in references(text)
             if not resolves(ref, "randsvm_dist.estimators.base", classes)]
    assert stale == []


def test_the_check_finds_what_it_is_for(classes):
    assert resolves("exact.certificate.tightened", "randsvm_dist.app.train", classes)
    assert resolves("certificate.tightened", "randsvm_dist.exact.driver", classes)
    assert resolves("BinarySolution.kernel_sums", "randsvm_dist.exact.state", classes)
    assert resolves("distributed.Client", "randsvm_dist.engine.client", classes)
    assert not resolves("distributed_predict.predict_dataset", "randsvm_dist.estimators.base",
                        classes)
    assert not resolves("exact.certificate.loosened", "randsvm_dist.app.train", classes)
