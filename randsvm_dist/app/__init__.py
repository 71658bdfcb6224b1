"""The application (layer 6): grid search, plots, saving and loading any model file, the
imports an embedded worker does at start and the numba kernels it compiles then; the library
calls that the command line and the jobs share."""
