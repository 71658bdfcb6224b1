"""The ball-cover kernels' declared signatures (``_solver``, ``_balls``,
``_primal``, ``_dual``, ``_coreset``): their numba types, :func:`kernel`
that declares one and :func:`compiled` that compiles it on first use.

Each kernel the learner calls declares its one signature and is compiled for it on its
first use, not when its module is imported (numba's ``cache=True`` keeps the machine code;
a warm cache only loads it), after which it compiles nothing else: float32 or float64,
dense or CSR rows run the same machine code, and a fit compiles only the kernels it runs
(their helpers are compiled inside them, once each). The learner
(:mod:`._cover`) hands the passes C-contiguous read-only float32 rows, int64 indptr
and int32 indices, and float64 labels and 1/weights; the cover's state is float64. A pass
returns to the learner when its lookahead buffer fills, and the learner calls the one
flush step its cover needs, so a StreamSVM fit never compiles the Blurred Ball step nor
the other way round. The passes allocate nothing (their scratch comes from the learner),
and the kernels copy rows element by element: numba's broadcasting checks alone compiled
for over a second. Importing this module compiles nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numba as nb
from numba import njit

F8 = nb.float64
I8 = nb.int64
B1 = nb.boolean
F8_1D = nb.float64[::1]
F8_2D = nb.float64[:, ::1]
#: read-only inputs: rows (dense float32, CSR float32 values with int64 indptr and int32
#: indices), labels and 1/weights (float64)
F4_1D_IN = nb.types.Array(nb.float32, 1, "C", readonly=True)
F4_2D_IN = nb.types.Array(nb.float32, 2, "C", readonly=True)
F8_1D_IN = nb.types.Array(nb.float64, 1, "C", readonly=True)
I8_1D_IN = nb.types.Array(nb.int64, 1, "C", readonly=True)
I4_1D_IN = nb.types.Array(nb.int32, 1, "C", readonly=True)

#: a cover's balls: centre rows (W or A), bb, Q, ee, rr and the state vector st
BALLS = (F8_2D, F8_1D, F8_1D, F8_1D, F8_1D, F8_1D)
#: the kernel: id (``_balls.KERNEL_IDS``), gamma, degree, coef0
KERNEL = (I8, F8, F8, F8)


def kernel(signature) -> Callable:
    """Decorator: ``njit(cache=True, no_cfunc_wrapper=True)`` declaring ``signature`` (a
    numba signature, or a tuple of argument types), compiled by :func:`compiled`.

    Returns:
        a decorator returning the numba dispatcher (with ``declared_signature`` set).
    """
    def declare(fn: Callable):
        disp = njit(cache=True, no_cfunc_wrapper=True)(fn)
        disp.declared_signature = signature
        return disp

    return declare


def compiled(disp):
    """``disp`` (a :func:`kernel`) with its declared signature compiled or loaded from
    numba's cache, and no other compilable: an argument of another type raises TypeError.

    Returns:
        the dispatcher.
    """
    if getattr(disp, "_can_compile", False):  # not with NUMBA_DISABLE_JIT: a function
        disp.compile(disp.declared_signature)
        disp.disable_compile()
    return disp
