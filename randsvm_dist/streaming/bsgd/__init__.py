"""BudgetedSGD: kernel Pegasos on a budget with multi-merge maintenance.

``budgeted_sgd`` is the learner (``BudgetedSGD``), ``binary`` one binary problem; the
private modules hold its numba kernels, each imported on first use (``_compiled``).
"""
