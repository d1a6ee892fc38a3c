"""Report two long one-line strings (or bytes) piece by piece, as go-cmp does with strings.Join.

The characters are aligned (see :mod:`stoker.cmp._lcs`) and cut into stretches that are equal or
not; a short equal stretch between two changes (at most :data:`BRIDGE` characters) joins the
change, so a run of small edits reads as one. Changed stretches are shown as removed and added
pieces of at most :data:`PIECE` characters; equal stretches keep :data:`KEEP` characters next to a
change and elide the rest with a count. The whole is ``"".join([...])``, which is the value again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stoker.cmp._lcs import align
from stoker.cmp._literal import quote
from stoker.cmp._text import Block, Line, Rec, Wrap, ellipsis

__all__ = [
    "BRIDGE",
    "KEEP",
    "MIN_LENGTH",
    "PIECE",
    "Stretch",
    "chars_text",
    "elide_stretches",
    "stretches",
]

#: Shortest strings (both sides) diffed piece by piece; shorter ones are shown whole.
MIN_LENGTH = 32
#: Characters per shown piece.
PIECE = 64
#: Equal characters kept on each side of a change.
KEEP = 2 * PIECE
#: Longest equal stretch merged into the changes around it.
BRIDGE = PIECE // 4


@dataclass
class Stretch:
    """Equal or changed characters: ``x[x0:x1]`` against ``y[y0:y1]``."""

    equal: bool
    x0: int
    x1: int
    y0: int
    y1: int


def stretches(x: Any, y: Any, bridge: int = BRIDGE) -> list[Stretch]:
    """Cut the alignment of ``x`` and ``y`` into equal and changed stretches.

    An equal stretch of at most ``bridge`` items between two changes joins them.
    """
    found: list[Stretch] = []
    pos_x = pos_y = 0
    for op, i, j in align(len(x), len(y), lambda i, j: x[i] == y[j]):
        equal = op == "="
        if not found or found[-1].equal != equal:
            found.append(Stretch(equal, pos_x, pos_x, pos_y, pos_y))
        if i is not None:
            pos_x = found[-1].x1 = i + 1
        if j is not None:
            pos_y = found[-1].y1 = j + 1
    merged: list[Stretch] = []
    for stretch in found:
        if (
            not stretch.equal
            and len(merged) >= 2
            and merged[-1].x1 - merged[-1].x0 <= bridge
            and not merged[-2].equal
        ):
            merged.pop()
            merged[-1].x1, merged[-1].y1 = stretch.x1, stretch.y1
        else:
            merged.append(stretch)
    return merged


def _pieces(text: Any, mark: str) -> list[Rec]:
    """Return ``text`` cut into :data:`PIECE`-long quoted records marked ``mark``."""
    return [Rec(Line(quote(text[k : k + PIECE])), mark) for k in range(0, len(text), PIECE)]


def chars_text(x: str | bytes, y: str | bytes) -> Wrap:
    """Return the report node of two different long strings or bytes, compared piece by piece.

    >>> from stoker.cmp._text import render
    >>> text = render(chars_text("a" * 200 + "x" + "b" * 10, "a" * 200 + "y" + "b" * 10))
    >>> print(text.expandtabs(4).replace("a" * 64, "a*64"), end="")
      "".join([
        ... // 72 identical characters
        "a*64",
        "a*64",
    -   "x",
    +   "y",
        "bbbbbbbbbb",
      ])
    """
    name = "character" if isinstance(x, str) else "byte"
    recs = elide_stretches(x, y, stretches(x, y), render=_pieces, chunk=PIECE, keep=KEEP, noun=name)
    return Wrap(f'{"" if isinstance(x, str) else "b"}"".join([', Block(recs), "])")


def elide_stretches(
    x: Any,
    y: Any,
    found: list[Stretch],
    *,
    render: Callable[[Any, str], list[Rec]],
    chunk: int,
    keep: int,
    noun: str,
    absorb_into_head: bool = True,
) -> list[Rec]:
    """Turn aligned stretches of ``x`` and ``y`` into report records.

    A changed stretch becomes ``-`` records of ``x``'s part and ``+`` records of ``y``'s; an
    equal stretch keeps ``keep`` items of context next to each change and elides the rest with a
    count (``... // N identical <noun>s``). When less than one ``chunk`` would be hidden, the
    whole stretch is shown, the middle joining the head (``absorb_into_head``) or the tail.

    Args:
        x: The first sequence (str, bytes or bytearray).
        y: The second sequence, of the same kind.
        found: The stretches from :func:`stretches`.
        render: Makes the records of a slice with a mark (``" "``, ``"-"`` or ``"+"``).
        chunk: Items per rendered record.
        keep: Items of context kept on each side of a change.
        noun: What an item is called in the elision comment.
        absorb_into_head: Where a short middle goes (decides how rows are cut).
    """
    recs: list[Rec] = []
    for number, stretch in enumerate(found):
        if not stretch.equal:
            recs += render(x[stretch.x0 : stretch.x1], "-")
            recs += render(y[stretch.y0 : stretch.y1], "+")
            continue
        data = x[stretch.x0 : stretch.x1]
        low = 0 if number == 0 else min(len(data), keep)
        high = 0 if number == len(found) - 1 else min(len(data) - low, keep)
        if len(data) - low - high <= chunk:
            if absorb_into_head:
                low = len(data) - high
            else:
                high = len(data) - low
        recs += render(data[:low], " ")
        if len(data) > low + high:
            hidden = len(data) - low - high
            recs.append(ellipsis(f"{hidden} identical {noun}{'s' if hidden > 1 else ''}"))
        recs += render(data[len(data) - high :], " ")
    return recs
