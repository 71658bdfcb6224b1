"""Distributed work beside the exact driver (layer 4): streaming learners per partition and
their tree merge, any fitted model applied on the workers, scaling fitted on the workers."""
