"""Turn a comparison tree into report text in go-cmp's layout.

The root is labelled with its type name: ``str(`` for a value compared whole, ``Point{`` for a
dataclass or namedtuple, ``list[``, ``tuple(``, ``dict{``, ``set{`` for containers. Below the root,
a differing child is shown in one of two ways:

* nested, with its own differences inside (``key: {`` ... ``},``), when it is a container with more
  than one child, a multi-line string, a long string or bytes (``"".join([...])``, see
  :mod:`stoker.cmp._chars`), binary bytes (a hex dump, see :mod:`stoker.cmp._binary`), an array
  or a transformed value;
* whole, as a removed line and an added line (``- key: 1,`` / ``+ key: 2,``), otherwise; when both
  lines would read the same, the type names are added, then the object ids (numbers are left
  as they are: NaN differs from NaN and reads the same).

Fields are shown with their names, mapping entries with their keys, sequence and set elements
without keys (as in go-cmp, the order locates them); equal runs are elided by
:mod:`stoker.cmp._elide`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stoker.cmp._array import array_text
from stoker.cmp._binary import hex_text, is_binary
from stoker.cmp._chars import MIN_LENGTH, chars_text
from stoker.cmp._elide import Entry, Tally, elide
from stoker.cmp._lines import lines_text
from stoker.cmp._literal import BRACKETS
from stoker.cmp._node import MISSING, Kind, Node
from stoker.cmp._text import Block, Line, Rec, Wrap, ellipsis, render
from stoker.cmp._text import Node as Text
from stoker.cmp._values import CONTEXT_LEVEL, DETAIL_LEVEL, key_text, value_text

__all__ = ["report"]

_NAMES = {Kind.STRUCT: "field", Kind.MAP: "entry", Kind.SEQ: "element", Kind.SET: "element"}


def report(node: Node) -> str:
    """Return the report of an unequal comparison tree, ending with a newline."""
    return render(_labelled(node))


def _long_text(node: Node) -> bool:
    """Whether ``node`` holds two long strings (or bytes) better shown piece by piece."""
    x, y = node.x, node.y
    return (
        node.kind is Kind.LEAF
        and type(x) is type(y)
        and isinstance(x, str | bytes)
        and min(len(x), len(y)) >= MIN_LENGTH
        and not node.ignored
    )


def _binary(node: Node) -> bool:
    """Whether ``node`` holds two differing byte strings that are not mostly text (a hex dump)."""
    x, y = node.x, node.y
    return (
        node.kind is Kind.LEAF
        and type(x) is type(y)
        and isinstance(x, bytes | bytearray)
        and not node.equal
        and not node.ignored
        and is_binary(x, y)
    )


def _labelled(node: Node) -> Text:
    """Return ``node`` shown with its type name, as at the root or inside ``Inverse(...)``."""
    if _binary(node):
        return hex_text(node.x, node.y, node.label)
    if _long_text(node):
        return Wrap(f"{node.label}(", chars_text(node.x, node.y), ")")
    if node.kind is Kind.LEAF:
        return Wrap(f"{node.label}(", Block(_pair(node, None)), ")")
    if node.kind is Kind.TRANSFORM:
        return Wrap(f"{node.label}(", _nested(node, True), ")")
    if node.kind is Kind.LINES:
        text = lines_text(node.x, node.y)
        if isinstance(text, Wrap) and text.prefix == "(":
            return Wrap(node.label, text)
        return Wrap(f"{node.label}(", text, ")")
    return _nested(node, True)


def _brackets(node: Node, labelled: bool) -> tuple[str, str]:
    """Return the opening and closing text around a nested node's records."""
    kind = type(node.x)
    if node.kind in (Kind.STRUCT, Kind.ARRAY):
        return f"{node.label}{{", "}"
    opener, closer = BRACKETS.get(kind, ("{", "}") if node.kind is not Kind.SEQ else ("[", "]"))
    if labelled or kind not in BRACKETS:
        opener = node.label + opener
    return opener, closer


def _nested(node: Node, labelled: bool) -> Text:
    """Return a differing node shown with its differences inside."""
    if node.kind is Kind.LINES:
        return lines_text(node.x, node.y)
    if node.kind is Kind.TRANSFORM:
        return Wrap(f"Inverse({node.name}, ", _labelled(node.children[0].node), ")")
    opener, closer = _brackets(node, labelled)
    if node.kind is Kind.ARRAY:
        return Wrap(opener, Block(_array_recs(node)), closer)
    entries = [_entry(node.kind, child.step, child.node) for child in node.children]
    return Wrap(opener, Block(elide(entries, _NAMES[node.kind])), closer)


def _entry(parent: Kind, step: Any, child: Node) -> Entry:
    """Return the elidable entry for one child of a struct, map, sequence or set."""
    key: str | None = None
    if step is not None and parent is Kind.STRUCT:
        key = str(step.value)
    elif step is not None and parent is Kind.MAP:
        key = key_text(step.value)
    if child.ignored:
        return Entry("ignored", list)
    if child.equal:
        return Entry("identical", lambda: [Rec(_same(child), key=key)])
    if child.removed:
        return Entry("removed", lambda: _pair(child, key))
    if child.added:
        return Entry("inserted", lambda: _pair(child, key))
    return Entry("modified", lambda: _changed(child, key))


def _same(node: Node) -> Text:
    """Return an equal pair shown once: the shorter spelling of the two."""
    x_text = value_text(node.x, CONTEXT_LEVEL)
    if node.kind is not Kind.LEAF or node.x is node.y:
        return x_text
    y_text = value_text(node.y, CONTEXT_LEVEL)
    return y_text if len(render(y_text)) < len(render(x_text)) else x_text


def _changed(node: Node, key: str | None) -> list[Rec]:
    """Return the records of a child present on both sides that differs."""
    single_leaf = (
        node.kind in (Kind.STRUCT, Kind.MAP, Kind.SEQ)
        and len(node.children) == 1
        and node.children[0].node.kind is Kind.LEAF
    )
    if _binary(node):
        return [Rec(hex_text(node.x, node.y, node.label), key=key)]
    if _long_text(node):
        return [Rec(chars_text(node.x, node.y), key=key)]
    if node.kind is Kind.LEAF or single_leaf:
        return _pair(node, key)
    return [Rec(_nested(node, False), key=key)]


def _pair(node: Node, key: str | None) -> list[Rec]:
    """Return the removed and added records of a pair shown whole (a missing side is left out)."""
    typed = node.label == "object"
    x_text = value_text(node.x, DETAIL_LEVEL, "-", typed)
    y_text = value_text(node.y, DETAIL_LEVEL, "+", typed)
    numbers = isinstance(node.x, float | complex | np.number)
    both = node.x is not MISSING and node.y is not MISSING
    if both and not numbers and render(x_text) == render(y_text):
        x_text = value_text(node.x, DETAIL_LEVEL, "-", True)
        y_text = value_text(node.y, DETAIL_LEVEL, "+", True)
        if render(x_text) == render(y_text):
            x_text = Wrap("", x_text, f" @{id(node.x):#x}")
            y_text = Wrap("", y_text, f" @{id(node.y):#x}")
    recs: list[Rec] = []
    if node.x is not MISSING:
        recs.append(Rec(x_text, "-", key))
    if node.y is not MISSING:
        recs.append(Rec(y_text, "+", key))
    return recs


def _array_recs(node: Node) -> list[Rec]:
    """Return the records of two differing arrays: dtype, shape, then elements or data."""
    x, y = node.x, node.y
    recs: list[Rec] = []
    for name, old, new in (("dtype", str(x.dtype), str(y.dtype)), ("shape", x.shape, y.shape)):
        old_text, new_text = Line(str(old)), Line(str(new))
        if old == new:
            recs.append(Rec(old_text, key=name))
        else:
            recs += [Rec(old_text, "-", name), Rec(new_text, "+", name)]
    info = node.array
    if info is None:
        limit = 2 ** (DETAIL_LEVEL + 1)
        recs.append(Rec(Line(array_text(x, limit)), "-", "data"))
        recs.append(Rec(Line(array_text(y, limit)), "+", "data"))
        return recs
    for index in info.bad:
        key = "[" + (", ".join(str(i) for i in index) if index else "()") + "]"
        for mark, array in (("-", x), ("+", y)):
            element = array[index]
            text = value_text(element, CONTEXT_LEVEL, mark)
            recs.append(Rec(text, mark, key))
    rest = Tally("element", identical=info.num_same, modified=info.num_bad - len(info.bad))
    if rest:
        recs.append(ellipsis(str(rest)))
    return recs
