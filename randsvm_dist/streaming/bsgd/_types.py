"""The numba types of BudgetedSGD's kernel signatures (``_merge``, ``_kernels``)
and the constants the kernels and the learner share.

Each kernel declares its one signature and is compiled for it when its module is imported
(numba's ``cache=True`` keeps the machine code; a warm cache only loads it), so a fit on
float32 or float64, dense or CSR rows with int32 or int64 indices runs the same machine
code: the learner hands the kernels C-contiguous float32 rows, int64 CSR indices and
float64 labels and weights. Arrays the kernels only read are declared read-only (a
writable array converts to one; a read-only input needs no copy). The kernels allocate
nothing (scratch arrays come from the caller) and only the maintenance steps, which a
pass calls through their address (:data:`MAINTAIN_FN`), get numba's C-ABI wrapper
(``no_cfunc_wrapper`` on the others). Importing this module compiles nothing: the
learner imports the kernels on its first fit.
"""

from __future__ import annotations

import numba as nb

F8 = nb.float64
I8 = nb.int64
B1 = nb.boolean
F8_1D = nb.float64[::1]
F8_2D = nb.float64[:, ::1]
I8_1D = nb.int64[::1]
#: read-only inputs: the rows (dense float32 or CSR float32 values with int64 indptr and
#: indices), labels and weights (float64), and the row order (int64)
F4_1D_IN = nb.types.Array(nb.float32, 1, "C", readonly=True)
F4_2D_IN = nb.types.Array(nb.float32, 2, "C", readonly=True)
F8_1D_IN = nb.types.Array(nb.float64, 1, "C", readonly=True)
I8_1D_IN = nb.types.Array(nb.int64, 1, "C", readonly=True)

#: a budget maintenance step: (sv, sqn, beta, n_sv, gamma, m, counters, *SCRATCH) -> new
#: n_sv
SCRATCH = (F8_1D, F8_1D, I8_1D)
MAINTAIN = I8(F8_2D, F8_1D, F8_1D, I8, F8, I8, I8_1D, *SCRATCH)
#: a maintenance step as a pass's argument: called through its address, so a pass's
#: machine code does not embed (and its compilation does not optimise again) the step's
MAINTAIN_FN = nb.types.FunctionType(MAINTAIN)
#: a training pass's arguments after its rows: labels, weights, row order, the budget
#: (sv, sqn, beta, n_sv), t, lambda, bias, fit_intercept, gamma, budget, merge_size,
#: the maintenance step (MAINTAIN_FN), counters, its dots with the budget and the
#: step's SCRATCH (scratch: :func:`._compiled.scratch`); it returns (n_sv, t, bias)
PASS_TAIL = (F8_1D_IN, F8_1D_IN, I8_1D_IN, F8_2D, F8_1D, F8_1D, I8, I8, F8, F8, B1, F8, I8,
             I8, MAINTAIN_FN, I8_1D, F8_1D, *SCRATCH)
PASSED = nb.types.Tuple((I8, I8, F8))

MERGE_GOLDEN = 0
MERGE_GRADIENT = 1

# indices of the int64 counters array
C_KERNEL_EVALS = 0
C_MAINTENANCE = 1  # budget maintenance events
C_BINARY_MERGES = 2  # points removed by merging (one per binary merge / per merged partner)
C_VIOLATIONS = 3  # margin violations (SVs added)
N_COUNTERS = 4
