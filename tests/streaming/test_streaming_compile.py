"""BudgetedSGD's compiled kernels: one signature per kernel whatever the input's dtypes,
index types and layout (the same model bytes from each), and a first fit that compiles
only the kernels it runs into numba's cache, which a second process loads. The ball
covers (StreamSVM, Blurred Ball SVM): a first fit compiles exactly its declared kernels
(and their helpers, once each), a second process loads those kernels from the cache,
compiles nothing and gives the same model bytes. The other streaming learners (ball
covers, ramp SVM): no new specialisation of any kernel from float32, Fortran-ordered,
read-only or int64-indexed CSR input, and the same model."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons

from randsvm_dist.streaming import BlurredBallSVM, BudgetedSGD, OnlineRampSVM, StreamSVM

ROOT = Path(__file__).resolve().parents[2]
KERNEL_MODULES = ("bsgd._merge", "bsgd._kernels", "bsgd._gradient", "bsgd._pass_csr",
                  "bsgd._pass_dense")
# what a fit on CSR rows with the default golden-section merges compiles
CSR_GOLDEN = {"bsgd._merge._alpha_z_pair", "bsgd._merge.golden_pair", "bsgd._merge.sqdist",
              "bsgd._kernels.maintain_golden", "bsgd._pass_csr.train_sparse"}


def dispatchers(module: str) -> dict:
    """The numba dispatchers defined in ``randsvm_dist.streaming.<module>``, by name."""
    mod = importlib.import_module(f"randsvm_dist.streaming.{module}")
    return {name: obj for name, obj in vars(mod).items()
            if type(obj).__name__ == "CPUDispatcher" and obj.__module__ == mod.__name__}


def input_variants(X: np.ndarray) -> dict:
    """X as float64/float32, C/F order, CSR with int32/int64 indices, and read-only."""
    csr = sp.csr_matrix(X)
    wide = csr.copy()
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    frozen = X.astype(np.float32)  # as validated: reaches the kernels without a copy
    frozen.flags.writeable = False
    frozen_csr = sp.csr_matrix(X.astype(np.float32))
    for part in (frozen_csr.data, frozen_csr.indices, frozen_csr.indptr):
        part.flags.writeable = False
    return {"dense64": X, "dense32": X.astype(np.float32), "fortran": np.asfortranarray(X),
            "readonly": frozen, "csr64": csr, "csr32": csr.astype(np.float32),
            "csr_int64": wide, "csr_readonly": frozen_csr}


def model_bytes(est: BudgetedSGD) -> bytes:
    lr = est.learners_[0]
    return b"".join(np.ascontiguousarray(a).tobytes() for a in (
        lr.model_support_vectors, lr.coef, np.array([lr.intercept]), lr.support_vectors,
        lr.last_coef, lr.counters))


@pytest.mark.parametrize("params", [dict(), dict(merge_size=3),
                                    dict(merge_size=4, merge_method="gradient"),
                                    dict(merge_size=3, epochs=2, average=False,
                                         fit_intercept=True)])
def test_one_signature_per_kernel_and_one_model_whatever_the_input(params):
    X, y = make_moons(400, noise=0.2, random_state=0)
    X = np.hstack([X, np.zeros((len(X), 3))])  # zero columns: sparse rows
    models = {}
    for name, Xv in input_variants(X).items():
        est = BudgetedSGD(budget=15, gamma=1.0, random_state=0, **params).fit(Xv, y)
        half = BudgetedSGD(budget=15, gamma=1.0, random_state=0, **params)
        merged = est.merge(half.fit(Xv[:200], y[:200]))  # the merge's shrink kernels
        models[name] = model_bytes(est) + model_bytes(merged)
    first = models["dense64"]
    assert all(m == first for m in models.values()), [k for k, m in models.items()
                                                      if m != first]
    for module in KERNEL_MODULES:
        for name, disp in dispatchers(module).items():
            inlined = disp.targetoptions.get("inline") == "always"
            assert len(disp.signatures) == (0 if inlined else 1), (module, name,
                                                                   disp.signatures)


OTHER_MODULES = ("meb._balls", "meb._coreset", "meb._dual", "meb._primal", "meb._solver",
                 "_ramp_kernels")


def signature_counts(modules) -> dict:
    """The number of compiled signatures of each numba dispatcher in ``modules``."""
    return {f"{m}.{name}": len(d.signatures) for m in modules
            for name, d in dispatchers(m).items()}


@pytest.mark.parametrize("make", [
    lambda: StreamSVM(random_state=0), lambda: BlurredBallSVM(random_state=0),
    lambda: StreamSVM(kernel="linear", random_state=0),
    lambda: OnlineRampSVM(random_state=0)], ids=["streamsvm", "blurred", "linear", "ramp"])
def test_no_new_specialisation_whatever_the_input(make):
    X, y = make_moons(300, noise=0.2, random_state=0)
    X = np.hstack([X, np.zeros((len(X), 3))])
    variants = input_variants(X)
    dense = make().fit(variants["dense64"], y).decision_function(X)
    sparse = make().fit(variants["csr64"], y).decision_function(X)
    counts = signature_counts(OTHER_MODULES)
    assert sum(counts.values()) > 0
    for name, Xv in variants.items():
        expected = sparse if sp.issparse(Xv) else dense
        np.testing.assert_allclose(make().fit(Xv, y).decision_function(X), expected,
                                   rtol=1e-5, atol=1e-6, err_msg=name)
        assert signature_counts(OTHER_MODULES) == counts, name


FIRST_FIT = textwrap.dedent("""
    import json, sys
    import numpy as np, scipy.sparse as sp
    from randsvm_dist.streaming import BlurredBallSVM, BudgetedSGD, OnlineRampSVM, StreamSVM

    X = sp.random(600, 30, density=0.2, random_state=0, format="csr")
    y = np.random.default_rng(0).integers(0, 2, 600)
    BudgetedSGD(budget=20, random_state=0).fit(X, y)
    out = {}
    for module in sys.argv[1:]:
        name = "randsvm_dist.streaming." + module
        if name not in sys.modules:
            continue
        for attr, obj in vars(sys.modules[name]).items():
            if type(obj).__name__ == "CPUDispatcher" and obj.__module__ == name \\
                    and obj.signatures:
                out[module + "." + attr] = [sum(obj.stats.cache_hits.values()),
                                            sum(obj.stats.cache_misses.values())]
    print(json.dumps(out))
""")


def test_a_first_csr_fit_compiles_only_its_kernels_into_the_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", FIRST_FIT, *KERNEL_MODULES],
                              capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    # no dense pass, no gradient merge: each compiled (a cache miss) once
    assert set(first) == CSR_GOLDEN
    assert all(hits == 0 and misses == 1 for hits, misses in first.values()), first
    # the second process loads every kernel from the cache and compiles nothing
    assert set(second) == CSR_GOLDEN
    assert all(hits == 1 and misses == 0 for hits, misses in second.values()), second


MEB_MODULES = ("meb._balls", "meb._coreset", "meb._dual", "meb._primal", "meb._solver")
# the declared kernels each ball-cover fit (and its predictions) calls
MEB_ENTRY = {
    "streamsvm": {"meb._dual.dual_pass", "meb._dual.dual_flush"},
    "blurred": {"meb._dual.dual_pass", "meb._coreset.coreset_flush"},
    "linear": {"meb._primal.primal_pass_csr", "meb._primal.primal_flush"},
}
# declared kernels that the flush steps also call (the learner calls them when merging)
MEB_NESTED = {
    "streamsvm": {"meb._balls.discard_small", "meb._solver.meb_into"},
    "blurred": {"meb._balls.discard_small"},
    "linear": {"meb._balls.discard_small", "meb._solver.meb_into"},
}

MEB_FIT = textwrap.dedent("""
    import hashlib, json, sys
    import numpy as np, scipy.sparse as sp
    from randsvm_dist.streaming import BlurredBallSVM, StreamSVM

    X = sp.random(300, 12, density=0.3, random_state=0, format="csr")
    y = np.random.default_rng(0).integers(0, 2, 300)
    make = {"streamsvm": lambda: StreamSVM(lookahead=40, random_state=0),
            "blurred": lambda: BlurredBallSVM(lookahead=40, random_state=0),
            "linear": lambda: StreamSVM(kernel="linear", lookahead=40, random_state=0)}
    est = make[sys.argv[1]]().fit(X, y)
    digest = hashlib.sha256(est.decision_function(X).tobytes()).hexdigest()
    out = {}
    for module in sys.argv[2:]:
        name = "randsvm_dist.streaming." + module
        for attr, obj in vars(sys.modules[name]).items():
            if type(obj).__name__ == "CPUDispatcher" and obj.__module__ == name \\
                    and obj.signatures:
                out[module + "." + attr] = [len(obj.signatures),
                                            sum(obj.stats.cache_hits.values()),
                                            sum(obj.stats.cache_misses.values()),
                                            hasattr(obj, "declared_signature")]
    print(json.dumps({"digest": digest, "kernels": out}))
""")


@pytest.mark.parametrize("learner", sorted(MEB_ENTRY))
def test_a_first_ball_cover_fit_compiles_its_declared_kernels_once(learner, tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", MEB_FIT, learner, *MEB_MODULES],
                              capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    kernels = first["kernels"]
    declared = {name for name, (_, _, _, dec) in kernels.items() if dec}
    assert declared == MEB_ENTRY[learner] | MEB_NESTED[learner]
    # each kernel and helper compiled once, for one signature: no second specialisation
    assert all(n == 1 and hits == 0 and misses == 1
               for n, hits, misses, _ in kernels.values()), kernels
    # the second process loads the declared kernels (helpers inside them) and compiles none
    assert set(second["kernels"]) == MEB_ENTRY[learner]
    assert all(n == 1 and hits == 1 and misses == 0
               for n, hits, misses, _ in second["kernels"].values()), second
    assert second["digest"] == first["digest"]
