"""Solvers: one solve of a working set and its arrays. ``params`` (``SolverParams``),
``solution`` (``BinarySolution``), ``dual_objective``, ``threads`` (a solve's threads),
``libsvm_adapter`` (the LIBSVM call), ``weighted`` (per-row boxes), ``warm_smo/`` (the
warm-startable SMO), ``onedal_backend`` / ``onedal_runtime`` / ``onedal_auto`` (oneDAL)."""
