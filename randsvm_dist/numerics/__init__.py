"""Numerics (layer 1): kernels, the fused RBF evaluation, one-vs-one decisions, Platt scaling."""
