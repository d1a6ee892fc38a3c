"""stoker.cmp.equal: which pairs of values are equal, type by type, and that diff agrees."""

from __future__ import annotations

import collections
import dataclasses
import enum
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.cmp import diff, equal


@dataclasses.dataclass
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Other:
    x: int
    y: float


class Pair(NamedTuple):
    left: Any
    right: Any


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Shade(enum.IntEnum):
    DARK = 1


class Money:
    """A plain class compared through its own __eq__."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and other.cents == self.cents

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Money({self.cents})"


class Plain:
    """A class without __eq__: instances equal only themselves."""


_PLAIN = Plain()

EQUAL_PAIRS = [
    (None, None),
    (True, True),
    (3, 3),
    (2.5, 2.5),
    (1 + 2j, 1 + 2j),
    ("text", "text"),
    ("a\nb\n", "a\nb\n"),
    (b"\x00b", b"\x00b"),
    (bytearray(b"ab"), bytearray(b"ab")),
    ([1, [2, 3]], [1, [2, 3]]),
    ((1, "a"), (1, "a")),
    ({"a": 1, "b": [2]}, {"b": [2], "a": 1}),
    ({1, 2, 3}, {3, 2, 1}),
    (frozenset({1}), frozenset({1})),
    (Point(1, 2.0), Point(1, 2.0)),
    (Pair(1, "x"), Pair(1, "x")),
    (Color.RED, Color.RED),
    (Shade.DARK, Shade.DARK),
    (Money(5), Money(5)),
    (_PLAIN, _PLAIN),
    (np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3)),
    (np.array(["a", "b"]), np.array(["a", "b"])),
    (np.array([1, "x"], dtype=object), np.array([1, "x"], dtype=object)),
    (np.float32(1.5), np.float32(1.5)),
    (collections.OrderedDict(a=1), collections.OrderedDict(a=1)),
    ([], []),
    ({}, {}),
]

UNEQUAL_PAIRS = [
    (None, 0),
    (True, 1),
    (1, 1.0),
    (0, False),
    (3, 4),
    (2.5, 2.6),
    (1 + 2j, 1 + 3j),
    ("text", "test"),
    ("a\nb\n", "a\nc\n"),
    (b"a", "a"),
    (b"ab", b"ac"),
    ([1, 2], [1, 2, 3]),
    ([1, 2], [2, 1]),
    ([1, 2], (1, 2)),
    ((1, "a"), (1, "b")),
    ({"a": 1}, {"a": 2}),
    ({"a": 1}, {"b": 1}),
    ({"a": 1}, {"a": 1, "b": 2}),
    ({1, 2}, {1, 3}),
    ({1}, frozenset({1})),
    (Point(1, 2.0), Point(1, 2.5)),
    (Point(1, 2.0), Other(1, 2.0)),
    (Pair(1, "x"), Pair(1, "y")),
    (Pair(1, 2), (1, 2)),
    (Color.RED, Color.GREEN),
    (Shade.DARK, 1),
    (Money(5), Money(6)),
    (Plain(), Plain()),
    (np.arange(3), np.arange(3.0)),
    (np.arange(3), np.arange(4)),
    (np.arange(6), np.arange(6).reshape(2, 3)),
    (np.array([1, 2]), np.array([1, 3])),
    (np.array([1, "x"], dtype=object), np.array([1, "y"], dtype=object)),
    (np.float64(1.0), 1.0),
    (collections.OrderedDict(a=1), {"a": 1}),
    (float("nan"), float("nan")),
    ([float("nan")], [float("nan")]),
]


@pytest.mark.parametrize(("x", "y"), EQUAL_PAIRS)
def test_equal_pairs_are_equal_with_empty_diff(x: Any, y: Any) -> None:
    """Equal values of every supported type give True and an empty report, both ways round."""
    assert equal(x, y)
    assert equal(y, x)
    assert diff(x, y) == ""


@pytest.mark.parametrize(("x", "y"), UNEQUAL_PAIRS)
def test_unequal_pairs_differ_with_a_report(x: Any, y: Any) -> None:
    """Different values (or types) give False and a non-empty report ending with a newline."""
    assert not equal(x, y)
    assert not equal(y, x)
    report = diff(x, y)
    assert report.endswith("\n")
    assert report.startswith("  ")
    assert any(line.startswith(("- ", "+ ")) for line in report.splitlines())


def test_nan_is_unequal_even_to_itself() -> None:
    """NaN never equals NaN without nan_equal, even as the very same object inside a list."""
    nan = float("nan")
    same = [nan]
    assert not equal(nan, nan)
    assert not equal(same, same)


def _cycle(head: int) -> list[Any]:
    """Return ``[head, <itself>]``."""
    value: list[Any] = [head]
    value.append(value)
    return value


def test_cyclic_lists_compare_without_recursion() -> None:
    """Self-referencing lists compare by content and terminate."""
    assert equal(_cycle(1), _cycle(1))
    assert not equal(_cycle(1), _cycle(2))


def test_cycles_of_different_depth_are_unequal() -> None:
    """A dict that refers to itself differs from one that loops back one level further down."""
    x: dict[str, Any] = {"k": 1}
    x["self"] = x
    y: dict[str, Any] = {"k": 1}
    y["self"] = {"k": 1, "self": y}
    assert not equal(x, y)
    assert diff(x, y) != ""


def test_cyclic_dataclass_graph() -> None:
    """Dataclasses pointing at each other in a cycle compare field by field and terminate."""

    @dataclasses.dataclass(eq=False)
    class Node:
        name: str
        next: Any = None

    def ring(names: list[str]) -> Node:
        nodes = [Node(n) for n in names]
        for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True):
            a.next = b
        return nodes[0]

    assert equal(ring(["a", "b", "c"]), ring(["a", "b", "c"]))
    assert not equal(ring(["a", "b", "c"]), ring(["a", "b", "d"]))
    assert "d" in diff(ring(["a", "b", "c"]), ring(["a", "b", "d"]))


def test_shared_but_acyclic_values_are_not_cycles() -> None:
    """The same list appearing twice side by side is compared twice, not taken for a cycle."""
    shared = [1, 2]
    assert equal([shared, shared], [[1, 2], [1, 2]])
    assert not equal([shared, shared], [[1, 2], [1, 3]])


def test_eq_that_raises_is_reported_as_type_error() -> None:
    """An __eq__ that raises becomes a TypeError naming the type and suggesting a comparer."""

    class Broken:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        __hash__ = object.__hash__

    with pytest.raises(TypeError, match="Broken") as info:
        equal(Broken(), Broken())
    assert isinstance(info.value.__cause__, RuntimeError)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab\n", max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text("ab", max_size=2), inner),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON, JSON)
def test_diff_is_empty_exactly_when_equal(x: Any, y: Any) -> None:
    """For random nested values: diff is "" iff equal, and equal agrees with == on plain data."""
    assert (diff(x, y) == "") == equal(x, y)
    same_types = equal(x, y)
    if same_types:
        assert x == y
