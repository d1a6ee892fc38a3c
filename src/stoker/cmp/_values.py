"""Spell a whole value for a report: as a Python-like literal, shortened by a verbosity level.

Unchanged context is shown briefly and removed or added values in more detail, as go-cmp does: a
``level`` bounds the elements shown per container (``2 ** (level + 1)``), the characters per string
(``32 << level``) and, one level less per nesting, the depth. Containers the value is already inside
are shown as ``[...]``, ``{...}`` or ``Name{...}``, so cyclic values print finitely.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

import numpy as np

from stoker.cmp._array import array_text
from stoker.cmp._literal import BRACKETS, quote, scalar_text, type_label
from stoker.cmp._text import Block, Line, Node, Rec, Wrap, ellipsis, fold

__all__ = ["CONTEXT_LEVEL", "DETAIL_LEVEL", "key_text", "value_text"]

#: Level for unchanged values shown around a difference.
CONTEXT_LEVEL = 2
#: Level for removed or added values.
DETAIL_LEVEL = 4


def _items_limit(level: int) -> int:
    return 1 << (level + 1)


def _is_struct(value: object) -> bool:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return True
    return isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple)


def _scalar(value: Any, typed: bool) -> str:
    """Spell a scalar, with its type name around it when ``typed``."""
    if isinstance(value, np.floating | np.complexfloating):
        text = str(value)
    elif isinstance(value, np.generic):
        text = scalar_text(value.item())
    else:
        text = scalar_text(value).replace("\n", "\\n")
    literal = isinstance(value, int | float | complex | bytes | bytearray | np.generic)
    if typed and literal and not isinstance(value, bool | enum.Enum | np.bool_):
        return f"{type_label(type(value))}({text})"
    return text


def _string(value: str, level: int, mark: str, typed: bool) -> Node:
    """Spell a string: triple-quoted lines when removed or added and long, else one literal."""
    lines = value.removesuffix("\n").split("\n")
    if (
        mark != " "
        and len(lines) >= 4
        and all(
            line.replace("\t", " ").isprintable() and not line.startswith(('"""', "..."))
            for line in lines
        )
    ):
        recs = [Rec(Line(line), mark, comma=False) for line in lines]
        fence = Rec(Line('"""'), mark, comma=False)
        body = Wrap("(", Block([fence, *recs, fence]), ")")
        return Wrap(f"{type_label(type(value))}", body) if typed else body
    limit = 32 << level
    text = quote(value[:limit]) + ("..." if len(value) > limit else "")
    return Line(f"{type_label(type(value))}({text})" if typed else text)


def value_text(
    value: Any, level: int, mark: str = " ", typed: bool = False, inside: set[int] | None = None
) -> Node:
    """Return the text node spelling ``value`` at verbosity ``level``.

    Args:
        value: any value.
        level: verbosity; 0 shows containers as ``[...]``.
        mark: ``"-"`` or ``"+"`` when the value is removed or added (long strings then show as
            triple-quoted lines), ``" "`` otherwise.
        typed: put the type name around scalars, nested ones too, to tell ``1`` from
            ``int64(1)``.
        inside: ids of the containers being spelled, to cut cycles.

    >>> from stoker.cmp._text import render
    >>> print(render(value_text({"a": [1, 2], "b": None}, 2)), end="")
      {"a": [1, 2], "b": None}
    """
    inside = set() if inside is None else inside
    if isinstance(value, str):
        return _string(value, level, mark, typed)
    if isinstance(value, np.ndarray):
        return Line(array_text(value, _items_limit(level)))
    is_struct = _is_struct(value)
    kind = type(value)
    if not (is_struct or isinstance(value, list | tuple | Mapping | set | frozenset)):
        return Line(_scalar(value, typed))
    opener, closer = BRACKETS.get(kind, (f"{type_label(kind)}{{", "}"))
    if isinstance(value, frozenset) or (isinstance(value, set) and kind is not set):
        opener, closer = f"{type_label(kind)}({{", "})"
    if isinstance(value, set | frozenset) and not value:
        return Line(f"{type_label(kind)}()")
    if is_struct:
        opener, closer = f"{type_label(kind)}{{", "}"
    if id(value) in inside or level <= 0:
        return Line(f"{opener}...{closer}")
    inside.add(id(value))
    try:
        recs = _records(value, is_struct, level, mark, typed=typed, inside=inside)
    finally:
        inside.discard(id(value))
    if kind is tuple and len(recs) == 1:
        folded = fold(recs[0].value, mark)
        if isinstance(folded, Line):
            return Line(f"({folded.text},)")
    return Wrap(opener, Block(recs), closer)


def _records(
    value: Any, is_struct: bool, level: int, mark: str, *, typed: bool, inside: set[int]
) -> list[Rec]:
    """Return the records of a container, at most :func:`_items_limit` of them."""
    limit = _items_limit(level)
    items: list[tuple[str | None, Any]]
    if is_struct:
        names = (
            [f.name for f in dataclasses.fields(value)]
            if dataclasses.is_dataclass(value)
            else list(value._fields)
        )
        items = [(name, getattr(value, name)) for name in names[: limit + 1]]
    elif isinstance(value, Mapping):
        keys = list(value.keys())
        try:
            keys.sort()
        except TypeError:
            keys.sort(key=lambda k: (type(k).__qualname__, repr(k)))
        items = [(key_text(k), value[k]) for k in keys[: limit + 1]]
    elif isinstance(value, set | frozenset):
        elements = list(value)
        try:
            elements.sort()
        except TypeError:
            elements.sort(key=lambda v: (type(v).__qualname__, repr(v)))
        items = [(None, v) for v in elements[: limit + 1]]
    else:
        items = [(None, v) for v in list(value)[: limit + 1]]
    recs = [
        Rec(value_text(item, level - 1, mark, typed, inside), key=key)
        for key, item in items[:limit]
    ]
    if len(items) > limit:
        recs.append(ellipsis())
    return recs


def key_text(key: Any) -> str:
    """Return a mapping key spelled on one line: ``"name"``, ``3``, ``(1, 2)``."""
    node = fold(value_text(key, CONTEXT_LEVEL), " ")
    return node.text if isinstance(node, Line) else repr(key)
