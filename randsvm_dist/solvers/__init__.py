"""Solvers: the LIBSVM adapter (one solve of a working set, its arrays), the warm SMO,
oneDAL and per-row-box backends."""

from randsvm_dist.solvers.libsvm_adapter import (
    BinarySolution,
    Solution,
    SolverParams,
    solve_binary,
    solve_libsvm,
)

__all__ = ["BinarySolution", "Solution", "SolverParams", "solve_binary", "solve_libsvm"]
