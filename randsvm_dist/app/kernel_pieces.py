"""A part of a module chain's numba kernels compiled into numba's disk cache in a process
of its own, so that several processes compile one chain at once (``app.warmup``).

A module whose kernels declare their signatures compiles every one of them, in order,
when it is imported, and importing it first imports (and so compiles) the modules it
calls: one process compiles the whole chain alone (the warm SMO's: ~8 s). A part is
compiled by ``python -m randsvm_dist.app.kernel_pieces KERNEL...`` (:func:`run_part`): that
fresh process imports the kernels' modules with ``numba.njit(signature)`` recording the
signature instead of compiling it, then compiles only the named kernels and the declared
kernels they call, callees first, each for its declared signature with numba's cache, and
exits. numba's cache keys (file, function, line, bytecode, signature) are those a real
import uses, so a later import anywhere loads what a part compiled instead of compiling it.
The part's process ends when its parent does (``engine.parent_watch``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: seconds a part may take before its parent stops waiting for it (a hung compile)
PART_TIMEOUT_S = 300.0


@dataclass
class _Declared:
    """A kernel and the signature its decorator declared (not compiled yet)."""

    dispatcher: object
    signature: object
    compiled: bool = False


def _recording_njit(declared: list[_Declared], njit):
    """``njit`` with a declared signature recorded instead of compiled."""

    def recording(*args, **kws):
        if not args or isinstance(args[0], types.FunctionType):
            return njit(*args, **kws)

        def decorate(func):
            disp = njit(**kws)(func)
            declared.append(_Declared(disp, args[0]))
            return disp

        return decorate

    return recording


def _declared_kernels(modules: Sequence[str]) -> dict[str, _Declared]:
    """Imports ``modules`` (none imported in this process before) with their declared
    signatures recorded; returns 'module.function' -> its kernel."""
    import numba

    declared: list[_Declared] = []
    njit = numba.njit
    numba.njit = _recording_njit(declared, njit)
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        numba.njit = njit
    return {f"{d.dispatcher.__module__}.{d.dispatcher.__name__}": d for d in declared}


def _callees(disp, by_id: dict[int, _Declared], seen: set[int]) -> list[_Declared]:
    """The declared kernels ``disp`` calls, directly or through inlined helpers."""
    from numba.core.registry import CPUDispatcher

    out = []
    scope = disp.py_func.__globals__
    for name in disp.py_func.__code__.co_names:
        obj = scope.get(name)
        if not isinstance(obj, CPUDispatcher) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out.extend([by_id[id(obj)]] if id(obj) in by_id else _callees(obj, by_id, seen))
    return out


def compile_part(kernels: Sequence[str]) -> None:
    """Compiles (or loads from numba's cache) ``kernels`` ('package.module.function') and
    every declared kernel they call, callees first, each for its declared signature only;
    in a process that has imported none of their modules.

    Raises:
        KeyError: a name that is no kernel with a declared signature.
    """
    from numba.core import typeinfer

    declared = _declared_kernels(list(dict.fromkeys(k.rsplit(".", 1)[0] for k in kernels)))
    by_id = {id(d.dispatcher): d for d in declared.values()}

    def build(d: _Declared) -> None:
        if d.compiled:
            return
        for callee in _callees(d.dispatcher, by_id, {id(d.dispatcher)}):
            build(callee)
        with typeinfer.register_dispatcher(d.dispatcher):
            d.dispatcher.compile(d.signature)
        d.dispatcher.disable_compile()
        d.compiled = True

    for root in [declared[name] for name in kernels]:
        build(root)


def is_cached(kernel: str) -> bool:
    """True when numba's cache directory for ``kernel``'s ('package.module.function') file
    holds an index of that function (compiled there before; for this source or an older
    one, which numba then compiles again on import). The module is not imported."""
    from numba.core.caching import FunctionCache

    module, function = kernel.rsplit(".", 1)
    path = importlib.util.find_spec(module).origin
    # numba's cache of a function of that file: a stand-in compiled with its file name
    stub = types.FunctionType(compile("def stub(): pass", path, "exec").co_consts[0], {})
    try:
        directory = Path(FunctionCache(stub).cache_path)
    except RuntimeError:  # no cache directory numba can write
        return False
    return any(directory.glob(f"{Path(path).stem}.{function}-*.nbi"))


def run_part(kernels: Sequence[str]) -> None:
    """:func:`compile_part` in a fresh process (this one's environment, so its numba cache
    directory); returns when it is done.

    Raises:
        subprocess.CalledProcessError, subprocess.TimeoutExpired: the part failed.
    """
    subprocess.run([sys.executable, "-m", __name__, str(os.getpid()), *kernels],
                   check=True, capture_output=True, timeout=PART_TIMEOUT_S)


def main(argv: Sequence[str]) -> int:
    """``PARENT_PID KERNEL...``: compile the part, stopping early if the parent ends."""
    from randsvm_dist.engine.parent_watch import watch_parent

    watch_parent(int(argv[0]), lambda: os._exit(0))
    compile_part(argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
