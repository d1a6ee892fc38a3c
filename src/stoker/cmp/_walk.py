"""Compare two values recursively under a set of options, producing a tree of :class:`Node`.

The walk dispatches on type: values of different types never compare equal (unlike ``==``, which
says ``1 == 1.0``); dataclasses and namedtuples compare field by field, mappings key by key, lists
and tuples element by element after alignment (see :mod:`stoker.cmp._lcs`), sets by membership
(or, under options that can change element equality, by matching, see :meth:`Walker._matched_sets`),
NumPy arrays by dtype, shape and elements, multi-line strings line by line in the report, and any
other object through its ``__eq__``.

Cycles: the walk keeps the containers it is inside, for each side, with their depth. Meeting a
container again on either side ends that branch: the pair is equal when both sides loop back to
the same depth, and different otherwise.

In *quick* mode (used by :func:`stoker.cmp.equal` and to align sequences) the walk stops at the
first difference and keeps no children.
"""

from __future__ import annotations

import cmath
import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from stoker.cmp._array import compare_arrays
from stoker.cmp._lcs import align
from stoker.cmp._literal import type_label
from stoker.cmp._node import MISSING, Child, Kind, Node
from stoker.cmp._options import TypeOption
from stoker.cmp._path import WILDCARD, Step, format_path
from stoker.cmp._settings import Settings

__all__ = ["SET_ELEMENT", "Walker", "sort_key_order"]

Path = tuple[Step, ...]

#: The step to an element of a set (elements have no index or key), spelled ``[*]``.
SET_ELEMENT = Step(WILDCARD)


def sort_key_order(values: list[Any]) -> list[Any]:
    """Return ``values`` sorted naturally, or by type name and ``repr`` when they do not order."""
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__qualname__, repr(v)))


def _sorted_order(values: list[Any]) -> list[int]:
    """Return the indices of ``values`` in the order :func:`sort_key_order` puts the values."""
    indices = range(len(values))
    try:
        return sorted(indices, key=lambda i: values[i])
    except TypeError:
        return sorted(indices, key=lambda i: (type(values[i]).__qualname__, repr(values[i])))


def _is_namedtuple(value: object) -> bool:
    return isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple)


def _is_dataclass_instance(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _eq_fallback(x: Any, y: Any) -> bool:
    """Compare two objects of the same type with their ``__eq__``."""
    try:
        return bool(x == y)
    except Exception as err:
        raise TypeError(
            f"values of type {type_label(type(x))} must compare with == to a bool, but "
            f"== raised {type(err).__name__}: {err}; add comparer({type_label(type(x))}, fn)"
        ) from err


class Walker:
    """One comparison: the settings and the containers being walked on each side."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._inside_x: dict[int, int] = {}
        self._inside_y: dict[int, int] = {}
        self._active: set[int] = set()

    # Scalars -----------------------------------------------------------------------------

    def numbers_equal(self, x: Any, y: Any) -> bool:
        """Compare two floats or complex numbers under ``approx`` and ``nan_equal``."""
        if x == y:
            return True
        s = self.settings
        is_complex = isinstance(x, complex | np.complexfloating)
        x_nan = cmath.isnan(x) if is_complex else math.isnan(x)
        y_nan = cmath.isnan(y) if is_complex else math.isnan(y)
        if x_nan or y_nan:
            return s.nan_equal and x_nan and y_nan
        if not s.approx or cmath.isinf(x) or cmath.isinf(y):
            return False
        return bool(abs(x - y) <= max(s.rel * max(abs(x), abs(y)), s.abs))

    # Entry -------------------------------------------------------------------------------

    def compare(self, x: Any, y: Any, path: Path, quick: bool) -> Node:
        """Compare ``x`` with ``y`` found at ``path``."""
        s = self.settings
        if s.ignores and s.ignored(path, x, y):
            return Node(Kind.LEAF, x, y, True, ignored=True)
        same_type = type(x) is type(y)
        if s.by_type:
            option = s.type_option(type(x))
            if (
                option is not None
                and id(option) not in self._active
                and (same_type or option is s.type_option(type(y)))
            ):
                return self._custom(option, x, y, path, quick)
        if not same_type:
            return Node(Kind.LEAF, x, y, False, label="object")
        label = type_label(type(x))
        if x is None or isinstance(x, bool | int | enum.Enum | str | bytes | bytearray):
            equal = x == y if not isinstance(x, enum.Enum) else x is y
            lines = not equal and isinstance(x, str) and ("\n" in x or "\n" in y)
            return Node(Kind.LINES if lines else Kind.LEAF, x, y, bool(equal), label=label)
        if isinstance(x, float | complex | np.floating | np.complexfloating):
            return Node(Kind.LEAF, x, y, self.numbers_equal(x, y), label=label)
        if isinstance(x, np.ndarray):
            return compare_arrays(self, x, y, path, label)
        if isinstance(x, np.generic):
            return Node(Kind.LEAF, x, y, bool(x == y), label=label)
        if isinstance(x, set | frozenset):
            if s.approx or s.nan_equal or s.ignores or s.by_type:
                return self._matched_sets(x, y, path, label, quick)
            return self._sets(x, y, label, quick)
        if not (_is_dataclass_instance(x) or isinstance(x, list | tuple | Mapping)):
            return Node(Kind.LEAF, x, y, _eq_fallback(x, y), label=label)

        depth_x, depth_y = self._inside_x.get(id(x)), self._inside_y.get(id(y))
        if depth_x is not None or depth_y is not None:
            return Node(Kind.LEAF, x, y, depth_x == depth_y, label=label)
        self._inside_x[id(x)] = self._inside_y[id(y)] = len(path)
        try:
            if _is_dataclass_instance(x) or _is_namedtuple(x):
                return self._struct(x, y, path, label, quick)
            if isinstance(x, Mapping):
                return self._map(x, y, path, label, quick)
            return self._seq(x, y, path, label, quick)
        finally:
            del self._inside_x[id(x)], self._inside_y[id(y)]

    # Options -----------------------------------------------------------------------------

    def _custom(self, option: TypeOption, x: Any, y: Any, path: Path, quick: bool) -> Node:
        """Apply a comparer or a transformer."""
        label = type_label(type(x)) if type(x) is type(y) else "object"
        if not option.transform:
            result = option.fn(x, y)
            if not isinstance(result, bool | np.bool_):
                raise TypeError(
                    f"comparer {option.name} must return a bool, got {result!r} for the values "
                    f"at path {format_path(path)!r}; return True or False"
                )
            return Node(Kind.LEAF, x, y, bool(result), label=label)
        tx, ty = option.fn(x), option.fn(y)
        self._active.add(id(option))
        try:
            inner = self.compare(tx, ty, path, quick)
        finally:
            self._active.discard(id(option))
        node = Node(Kind.TRANSFORM, x, y, inner.equal, label=label, name=option.name)
        node.children.append(Child(None, inner))
        return node

    # Composites --------------------------------------------------------------------------

    def _struct(self, x: Any, y: Any, path: Path, label: str, quick: bool) -> Node:
        """Compare a dataclass or namedtuple field by field."""
        names = [f.name for f in dataclasses.fields(x)] if _is_dataclass_instance(x) else x._fields
        node = Node(Kind.STRUCT, x, y, True, label=label)
        for name in names:
            step = Step(name, True)
            child = self.compare(getattr(x, name), getattr(y, name), (*path, step), quick)
            node.children.append(Child(step, child))
            if not child.equal:
                node.equal = False
                if quick:
                    break
        return node

    def _map(
        self, x: Mapping[Any, Any], y: Mapping[Any, Any], path: Path, label: str, quick: bool
    ) -> Node:
        """Compare two mappings key by key, keys in sorted order."""
        node = Node(Kind.MAP, x, y, True, label=label)
        if quick and len(x) != len(y) and not self.settings.ignores:
            node.equal = False
            return node
        keys = list(x.keys()) + [key for key in y if key not in x]
        for key in sort_key_order(keys):
            step = Step(key)
            where = (*path, step)
            cx, cy = x.get(key, MISSING), y.get(key, MISSING)
            if cx is MISSING or cy is MISSING:
                child = self._one_sided(cx, cy, where)
            else:
                child = self.compare(cx, cy, where, quick)
            node.children.append(Child(step, child))
            if not child.equal:
                node.equal = False
                if quick:
                    break
        return node

    def _one_sided(self, x: Any, y: Any, path: Path) -> Node:
        """Return the node of an element or entry only one side has."""
        s = self.settings
        ignored = bool(s.ignores) and s.ignored(path, x, y)
        return Node(Kind.LEAF, x, y, ignored, ignored=ignored)

    def _seq(self, x: Any, y: Any, path: Path, label: str, quick: bool) -> Node:
        """Compare two lists or tuples, aligning their elements."""
        xs, ys = list(x), list(y)
        sort = self.settings.sort
        if sort is not None:
            try:
                xs, ys = sorted(xs, key=sort.key), sorted(ys, key=sort.key)
            except TypeError as err:
                raise TypeError(
                    f"sort_sequences must order the elements of the {label} at path "
                    f"{format_path(path)!r}, but sorting raised: {err}; pass a key, e.g. "
                    "sort_sequences(key=repr)"
                ) from err
        node = Node(Kind.SEQ, x, y, True, label=label)
        memo: dict[tuple[int, int], Node] = {}
        if len(xs) == len(ys):
            pairs = [
                self.compare(a, b, (*path, Step(i)), True)
                for i, (a, b) in enumerate(zip(xs, ys, strict=True))
            ]
            if all(p.equal for p in pairs):
                node.children = [Child(Step(i), p) for i, p in enumerate(pairs)]
                return node
            memo.update(((i, i), p) for i, p in enumerate(pairs))
        if quick and not self.settings.ignores:
            node.equal = False  # without ignored elements no alignment can make them equal
            return node

        def same(i: int, j: int) -> bool:
            found = memo.get((i, j))
            if found is None:
                found = memo[i, j] = self.compare(xs[i], ys[j], (*path, Step(i)), True)
            return found.equal

        for op, i, j in align(len(xs), len(ys), same):
            if op == "=" and i is not None and j is not None:
                child = memo[i, j]
            elif op == "~" and i is not None and j is not None:
                child = memo[i, j] if quick else self.compare(xs[i], ys[j], (*path, Step(i)), False)
            elif i is not None:
                child = self._one_sided(xs[i], MISSING, (*path, Step(i)))
            else:
                assert j is not None  # an edit has at least one side
                child = self._one_sided(MISSING, ys[j], (*path, Step(j)))
            node.children.append(Child(Step(i if i is not None else j), child))
            if not child.equal:
                node.equal = False
                if quick:
                    break
        return node

    def _sets(self, x: Any, y: Any, label: str, quick: bool) -> Node:
        """Compare two sets by membership: shared, removed and added elements."""
        node = Node(Kind.SET, x, y, x == y, label=label)
        if node.equal or quick:
            return node
        for item in sort_key_order(list(x | y)):
            cx = item if item in x else MISSING
            cy = item if item in y else MISSING
            node.children.append(Child(None, Node(Kind.LEAF, cx, cy, item in x and item in y)))
        return node

    def _matched_sets(self, x: Any, y: Any, path: Path, label: str, quick: bool) -> Node:
        """Compare two sets under options that can change element equality, by matching.

        Each element of ``x`` (in sorted order) is matched to the first unmatched element of
        ``y`` it equals under the options, trying the element ``y`` holds by hash first. So a set
        of identical elements costs O(n), and the worst case is O(n*m) element comparisons,
        paid only when ``approx``, ``nan_equal``, ``ignore``, ``comparer`` or ``transformer`` is
        given (otherwise :meth:`_sets` compares by hash membership). Matching is greedy: with a
        tolerance that is not transitive it may miss a pairing that exists. Elements are
        compared by the full walk, so ``1`` and ``1.0`` differ here although ``{1} == {1.0}``.
        Elements are at the path ``[*]`` below the set, for :func:`stoker.cmp.ignore`.
        """
        node = Node(Kind.SET, x, y, True, label=label)
        where = (*path, SET_ELEMENT)
        xs, ys = list(x), list(y)
        x_order, y_order = _sorted_order(xs), _sorted_order(ys)
        by_hash = {item: j for j, item in enumerate(ys)}
        free = dict.fromkeys(y_order)  # unmatched elements of y, in sorted order
        pairs: list[tuple[Any, Node]] = []  # (sort value, node)
        for i in x_order:
            a = xs[i]
            candidates = [by_hash[a]] if a in by_hash and by_hash[a] in free else []
            found: Node | None = None
            for j in [*candidates, *(j for j in free if j not in candidates)]:
                pair = self.compare(a, ys[j], where, True)
                if pair.equal:
                    found = pair
                    del free[j]
                    break
            if found is None:
                found = self._one_sided(a, MISSING, where)
            pairs.append((a, found))
            if not found.equal:
                node.equal = False
                if quick:
                    return node
        for j in free:
            found = self._one_sided(MISSING, ys[j], where)
            pairs.append((ys[j], found))
            if not found.equal:
                node.equal = False
                if quick:
                    return node
        if not quick and not node.equal:
            order = _sorted_order([value for value, _ in pairs])
            node.children = [Child(None, pairs[k][1]) for k in order]
        return node
