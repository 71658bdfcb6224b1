"""The RandSVM sampling driver: sample, solve with LIBSVM, scan for violators, repeat."""
