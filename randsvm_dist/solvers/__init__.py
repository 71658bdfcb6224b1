"""Solvers: the LIBSVM adapter (train on a sample, model arrays, LIBSVM model files)."""

from randsvm_dist.model_files.libsvm_disk import read_libsvm_model, write_libsvm_model
from randsvm_dist.solvers.libsvm_adapter import (
    BinarySolution,
    Solution,
    SolverParams,
    solve_binary,
    solve_libsvm,
)

__all__ = [
    "BinarySolution",
    "Solution",
    "SolverParams",
    "read_libsvm_model",
    "solve_binary",
    "solve_libsvm",
    "write_libsvm_model",
]
