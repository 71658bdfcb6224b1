"""``randsvm-dist compile``: every numba kernel of the package into numba's disk cache, once,
so that the first fit after install loads them instead of compiling them."""

from __future__ import annotations

import argparse

from randsvm_dist.cli.options import add_output, emit
from randsvm_dist.exceptions import ParameterError


def cmd_compile(args: argparse.Namespace) -> int:
    """Compile the kernels (``app.compile_kernels``) and report what the check found.

    Returns:
        0 when every kernel then loads from the cache, 1 when some still compiled (numba's
        cache is not writable, say).

    Raises:
        ParameterError: ``--processes`` below 1.
    """
    if args.processes is not None and args.processes < 1:
        raise ParameterError(f"--processes must be at least 1; got {args.processes}")
    from randsvm_dist.app.compile_kernels import compile_kernels

    report = compile_kernels(args.processes)
    result = {"seconds": report.seconds, "processes": report.processes,
              "groups": list(report.groups), "compiled_after": report.compiled_after,
              "cache_dir": report.cache_dir}
    where = report.cache_dir or "each module's __pycache__ (or numba's per-user cache)"
    summary = (f"compiled {len(report.groups)} groups of kernels in {report.seconds:.1f} s "
               f"with {report.processes} processes into {where}")
    if report.compiled_after:
        summary += (f"; {report.compiled_after} kernels still compiled when loaded again: "
                    "numba's cache did not keep them")
    emit(args, result, summary)
    return 1 if report.compiled_after else 0


def register(subparsers) -> None:
    """Add the ``compile`` command."""
    p = subparsers.add_parser(
        "compile", help="compile every numba kernel once, so the first fit loads them",
        description="Compile every numba kernel of randsvm-dist (the exact path's warm SMO "
                    "and RBF sums, each streaming learner's) into numba's disk cache, in "
                    "several processes at once, then load them all again and count any "
                    "that still compile. Run it once after installing: a first fit then "
                    "takes about as long as any later one. Nothing runs on your data.")
    p.add_argument("--processes", type=int, default=None, metavar="N",
                   help="processes compiling at once (default: the machine's cores)")
    add_output(p)
    p.set_defaults(func=cmd_compile)
