"""The first fit after install: a fresh process with an empty numba cache fits and predicts
on the exact path, in this process and on a 2 x 1 local cluster, and every kernel of the
warm SMO and of the fused RBF sums is compiled for its one declared signature only (no
literal specialisations, whoever compiles first: the workers' warm-up or the fit; the
helpers inlined into their callers never on their own); also when the workers' warm-up
compiles the warm SMO in parts (``app.kernel_pieces``: no fit in the client first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FIRST_FIT = textwrap.dedent("""
    import json, sys
    from distributed import Client
    from randsvm_dist import RandSVMClassifier
    from randsvm_dist.data import make_arrays
    from randsvm_dist.engine.launcher import launch, wait_for_workers

    MODULES = ("randsvm_dist.solvers.warm_smo.kernels", "randsvm_dist.solvers.warm_smo.cache",
               "randsvm_dist.solvers.warm_smo.loop", "randsvm_dist.numerics.rbf_fused")

    def signature_counts():
        import importlib
        out = {}
        for name in MODULES:
            mod = importlib.import_module(name)
            for attr, obj in vars(mod).items():
                if type(obj).__name__ == "CPUDispatcher" and obj.__module__ == name:
                    inlined = obj.targetoptions.get("inline") == "always"
                    out[f"{name}.{attr}"] = [len(obj.signatures), inlined]
        return out

    X, y = make_arrays("checkerboard", 3000, 1)
    result = {"local_score": 1.0, "local": {}}
    if sys.argv[1] == "local-first":  # else the workers' warm-up compiles in parts
        local = RandSVMClassifier(C=10, gamma=1.0, random_state=0).fit(X, y)
        result = {"local_score": local.score(X, y), "local": signature_counts()}
    procs = launch(n_workers=2)
    try:
        with Client(procs.address, set_as_default=False, timeout="60s") as client:
            wait_for_workers(client, 2)
            est = RandSVMClassifier(C=10, gamma=1.0, random_state=0, route="sample",
                                    sample_size=800, client=client).fit(X, y)
            result["cluster_score"] = est.score(X, y)
            result["warm_solves"] = sum(bool(h.get("warm_start")) for h in est.history_)
            result["workers"] = list(client.run(signature_counts).values())
    finally:
        procs.close()
    print(json.dumps(result))
""")

# the kernels that must be there, each compiled once (the parallel loops included)
KEY_KERNELS = ("solvers.warm_smo.loop.run_smo", "solvers.warm_smo.kernels.qrow",
               "solvers.warm_smo.kernels._qfill_parallel",
               "solvers.warm_smo.loop._scan_parallel",
               "numerics.rbf_fused.rbf_accumulate", "numerics.rbf_fused.rbf_direct_accumulate")


@pytest.mark.parametrize("order", ["local-first", "cluster-first"])
def test_a_fresh_process_with_an_empty_cache_fits_on_one_signature_per_kernel(tmp_path,
                                                                              order):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", FIRST_FIT, order], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["local_score"] > 0.95 and got["cluster_score"] > 0.95
    assert got["warm_solves"] > 0  # the warm SMO ran on the workers
    for counts in ([got["local"]] if order == "local-first" else []) + got["workers"]:
        for key in KEY_KERNELS:
            assert f"randsvm_dist.{key}" in counts
        # one signature each; the helpers inlined into their callers are never compiled
        wrong = {k: n for k, (n, inlined) in counts.items() if n != (0 if inlined else 1)}
        assert not wrong, wrong
    assert len(got["workers"]) == 2
    assert any(Path(tmp_path / "numba-cache").rglob("*.nbi"))  # compiled into the new cache
