"""Structure metrics of the package (issue 37): size, function length and branches, the
calls from ``RandSVMClassifier.fit`` to the LIBSVM call and to the scan's kernel, the
modules one cluster fit runs, and the places that restate a parameter's text or a rule.

    python benchmarks/structure_metrics.py [ROOT] [--json OUT] [--no-trace]

ROOT is a checkout of the repository (default: this one), so two commits compare by
running this script from one checkout against a second one (``git worktree add``). The
static counts read ROOT's files; the trace fits a small data set on a threaded local
cluster (``processes=False``, so every task runs in this process) in a subprocess that
imports ROOT's package, with a profile hook on every thread:

- calls to a target: the fewest call edges from ``fit`` to it in the graph of calls the
  fit made (a function handing another to ``Client.submit``/``map`` or an executor counts
  as calling it; a comprehension is part of its function);
- modules of a fit: the package's modules whose code ran during the first fit (module
  bodies its lazy imports ran included, as the count was first made), and those whose
  functions ran in a second, identical fit (no imports left to run);
- the data walk of a fit's input: every call of a package function that receives the
  ``X`` passed to ``fit`` (as an argument, in a tuple, list or dict argument, or as an
  attribute of an object argument, such as a prepared input), in order; a module is
  *entered* when such a call comes from another module. Each module should be entered
  once: opening, checking and converting the input done in one step, not interleaved
  with routing.

Numba kernels are left out of the function counts (a decorator whose name holds 'jit' or
'kernel' or 'compiled').
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import re
import subprocess
import sys

FUNCTION_LINES = 60
FUNCTION_BRANCHES = 15
MODULE_LINES = 400
BRANCH_NODES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.IfExp,
                ast.With, ast.AsyncWith, ast.Match if hasattr(ast, "Match") else ast.If)
RULES = {  # a rule's statement in words or numbers, as a regular expression
    "tol tightening (0.35 x gap_tol)": r"0\.35\s*x\s*gap_tol",
    "oneDAL 'auto' thresholds (500 rows)": r"at\s+least\s+500\s+rows",
    "SCHEDULER_ENV defined": r"SCHEDULER_ENV\s*=\s*\"RANDSVM_DIST_SCHEDULER\"",
    "functions finding the current worker": r"def\s+_?(worker_name|worker_address|in_worker|"
                                           r"current_worker)\b",
}
GENERATED = [(r"<!-- the options of train and grid: generated",
              r"<!-- end of the generated options -->"),
             (r"<!-- every module and its job", r"<!-- end of the generated module list -->")]
MIN_TEXT = 30  # shorter texts ('poly/sigmoid parameters.') recur by chance


def branches(fn: ast.AST) -> int:
    """Branch points of a function: if/elif, loops, except, conditional expressions,
    with, match, and each extra operand of ``and``/``or``."""
    n = 0
    for node in ast.walk(fn):
        if isinstance(node, BRANCH_NODES):
            n += 1
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
    return n


def is_kernel(fn: ast.AST) -> bool:
    for d in getattr(fn, "decorator_list", []):
        text = ast.unparse(d)
        if any(w in text for w in ("jit", "kernel", "compiled")):
            return True
    return False


def static_counts(root: pathlib.Path) -> dict:
    """Module sizes and long or branchy functions of ROOT's package."""
    pkg = root / "randsvm_dist"
    big, long_fns, modules, lines = [], [], 0, 0
    for f in sorted(pkg.rglob("*.py")):
        text = f.read_text()
        n = text.count("\n")
        modules += 1
        lines += n
        rel = str(f.relative_to(root))
        if n > MODULE_LINES:
            big.append(f"{rel} ({n})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_kernel(node):
                length = node.end_lineno - node.lineno + 1
                b = branches(node)
                if length > FUNCTION_LINES or b > FUNCTION_BRANCHES:
                    long_fns.append(f"{rel}:{node.name} ({length} lines, {b} branches)")
    return {"modules": modules, "lines": lines, "modules_over_400_lines": big,
            "functions_over_60_lines_or_15_branches": long_fns}


def _strip_generated(text: str) -> str:
    for start, end in GENERATED:
        text = re.sub(start + r".*?" + end, "", text, flags=re.S)
    return text


def _corpus(root: pathlib.Path) -> dict[str, str]:
    files = [*root.joinpath("randsvm_dist").rglob("*.py"), *root.glob("*.md"),
             *root.joinpath("docs").glob("*.md")]
    return {str(f.relative_to(root)): " ".join(_strip_generated(f.read_text()).split())
            for f in files if "estimator_option_table" not in f.name}


def restated(root: pathlib.Path) -> dict:
    """Parameter texts written in more than one place, and rules stated more than once
    (generated files and sections aside)."""
    corpus = _corpus(root)
    texts = _parameter_texts(root)
    places = {}
    for name, text in texts.items():
        words = " ".join(text.split())
        # a text in source code is split over string literals: compare its first 60 chars
        probe = words[:60]
        if len(probe) < MIN_TEXT:
            continue
        found = [f for f, body in corpus.items() if probe in body.replace('" "', "")]
        if len(found) > 1:
            places[name] = found
    rules = {name: sorted({f for f, body in corpus.items() if re.search(rx, body)})
             for name, rx in RULES.items()}
    return {"parameter_texts_restated": len(places), "parameter_text_places": places,
            "rule_places": rules}


def _parameter_texts(root: pathlib.Path) -> dict[str, str]:
    """The parameter texts of ROOT: ``core.parameter_texts`` where it exists, else the
    command line's ``HELP`` table (read with ast: nothing is imported)."""
    for rel, var in (("randsvm_dist/core/parameter_texts.py", "PARAMETER_TEXTS"),
                     ("randsvm_dist/cli/estimator_options.py", "HELP")):
        f = root / rel
        if not f.exists():
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if getattr(target, "id", None) == var and isinstance(node.value, ast.Dict):
                    return {ast.literal_eval(k): ast.literal_eval(v)
                            for k, v in zip(node.value.keys, node.value.values)}
    return {}


# -- the trace (run in a subprocess importing ROOT's package) ---------------------------------
TRACE = r'''
import json, sys, threading, collections
import numpy as np
from sklearn.datasets import make_classification

edges = collections.defaultdict(set)
ran = set()
walk = []
DATA = []  # the X passed to fit, while the data walk is recorded
HANDOFF = {"submit", "map", "run"}


def holds_data(frame):
    data = DATA[0]
    for v in list(frame.f_locals.values()):
        if v is data:
            return True
        if isinstance(v, (tuple, list)):
            items = v
        elif isinstance(v, dict):
            items = list(v.values())
        else:
            items = list(getattr(v, "__dict__", {}).values())
        if any(x is data for x in items):
            return True
    return False


def in_package(code):
    return ("randsvm_dist" in code.co_filename and "site-packages" not in code.co_filename
            and code.co_name not in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"))


def name(code):
    return code.co_filename, code.co_name, code.co_firstlineno


def nearest(frame):
    while frame is not None and not in_package(frame.f_code):
        frame = frame.f_back
    return frame


def profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    if in_package(code) or code.co_name == "svm_train":
        ran.add(code.co_filename)
        caller = nearest(frame.f_back)
        if caller is not None:
            edges[name(caller.f_code)].add(name(code))
        if DATA and code.co_name != "<module>" and holds_data(frame):
            walk.append((code.co_filename, code.co_name,
                         caller.f_code.co_filename if caller is not None else ""))
    elif code.co_name in HANDOFF and ("distributed" in code.co_filename
                                      or "concurrent" in code.co_filename):
        fn = frame.f_locals.get("func", frame.f_locals.get("fn"))
        fn = getattr(fn, "func", fn)  # functools.partial
        fn_code = getattr(fn, "__code__", None)
        caller = nearest(frame.f_back)
        if fn_code is not None and caller is not None and in_package(fn_code):
            edges[name(caller.f_code)].add(name(fn_code))


sys.setprofile(profile)
threading.setprofile(profile)
from distributed import Client
from randsvm_dist import RandSVMClassifier

X, y = make_classification(n_samples=4000, n_features=10, random_state=0)
X = X.astype(np.float32)
params = dict(C=1.0, gamma=0.1, route="sample", solver="libsvm", sample_size=1000,
              random_state=0)
with Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as c:
    ran.clear(); edges.clear()
    DATA.append(X)
    RandSVMClassifier(client=c, **params).fit(X, y)
    DATA.clear()
    first = set(ran)
    ran.clear()
    RandSVMClassifier(client=c, **params).fit(X.copy(), y)
sys.setprofile(None)
threading.setprofile(None)
second = set(ran)


def path(src, dst):
    from collections import deque
    prev = {src: None}
    q = deque([src])
    while q:
        u = q.popleft()
        if u == dst:
            out = []
            while u is not None:
                out.append(u); u = prev[u]
            return out[::-1]
        for v in edges.get(u, ()):
            if v not in prev:
                prev[v] = u; q.append(v)
    return None


nodes = set(edges) | {v for vs in edges.values() for v in vs}
def find(fn_name, file_part=""):
    return [n for n in nodes if n[1] == fn_name and file_part in n[0]]

fit = [n for n in find("fit") if n[0].endswith("classifier.py")][0]
out = {}
svm_train = find("svm_train")
p = path(fit, svm_train[0]) if svm_train else None
out["libsvm"] = p
scans = find("scan_partition")
dec = [n for n in find("decision_values") if n[0].endswith("kernels.py")]
best = None
for s in scans:
    a = path(fit, s)
    for d in dec:
        b = path(s, d)
        if a and b and (best is None or len(a) + len(b) - 1 < len(best)):
            best = a + b[1:]
out["scan"] = best
out["modules"] = sorted(first)
out["modules_second_fit"] = sorted(second)
out["walk"] = walk
print("TRACE" + json.dumps(out))
'''


def module_of(filename: str) -> str:
    parts = pathlib.Path(filename).with_suffix("").parts
    i = len(parts) - 1 - parts[::-1].index("randsvm_dist") if "randsvm_dist" in parts else 0
    mod = ".".join(parts[i:])
    return mod.removesuffix(".__init__")


def traced(root: pathlib.Path) -> dict:
    """The trace of one cluster fit of ROOT's package (see the module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", TRACE], capture_output=True, text=True,
                          env=env, cwd=root, timeout=1800)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("TRACE")), None)
    if line is None:
        raise RuntimeError(proc.stderr[-3000:])
    raw = json.loads(line[5:])

    def chain(p):
        if not p:
            return None
        steps = [f"{module_of(f)}.{fn}" for f, fn, _ in p]
        mods = [module_of(f) for f, _, _ in p]
        return {"calls": len(p) - 1, "modules": len(dict.fromkeys(m for m in mods
                                                                    if "randsvm_dist" in m)),
                "path": steps}

    modules = sorted({module_of(f) for f in raw["modules"] if "randsvm_dist" in f})
    second = sorted({module_of(f) for f in raw.get("modules_second_fit", [])
                     if "randsvm_dist" in f})
    return {"fit_to_libsvm": chain(raw["libsvm"]), "fit_to_scan_kernel": chain(raw["scan"]),
            "modules_in_a_cluster_fit": len(modules), "fit_modules": modules,
            "modules_in_a_second_cluster_fit": len(second), "second_fit_modules": second,
            "data_walk": data_walk(raw.get("walk", []))}


def data_walk(calls: list) -> dict:
    """The data walk's stops (calls receiving the input), the modules they are in, and how
    often each module was entered (a stop called from another module)."""
    stops = [(module_of(f), fn, module_of(caller) if caller else "")
             for f, fn, caller in calls]
    entered: dict[str, int] = {}
    for mod, _, caller in stops:
        entered.setdefault(mod, 0)
        if caller != mod:
            entered[mod] += 1
    return {"stops": len(stops), "modules": len(entered),
            "entered_more_than_once": {m: n for m, n in entered.items() if n > 1},
            "path": [f"{m}.{fn}" for m, fn, _ in stops]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default=str(pathlib.Path(__file__).resolve().parents[1]))
    ap.add_argument("--json", help="write the full result here")
    ap.add_argument("--no-trace", action="store_true", help="static counts only")
    args = ap.parse_args()
    root = pathlib.Path(args.root).resolve()
    out = {"root": str(root), **static_counts(root), **restated(root)}
    if not args.no_trace:
        out.update(traced(root))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    summary = {
        "modules": out["modules"], "lines": out["lines"],
        "modules over 400 lines": len(out["modules_over_400_lines"]),
        "functions over 60 lines or 15 branches": len(
            out["functions_over_60_lines_or_15_branches"]),
        "parameter texts restated": out["parameter_texts_restated"],
        **{f"places: {k}": len(v) for k, v in out["rule_places"].items()},
    }
    if not args.no_trace:
        for key in ("fit_to_libsvm", "fit_to_scan_kernel"):
            c = out[key]
            summary[key.replace("_", " ")] = (f"{c['calls']} calls over {c['modules']} modules"
                                               if c else "not reached")
        summary["modules in a cluster fit"] = out["modules_in_a_cluster_fit"]
        summary["modules whose functions ran in a second cluster fit"] = out[
            "modules_in_a_second_cluster_fit"]
        walk = out["data_walk"]
        summary["data walk"] = (f"{walk['stops']} stops in {walk['modules']} modules; entered "
                                f"more than once: {walk['entered_more_than_once'] or 'none'}")
    for k, v in summary.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
