"""The warm-startable SMO: LIBSVM's solver started from a previous solution (numba).

``solve`` is the entry (``solve_warm``); ``loop`` runs the SMO iterations, ``cache`` keeps
kernel rows, ``kernels`` computes them, ``duals`` holds each problem kind's dual, ``types``
the kernels' numba signatures. Importing this package imports none of them: each kernel
module compiles (or loads from numba's cache) its kernels when imported.
"""
