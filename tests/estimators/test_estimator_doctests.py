"""The Examples in the three estimators' docstrings run as doctests (in-process fits)."""

from __future__ import annotations

import doctest

import pytest

from randsvm_dist import RandSVMClassifier, RandSVMOneClass, RandSVMRegressor


@pytest.mark.parametrize("cls", [RandSVMClassifier, RandSVMRegressor, RandSVMOneClass])
def test_docstring_examples(cls):
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(cls) if t.examples]
    assert tests, f"{cls.__name__} has no Examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
