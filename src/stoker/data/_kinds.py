"""Exceptions of two kinds at once: the type stoker's rules call for, and the one torch raises.

Where torch raises, say, ``AssertionError`` for a bad argument or ``RuntimeError`` for a bad
value found while iterating, stoker raises an exception that is both that and the proper kind
(``ValueError``, ``TypeError``), so code written against either keeps catching it. Each class
names its two kinds; stoker.data's modules raise these instead of defining their own.
"""

from __future__ import annotations

import pickle

__all__ = [
    "TypeAssertionError",
    "TypeAttributeError",
    "TypeNotImplementedError",
    "TypePicklingError",
    "TypeValueError",
    "ValueAssertionError",
    "ValueIndexError",
    "ValueRuntimeError",
]


class TypeValueError(TypeError, ValueError):
    """A wrong type where torch raises ValueError."""


class TypeAssertionError(TypeError, AssertionError):
    """A wrong type where torch raises AssertionError."""


class TypeAttributeError(TypeError, AttributeError):
    """An object that cannot be pickled (a local function).

    Raised where torch re-raises pickle's AttributeError.
    """


class TypePicklingError(TypeError, pickle.PicklingError):
    """An object that cannot be pickled (a lambda), where torch re-raises pickle's error."""


class TypeNotImplementedError(TypeError, NotImplementedError):
    """Something that cannot be done to an object (pickling an iterator).

    Raised where torch raises NotImplementedError.
    """


class ValueAssertionError(ValueError, AssertionError):
    """A bad value where torch raises AssertionError."""


class ValueIndexError(ValueError, IndexError):
    """A bad value where torch raises IndexError."""


class ValueRuntimeError(ValueError, RuntimeError):
    """A bad value (or state) where torch raises RuntimeError."""
