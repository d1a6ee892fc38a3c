"""The option constructors of ``equal`` and ``diff``, each checking its own arguments.

How the options combine, and the checks on the set as a whole, are in :mod:`stoker.cmp._settings`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stoker.cmp._path import Step, parse_pattern

__all__ = [
    "ApproxOption",
    "IgnoreOption",
    "NanEqualOption",
    "Option",
    "SortOption",
    "TypeOption",
    "approx",
    "comparer",
    "ignore",
    "nan_equal",
    "sort_sequences",
    "transformer",
]

_DEFAULT_REL = 1e-9


class Option:
    """An option of :func:`stoker.cmp.equal` and :func:`stoker.cmp.diff`, made by a constructor."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class ApproxOption(Option):
    """What ``approx()`` makes: the two tolerances."""

    rel: float
    abs: float

    def __repr__(self) -> str:
        return f"approx(rel={self.rel!r}, abs={self.abs!r})"


@dataclass(frozen=True, eq=False)
class NanEqualOption(Option):
    """What ``nan_equal()`` makes."""

    def __repr__(self) -> str:
        return "nan_equal()"


@dataclass(frozen=True, eq=False)
class IgnoreOption(Option):
    """What ``ignore()`` makes: path patterns, types and predicates."""

    patterns: tuple[tuple[Step, ...], ...]
    types: tuple[type, ...]
    predicates: tuple[Callable[[str], object], ...]
    spelled: str

    def __repr__(self) -> str:
        return f"ignore({self.spelled})"


@dataclass(frozen=True, eq=False)
class SortOption(Option):
    """What ``sort_sequences()`` makes: the sort key."""

    key: Callable[[Any], Any] | None

    def __repr__(self) -> str:
        return f"sort_sequences(key={self.key!r})"


@dataclass(frozen=True, eq=False)
class TypeOption(Option):
    """A comparer (``transform`` False) or a transformer, bound to one or more types."""

    types: tuple[type, ...]
    fn: Callable[..., Any]
    transform: bool
    name: str

    def __repr__(self) -> str:
        kind = "transformer" if self.transform else "comparer"
        names = ", ".join(t.__qualname__ for t in self.types)
        return f"{kind}(({names}), {self.name})"


def _tolerance(name: str, value: object) -> float:
    """Check one ``approx`` tolerance: a finite, non-negative real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"approx {name} must be a real number, got {value!r} of type {type(value).__name__}; "
            f"pass a float such as {name}=1e-6"
        )
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(
            f"approx {name} must be finite and >= 0, got {value!r}; pass a small positive tolerance"
        )
    return number


def approx(*, rel: float = _DEFAULT_REL, abs: float = 0.0) -> Option:
    """Compare floats, complex numbers and floating-point arrays within a tolerance.

    Two numbers ``x`` and ``y`` are equal when ``|x - y| <= max(rel * max(|x|, |y|), abs)``, the
    rule of :func:`math.isclose`; infinities equal only themselves and NaN nothing (see
    :func:`nan_equal`). Ints are still compared exactly.

    Args:
        rel: relative tolerance, finite and ``>= 0``.
        abs: absolute tolerance, finite and ``>= 0``; needed to compare against zero.

    Raises:
        TypeError: if a tolerance is not a real number.
        ValueError: if a tolerance is negative or not finite, or both are zero.

    >>> from stoker.cmp import equal
    >>> equal(0.1 + 0.2, 0.3), equal(0.1 + 0.2, 0.3, approx())
    (False, True)
    >>> equal([1.0, 2.0], [1.0, 2.1], approx(abs=0.2))
    True
    """
    rel_value = _tolerance("rel", rel)
    abs_value = _tolerance("abs", abs)
    if rel_value == 0 and abs_value == 0:
        raise ValueError(
            "approx needs a tolerance, got rel=0 and abs=0; give rel or abs a positive value, "
            "or leave approx out for exact comparison"
        )
    return ApproxOption(rel_value, abs_value)


def nan_equal() -> Option:
    """Treat NaN as equal to NaN, in floats, complex numbers and arrays.

    >>> from stoker.cmp import equal
    >>> nan = float("nan")
    >>> equal([nan], [nan]), equal([nan], [nan], nan_equal())
    (False, True)
    """
    return NanEqualOption()


def ignore(*where: str | type | Callable[[str], object]) -> Option:
    """Leave values out of the comparison: by path pattern, by type, or by a predicate on the path.

    Args:
        *where: each one of
            a path pattern such as ``".timestamp"``, ``'[0]["id"]'`` or ``"[*].id"`` (see the
            path syntax in the package documentation); a type, whose instances on either side are
            ignored; or a callable that takes the path string and returns true to ignore it.

    Raises:
        TypeError: if nothing is given, or an item is not a string, a type or a callable.
        ValueError: if a path pattern is malformed.

    >>> from dataclasses import dataclass
    >>> from stoker.cmp import equal
    >>> @dataclass
    ... class Run:
    ...     name: str
    ...     seconds: float
    >>> equal(Run("a", 1.5), Run("a", 2.5), ignore(".seconds"))
    True
    >>> equal({"a": 1, "tmp": 2}, {"a": 1}, ignore(lambda path: path.startswith('["tmp')))
    True
    """
    if not where:
        raise TypeError(
            "ignore needs at least one path, type or predicate, got none; e.g. ignore('.field')"
        )
    patterns: list[tuple[Step, ...]] = []
    types: list[type] = []
    predicates: list[Callable[[str], object]] = []
    for item in where:
        if isinstance(item, str):
            patterns.append(parse_pattern(item))
        elif isinstance(item, type):
            types.append(item)
        elif callable(item):
            predicates.append(item)
        else:
            raise TypeError(
                f"ignore arguments must be path strings, types or callables, got {item!r} of type "
                f"{type(item).__name__}; write a path such as '.field' or '[0]'"
            )
    spelled = ", ".join(repr(item) if isinstance(item, str) else _name(item) for item in where)
    return IgnoreOption(tuple(patterns), tuple(types), tuple(predicates), spelled)


def sort_sequences(key: Callable[[Any], Any] | None = None) -> Option:
    """Sort lists and tuples (not namedtuples) before comparing them, so order does not matter.

    Index paths (for :func:`ignore` and in reports) then refer to positions after sorting.

    Args:
        key: a one-argument function giving the sort key, as for :func:`sorted`; ``None`` sorts
            the elements themselves.

    Raises:
        TypeError: if ``key`` is neither ``None`` nor callable; at comparison time, if the
            elements cannot be ordered (pass a ``key``).

    >>> from stoker.cmp import equal
    >>> equal([3, 1, 2], [1, 2, 3], sort_sequences())
    True
    >>> equal([{"n": 2}, {"n": 1}], [{"n": 1}, {"n": 2}], sort_sequences(key=lambda d: d["n"]))
    True
    """
    if key is not None and not callable(key):
        raise TypeError(
            f"sort_sequences key must be a callable or None, got {key!r}; pass e.g. key=str"
        )
    return SortOption(key)


def _check_types(kind: str, types: object) -> tuple[type, ...]:
    """Check the ``type`` argument of a comparer or transformer: a type or a tuple of types."""
    found = types if isinstance(types, tuple) else (types,)
    if not found or not all(isinstance(t, type) for t in found):
        raise TypeError(
            f"{kind} type must be a type or a non-empty tuple of types, got {types!r}; "
            f"pass e.g. {kind}(float, ...)"
        )
    return tuple(t for t in found if isinstance(t, type))


def _name(fn: object) -> str:
    """Return the name a report shows for a function: its ``__name__``, ``λ`` for a lambda."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return type(fn).__name__
    return "λ" if name == "<lambda>" else name


def comparer(type: type | tuple[type, ...], fn: Callable[[Any, Any], bool]) -> Option:
    """Compare instances of ``type`` with ``fn(x, y)`` instead of the built-in rules.

    The comparer applies when both values are instances of ``type``; ``fn`` must return a
    ``bool`` and should be symmetric.

    Raises:
        TypeError: if ``type`` is not a type or tuple of types, or ``fn`` is not callable; at
            comparison time, if ``fn`` returns something other than a bool.

    >>> from stoker.cmp import equal
    >>> same_word = comparer(str, lambda a, b: a.lower() == b.lower())
    >>> equal(["Hello", "World"], ["hello", "world"], same_word)
    True
    """
    types = _check_types("comparer", type)
    if not callable(fn):
        raise TypeError(f"comparer fn must be callable, got {fn!r}; pass a function of (x, y)")
    return TypeOption(types, fn, False, _name(fn))


def transformer(
    type: type | tuple[type, ...],
    fn: Callable[[Any], Any],
    name: str | None = None,
) -> Option:
    """Compare instances of ``type`` by comparing ``fn(x)`` with ``fn(y)``.

    The results are compared with all the options, except that this transformer is not applied
    again anywhere inside its own results (so a transformer returning its own type cannot recurse
    forever). The report shows the transformed values inside ``Inverse(name, ...)``.

    Args:
        type: the type, or tuple of types, the transformer applies to.
        fn: a one-argument function.
        name: the name shown in reports; by default the function's name (``λ`` for a lambda).

    Raises:
        TypeError: if ``type`` is not a type or tuple of types, ``fn`` is not callable, or
            ``name`` is not a string.

    >>> from stoker.cmp import equal
    >>> equal("b a c", "a c b", transformer(str, lambda s: sorted(s.split())))
    True
    """
    types = _check_types("transformer", type)
    if not callable(fn):
        raise TypeError(f"transformer fn must be callable, got {fn!r}; pass a function of (x)")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"transformer name must be a str or None, got {name!r}")
    return TypeOption(types, fn, True, name if name is not None else _name(fn))
