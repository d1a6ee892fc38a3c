"""Lay out a tree of text pieces as a diff report: one line when it fits, indented lines otherwise.

A report is built from three kinds of node:

* :class:`Line`, a piece of text that never spans lines;
* :class:`Wrap`, a prefix and a suffix around another node (``"list["`` ... ``"]"``);
* :class:`Block`, a sequence of :class:`Rec` records (``key: value,``), each with a mark: ``" "``
  unchanged, ``"-"`` only in the first value, ``"+"`` only in the second.

Rendering first tries to fold each block onto one line (``[1, 2, 3]``); a block holding a removed
or added record, a comment, or a child that could not fold is laid out one record per line. Every
output line starts with a two-character mark (``"  "``, ``"- "``, ``"+ "``) and then one tab per
nesting level, the layout of go-cmp's reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_WIDTH", "Block", "Line", "Node", "Rec", "Wrap", "ellipsis", "fold", "render"]

#: Columns a folded removed/added block may take before it is laid out over several lines.
MAX_WIDTH = 80


@dataclass(frozen=True)
class Line:
    """Text that stays on one line."""

    text: str


@dataclass(frozen=True)
class Wrap:
    """``prefix``, then ``body``, then ``suffix``."""

    prefix: str
    body: Node
    suffix: str = ""


@dataclass(frozen=True)
class Rec:
    """One record of a block: ``mark key: value, // comment``."""

    value: Node
    mark: str = " "
    key: str | None = None
    comment: str | None = None
    comma: bool = True


@dataclass(frozen=True)
class Block:
    """Records separated by commas; folded onto one line when possible."""

    recs: list[Rec] = field(default_factory=list)


Node = Line | Wrap | Block


def ellipsis(comment: str | None = None, mark: str = " ") -> Rec:
    """Return the ``... // comment`` record that stands for elided records."""
    return Rec(Line("..."), mark=mark, comment=comment, comma=False)


def fold(node: Node, mark: str) -> Node:
    """Return ``node`` folded to a :class:`Line` when it can be, else with its children folded."""
    if isinstance(node, Line):
        return node
    if isinstance(node, Wrap):
        body = fold(node.body, mark)
        if isinstance(body, Line):
            return Line(node.prefix + body.text + node.suffix)
        return Wrap(node.prefix, body, node.suffix)
    recs: list[Rec] = []
    parts: list[str] = []
    multiline = False
    for rec in node.recs:
        value = fold(rec.value, rec.mark if mark == " " else mark)
        recs.append(Rec(value, rec.mark, rec.key, rec.comment, rec.comma))
        if rec.mark != " " or rec.comment is not None or not isinstance(value, Line):
            multiline = True
            continue
        parts.append(value.text if rec.key is None else f"{rec.key}: {value.text}")
    text = ", ".join(parts)
    if mark != " " and len(text) > MAX_WIDTH:
        multiline = True
    return Block(recs) if multiline else Line(text)


def _lead(mark: str, depth: int) -> str:
    """Return the start of an output line: the two-column mark and ``depth`` tabs."""
    return "\n" + mark + " " + "\t" * depth


def _pads(recs: list[Rec], want: list[bool], width: list[int]) -> list[int]:
    """Return padding that aligns consecutive records where ``want`` holds to the widest."""
    pads = [0] * len(recs)
    start = 0
    for end in range(len(recs) + 1):
        if end == len(recs) or not want[end]:
            run = range(start, end)
            widest = max((width[i] for i in run), default=0)
            for i in run:
                pads[i] = widest - width[i]
            start = end + 1
    return pads


def _expand(node: Node, mark: str, depth: int, out: list[str]) -> None:
    """Append the text of a folded ``node`` to ``out``, laying blocks out one record a line."""
    if isinstance(node, Line):
        out.append(node.text)
        return
    if isinstance(node, Wrap):
        out.append(node.prefix)
        _expand(node.body, mark, depth, out)
        out.append(node.suffix)
        return
    recs = node.recs
    simple = all(
        r.mark == " " and r.key is None and r.comment is None and isinstance(r.value, Line)
        for r in recs
    )
    if simple:
        _expand_batched(recs, mark, depth, out)
        return
    key_pads = _pads(
        recs,
        [r.key is not None and isinstance(r.value, Line) for r in recs],
        [len(r.key or "") for r in recs],
    )
    value_pads = _pads(
        recs,
        [isinstance(r.value, Line) and r.comment is not None and r.comma for r in recs],
        [len(r.value.text) if isinstance(r.value, Line) else 0 for r in recs],
    )
    for rec, key_pad, value_pad in zip(recs, key_pads, value_pads, strict=True):
        rec_mark = rec.mark if mark == " " else mark
        out.append(_lead(rec_mark, depth + 1))
        if rec.key is not None:
            out.append(f"{rec.key}: " + " " * key_pad)
        _expand(rec.value, rec_mark, depth + 1, out)
        if rec.comma:
            out.append(",")
        if rec.comment is not None:
            out.append(" " * value_pad + " // " + rec.comment)
    out.append(_lead(mark, depth))


def _expand_batched(recs: list[Rec], mark: str, depth: int, out: list[str]) -> None:
    """Lay out plain values several to a line, each line at most :data:`MAX_WIDTH` wide."""
    batch = ""
    for rec in recs:
        assert isinstance(rec.value, Line)  # checked by the caller
        piece = rec.value.text + ", "
        if batch and len(batch) + len(piece) > MAX_WIDTH:
            out.append(_lead(mark, depth + 1) + batch.rstrip())
            batch = ""
        batch += piece
    if batch:
        out.append(_lead(mark, depth + 1) + batch.rstrip())
    out.append(_lead(mark, depth))


def render(node: Node) -> str:
    """Return the report text of ``node``: unchanged-marked first line, trailing newline.

    >>> text = render(Wrap("int(", Block([Rec(Line("1"), "-"), Rec(Line("2"), "+")]), ")"))
    >>> print(text.expandtabs(4), end="")
      int(
    -   1,
    +   2,
      )
    """
    out = ["  "]
    _expand(fold(node, " "), " ", 0, out)
    return "".join(out) + "\n"
