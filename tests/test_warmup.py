"""``app.warmup``: the warm-up compiles the specialisations the exact path's kernels use,
so the fit's own calls on other data compile nothing new; the groups split across
processes never lose one."""

from __future__ import annotations

import json
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
    from randsvm_dist.solvers import warm_smo
    from randsvm_dist.solvers.libsvm_adapter import SolverParams, solve_binary

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
        sol = solve_binary(sp.csr_matrix(X), y, params)
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
    assert any(warm[k] for k in warm if k.startswith("randsvm_dist.solvers.warm_smo."))
    assert fit == warm  # the calls on other data compiled no new specialisation


def test_warm_runs_every_group_once_per_process(tmp_path, monkeypatch):
    from randsvm_dist.app import warmup

    monkeypatch.setattr(warmup.tempfile, "gettempdir", lambda: str(tmp_path))
    ran = []
    groups = {name: (lambda n=name: ran.append(n)) for name in ("a", "b", "c")}
    held = warmup._lock_dir() / "b.lock"
    import fcntl

    with open(held, "a") as fh:  # another process holds group b: it is run last, after
        fcntl.flock(fh, fcntl.LOCK_EX)   # the holder lets go
        import threading

        t = threading.Thread(target=warmup.warm, args=(groups,))
        t.start()
        t.join(2.0)
        assert ran == ["a", "c"] and t.is_alive()
    t.join(10.0)
    assert ran == ["a", "c", "b"] and not t.is_alive()
