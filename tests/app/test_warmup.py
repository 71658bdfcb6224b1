"""``app.warmup``: the warm-up compiles the specialisations the exact path's kernels use,
so the fit's own calls on other data compile nothing new; the groups split across
processes never lose one; a part compiled in a process of its own (``app.kernel_pieces``)
is what a later import loads instead of compiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CHECK = textwrap.dedent("""
    import json, sys
    import numpy as np, scipy.sparse as sp
    import libsvm.svm
    from randsvm_dist.app.warmup import warm
    from randsvm_dist.numerics import rbf_fused
    from randsvm_dist.numerics.kernels import Kernel, decision_values
    from randsvm_dist.solvers.warm_smo import solve as warm_smo
    from randsvm_dist.solvers.params import SolverParams
    from randsvm_dist.solvers.libsvm_adapter import solve_libsvm

    def signatures():
        out = {}
        for mod in (rbf_fused, warm_smo, libsvm.svm):
            for name, obj in vars(mod).items():
                if type(obj).__name__ == "CPUDispatcher":
                    out[f"{mod.__name__}.{name}"] = sorted(map(str, obj.signatures))
        return out

    warm()
    after_warm = signatures()
    rng = np.random.default_rng(1)
    for d in (3, 11):
        X = rng.standard_normal((300, d)).astype(np.float32)
        y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
        params = SolverParams(2.0, Kernel("rbf", 0.3))
        sol = solve_libsvm(sp.csr_matrix(X), y, params)
        alpha0 = np.zeros(len(y))
        alpha0[sol.support] = np.abs(sol.dual_coef)
        warm_smo.solve_warm(X, y, params, alpha0)
        warm_smo.solve_warm(X, y, params, alpha0, row_C=np.full(len(y), 2.0))
        for rows in (X, sp.csr_matrix(X)):
            decision_values(rows, rows[sol.support], sol.dual_coef, 0.0, params.kernel)
    json.dump({"warm": after_warm, "fit": signatures()}, sys.stdout)
""")


def test_warm_covers_the_exact_kernels_signatures():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    warm, fit = got["warm"], got["fit"]
    for kernel in ("randsvm_dist.numerics.rbf_fused.rbf_accumulate",
                   "randsvm_dist.numerics.rbf_fused.rbf_direct_accumulate",
                   "libsvm.svm.csr_to_problem_jit"):
        assert warm[kernel], f"{kernel} not warmed"
    assert any(warm[k] for k in warm if k.startswith("randsvm_dist.solvers.warm_smo.solve."))
    assert fit == warm  # the calls on other data compiled no new specialisation


def test_warm_runs_every_group_once_per_process(tmp_path, monkeypatch):
    import fcntl
    import threading

    from randsvm_dist.app import warmup

    monkeypatch.setattr(warmup.tempfile, "gettempdir", lambda: str(tmp_path))
    ran = []
    groups = {name: warmup.Group(lambda n=name: ran.append(n)) for name in ("a", "b", "c")}
    held = warmup._lock_dir() / "b.lock"
    with open(held, "a") as fh:  # another process holds group b: it is run last, after
        fcntl.flock(fh, fcntl.LOCK_EX)   # the holder lets go
        t = threading.Thread(target=warmup.warm, args=(groups,))
        t.start()
        t.join(2.0)
        assert ran == ["a", "c"] and t.is_alive()
    t.join(10.0)
    assert ran == ["a", "c", "b"] and not t.is_alive()


def test_a_group_left_to_another_process_holds_what_waits_for_it(tmp_path, monkeypatch):
    """A cache-only group another process runs is not run again; a group ``after`` it, and
    a thread importing a module it ``holds``, wait until that process is done."""
    import fcntl
    import threading
    import time

    from randsvm_dist.app import warmup

    monkeypatch.setattr(warmup.tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / "held_by_part.py").write_text("import time\nLOADED_AT = time.monotonic()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = []
    groups = {"part": warmup.Group(lambda: ran.append("part"), loads=False,
                                   holds=("held_by_part",)),
              "other": warmup.Group(lambda: ran.append("other")),
              "final": warmup.Group(lambda: ran.append("final"), after=("part",))}
    imported = []
    with open(warmup._lock_dir() / "part.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        t = threading.Thread(target=warmup.warm, args=(groups,))
        t.start()
        time.sleep(0.5)  # the warm-up has installed its hold by now
        task = threading.Thread(target=lambda: imported.append(
            __import__("held_by_part").LOADED_AT))
        task.start()
        t.join(1.0)
        task.join(1.0)
        assert ran == ["other"] and t.is_alive() and not imported
        released = time.monotonic()
    t.join(10.0)
    task.join(10.0)
    assert ran == ["other", "final"]  # the part is the other process's: not run here
    assert imported and imported[0] >= released


PART_THEN_IMPORT = textwrap.dedent("""
    import json, sys, time
    from numba.core import event
    from randsvm_dist.app.kernel_pieces import is_cached, run_part

    K = "randsvm_dist.solvers.warm_smo.kernels."
    before = is_cached(K + "kernel_of_dots")
    run_part([K + "kernel_of_dots"])  # and exp_inplace, which it calls
    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            disp = ev.data.get("dispatcher")
            if getattr(disp, "__module__", "").startswith("randsvm_dist"):
                compiled.append(disp.__name__)

    event.register("numba:compile", Listener())
    from randsvm_dist.solvers.warm_smo import kernels as wk
    json.dump({"before": before, "after": is_cached(K + "kernel_of_dots"),
               "compiled": compiled,
               "signatures": {n: len(getattr(wk, n).signatures)
                              for n in ("exp_inplace", "kernel_of_dots", "qrow")}},
              sys.stdout)
""")


def test_a_part_compiled_elsewhere_is_loaded_by_the_real_import(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    proc = subprocess.run([sys.executable, "-c", PART_THEN_IMPORT], capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert not got["before"] and got["after"]
    assert "qrow" in got["compiled"]  # not in the part: compiled by the import
    assert "kernel_of_dots" not in got["compiled"] and "exp_inplace" not in got["compiled"]
    assert got["signatures"] == {"exp_inplace": 1, "kernel_of_dots": 1, "qrow": 1}


def test_the_parts_name_declared_kernels():
    """Every kernel a warm-up part names has a declared signature (recorded, not compiled:
    a renamed kernel would leave its part compiling nothing)."""
    check = textwrap.dedent("""
        import json, sys
        from randsvm_dist.app import kernel_pieces
        from randsvm_dist.app.warmup import EXACT_GROUPS
        names = [k for g in EXACT_GROUPS.values() for k in getattr(g.run, "kernels", ())]
        declared = kernel_pieces._declared_kernels(sorted({k.rsplit(".", 1)[0] for k in names}))
        json.dump({"names": names, "missing": [k for k in names if k not in declared]},
                  sys.stdout)
    """)
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert len(got["names"]) >= 6 and not got["missing"]

