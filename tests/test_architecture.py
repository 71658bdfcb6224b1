"""The layers of ARCHITECTURE.md hold: no import runs up a layer, no import cycle, no
private module imported across packages."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "randsvm_dist"

LAYERS = {  # module or package prefix (longest wins) -> layer (ARCHITECTURE.md)
    "exceptions": 0, "core": 0,
    "numerics": 1, "solvers": 1,
    "model_files.libsvm_text": 1, "model_files.libsvm_sv_lines": 1, "model_files.ovo_layout": 1,
    "data": 2, "streaming": 2,
    "engine": 3,
    "exact": 4, "distributed": 4,
    "estimators": 5, "model_files.estimator_files": 5,
    "model_files": 6, "app": 6,
    "jobs": 7,
    "cli": 8,
}


def module_name(path: pathlib.Path) -> str:
    parts = ["randsvm_dist", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports (anywhere in it)."""
    modules = {module_name(f): f for f in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, f in modules.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                names = [".".join(base + ([node.module] if node.module else []))]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if isinstance(node, ast.ImportFrom):
                names += [f"{names[0]}.{a.name}" for a in node.names]
            graph[m] |= {n for n in names if n in modules and n != m}
    return graph


def layer(module: str) -> int | None:
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    return None


def upward_imports(graph) -> list[str]:
    out = []
    for m, targets in graph.items():
        for t in targets:
            if layer(m) is not None and layer(t) is not None and layer(t) > layer(m):
                out.append(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})")
    return sorted(out)


def cycles(graph) -> list[list[str]]:
    """Import cycles (a package's own __init__ importing its modules does not count)."""
    color: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(u: str, stack: list[str]) -> None:
        color[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if v.startswith(u + ".") or u.startswith(v + "."):
                continue  # a package and its own modules
            if color.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif v not in color:
                visit(v, stack)
        stack.pop()
        color[u] = 2

    for m in sorted(graph):
        if m not in color:
            visit(m, [])
    return found


def component(module: str) -> str | None:
    """The LAYERS entry a module belongs to (its package, or a model_files module)."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    return None


def package_graph(graph) -> dict[str, set[str]]:
    """The import graph between LAYERS entries (packages; model_files by module)."""
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        a = component(m)
        if a is None:
            continue
        out.setdefault(a, set())
        out[a] |= {b for b in map(component, targets) if b is not None and b != a}
    return {f"randsvm_dist.{k}": {f"randsvm_dist.{v}" for v in vs} for k, vs in out.items()}


def private_imports(graph) -> list[str]:
    out = []
    for m, targets in graph.items():
        for t in targets:
            *pkg, last = t.split(".")
            if last.startswith("_") and not last.startswith("__") and \
                    not m.startswith(".".join(pkg) + "."):
                out.append(f"{m} imports the private module {t}")
    return sorted(out)


def test_every_module_has_a_layer():
    unplaced = [m for m in import_graph() if m != "randsvm_dist" and layer(m) is None]
    assert not unplaced, f"add these to ARCHITECTURE.md and LAYERS: {unplaced}"


def test_no_import_runs_up_a_layer():
    assert upward_imports(import_graph()) == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_no_import_cycles_between_packages():
    """Package to package (estimators/ and model_files' estimator files, say), not only
    module to module: a lazy import of a registry closes a cycle too."""
    assert cycles(package_graph(import_graph())) == []


def test_no_private_module_imported_across_packages():
    assert private_imports(import_graph()) == []


def test_the_checks_catch_what_they_are_for():
    graph = {"randsvm_dist.numerics.kernels": {"randsvm_dist.cli.train"},
             "randsvm_dist.cli.train": {"randsvm_dist.numerics.kernels"},
             "randsvm_dist.cli": {"randsvm_dist.data._private"},
             "randsvm_dist.data._private": set()}
    assert upward_imports(graph) == ["randsvm_dist.numerics.kernels (layer 1) imports "
                                     "randsvm_dist.cli.train (layer 8)"]
    assert cycles(graph) == [["randsvm_dist.cli.train", "randsvm_dist.numerics.kernels",
                              "randsvm_dist.cli.train"]]
    assert private_imports(graph) == ["randsvm_dist.cli imports the private module "
                                      "randsvm_dist.data._private"]


if __name__ == "__main__":
    g = import_graph()
    for line in upward_imports(g) + private_imports(g):
        print(line)
    for c in cycles(g) + cycles(package_graph(g)):
        print("cycle:", " -> ".join(c))
