"""Warnings raised deep inside stoker name the user's line, however deep the chain of calls."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

from stoker._warn import caller_stacklevel, warn_at_caller
from stoker.data import DataLoader


def _stoker_chain(depth: int) -> types.ModuleType:
    """A module named as one of stoker's whose ``outer()`` calls ``depth`` of its functions."""
    module = types.ModuleType("stoker._fake_chain")
    source = "from stoker._warn import warn_at_caller, caller_stacklevel\n"
    source += "def f0():\n    warn_at_caller('deep', RuntimeWarning)\n"
    source += "    return caller_stacklevel()\n"
    for level in range(1, depth):
        source += f"def f{level}():\n    return f{level - 1}()\n"
    source += f"def outer():\n    return f{depth - 1}()\n"
    exec(compile(source, "<stoker chain>", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("depth", [1, 3, 7])
def test_the_warning_names_the_first_frame_outside_stoker(depth: int) -> None:
    module = _stoker_chain(depth)
    sys.modules[module.__name__] = module
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            level = module.outer()
    finally:
        del sys.modules[module.__name__]
    assert [str(w.message) for w in caught] == ["deep"]
    assert caught[0].filename == __file__
    assert caught[0].lineno == line
    assert level == depth + 2  # f0 .. f(depth-1) and outer are stoker's, then this test


def test_called_from_outside_stoker_it_names_the_caller_itself() -> None:
    assert caller_stacklevel() == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_at_caller("here")
    assert caught[0].filename == __file__


def test_the_loaders_pin_warnings_name_the_line_that_starts_the_epoch() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        next(iter(DataLoader(list(range(4)), pin_memory=True, pin_memory_device="cuda")))
    pin = [w for w in caught if "pin_memory" in str(w.message)]
    assert pin, [str(w.message) for w in caught]
    assert all((w.filename, w.lineno) == (__file__, line) for w in pin)
