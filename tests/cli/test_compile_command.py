"""`randsvm-dist compile`: every numba kernel into numba's cache, so a first fit compiles none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

BESIDE_PYTHON = Path(sys.executable).with_name("randsvm-dist")
EXE = str(BESIDE_PYTHON) if BESIDE_PYTHON.exists() else shutil.which("randsvm-dist") or ""

# fits a user could run first, each in this fresh process; prints the package's kernels
# numba compiled meanwhile
FITS = textwrap.dedent("""
    import numpy as np
    import scipy.sparse as sp
    from randsvm_dist import RandSVMClassifier, RandSVMRegressor
    from randsvm_dist.app.compile_kernels import CompileCounter
    from randsvm_dist.streaming import LEARNERS
    count = CompileCounter()
    count.listen()
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 12)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    for name, learner in LEARNERS.items():
        learner(random_state=0).fit(sp.csr_matrix(np.where(X > 0.5, X, 0)), y)
        learner(random_state=0).fit(X.astype(np.float64), rng.integers(0, 3, len(y)))
    RandSVMClassifier(C=10, gamma=0.1, random_state=0).fit(X, y)
    RandSVMRegressor(C=10, gamma=0.1, random_state=0).fit(X, X[:, 0] - X[:, 2])
    print(count.kernels)
""")


def _env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RANDSVM_DIST_SCHEDULER"}
    env["NUMBA_CACHE_DIR"] = str(cache)
    return env


def test_compile_fills_the_cache_so_that_first_fits_compile_nothing(tmp_path):
    assert EXE, "the randsvm-dist console script is not installed"
    env = _env(tmp_path / "numba")
    done = subprocess.run([EXE, "compile", "--json"], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["compiled_after"] == 0 and report["cache_dir"] == str(tmp_path / "numba")
    assert {"warm_smo", "rbf_fused", "stream_bsgd", "stream_streamsvm", "stream_blurred_ball",
            "stream_ramp"} <= set(report["groups"])
    fits = subprocess.run([sys.executable, "-c", FITS], env=env,
                          capture_output=True, text=True, timeout=600)
    assert fits.returncode == 0, fits.stderr[-2000:]
    assert fits.stdout.strip().splitlines()[-1] == "0"


def test_bad_processes_is_one_line_and_exit_2(tmp_path):
    assert EXE, "the randsvm-dist console script is not installed"
    done = subprocess.run([EXE, "compile", "--processes", "0"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == ("randsvm-dist: error: --processes must be at least 1; "
                                   "got 0")
    assert not (tmp_path / "numba").exists()
