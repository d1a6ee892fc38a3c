"""The result of comparing two values: a tree of :class:`Node`, one per pair of values visited."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from stoker.cmp._path import Step

__all__ = ["MISSING", "ArrayInfo", "Child", "Kind", "Node"]


class _Missing:
    """The value on the side of a removed or added element, entry or line."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Kind(enum.Enum):
    """How a pair of values was compared, which decides how the report shows it."""

    LEAF = "leaf"  # compared as a whole: scalars, mismatched types, comparers, cycles
    STRUCT = "struct"  # dataclass or namedtuple: by field
    MAP = "map"  # mapping: by key
    SEQ = "seq"  # list or tuple: aligned elements
    SET = "set"  # set or frozenset: shared, removed and added elements
    LINES = "lines"  # multi-line strings: aligned lines
    ARRAY = "array"  # NumPy arrays: dtype, shape and differing elements
    TRANSFORM = "transform"  # a transformer's results


@dataclass
class ArrayInfo:
    """What differs between two arrays of the same dtype and shape (``bad`` holds the first few)."""

    bad: list[tuple[int, ...]]
    num_bad: int
    num_same: int


@dataclass
class Child:
    """A child of a composite node, with the step that leads to it (``None`` for set elements)."""

    step: Step | None
    node: Node


@dataclass
class Node:
    """The comparison of ``x`` with ``y`` (either may be :data:`MISSING`)."""

    kind: Kind
    x: Any
    y: Any
    equal: bool
    ignored: bool = False
    label: str = ""
    children: list[Child] = field(default_factory=list)
    name: str = ""
    array: ArrayInfo | None = None

    @property
    def removed(self) -> bool:
        """Whether only the first value has this element."""
        return self.y is MISSING

    @property
    def added(self) -> bool:
        """Whether only the second value has this element."""
        return self.x is MISSING
