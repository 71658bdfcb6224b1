"""The numba types of the warm SMO's kernel signatures (``kernels``,
``cache``, ``loop``).

Each kernel declares its one signature and is compiled for it when its module is imported
(numba's ``cache=True`` keeps the machine code; a warm cache only loads it). A dispatcher
compiled lazily also compiles a specialisation for every literal argument type inference
meets on the way (``qrow(r, 0, ...)``, ``i = -1``): 6-7 of each kernel row function and of
its parallel loop, each a full compile. With one declared signature a call with a literal
converts it instead. Arrays are C-contiguous and writable (the solver's own copies).
"""

from __future__ import annotations

import numba as nb

F8 = nb.float64
I8 = nb.int64
F8_1D = nb.float64[::1]
F8_2D = nb.float64[:, ::1]
F4_1D = nb.float32[::1]
I8_1D = nb.int64[::1]
I8_2D = nb.int64[:, ::1]
B1 = nb.boolean
VOID = nb.void
#: ``kernels.qrow``'s twins: (perm, XR, yr, sqr)
TWINS = nb.types.Tuple((I8_1D, F8_2D, F8_1D, F8_1D))
