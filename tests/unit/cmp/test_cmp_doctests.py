"""The docstring examples of every stoker.cmp module run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import stoker.cmp

MODULES = ["stoker.cmp"] + [
    f"stoker.cmp.{info.name}" for info in pkgutil.iter_modules(stoker.cmp.__path__)
]


def test_every_module_is_listed() -> None:
    """The module list covers the package's private modules, so none escapes its doctests."""
    assert "stoker.cmp._walk" in MODULES
    assert len(MODULES) >= 10


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    """Each module's doctests pass (modules with examples must have at least one run)."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_public_functions_have_examples() -> None:
    """equal, diff and every option constructor carry at least one doctest example."""
    finder = doctest.DocTestFinder()
    for name in stoker.cmp.__all__:
        obj = getattr(stoker.cmp, name)
        if name == "Option":
            continue
        tests = finder.find(obj, name)
        assert any(test.examples for test in tests), name
