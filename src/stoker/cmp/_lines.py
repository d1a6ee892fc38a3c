r"""Report two multi-line strings line by line, as a triple-quoted block when that is unambiguous.

The lines are aligned (see :mod:`stoker.cmp._lcs`); within each changed stretch the removed lines
come before the added ones. The block is shown between fences of three double quotes, one raw line
per record, unless that could mislead: a line that starts with three double quotes or ``...``, a
line with unprintable characters, or a removed and an added line that differ only in whitespace.
Then each line is shown as a quoted literal inside ``"\n".join([...])``.
"""

from __future__ import annotations

from stoker.cmp._elide import Entry, elide
from stoker.cmp._lcs import align
from stoker.cmp._literal import quote
from stoker.cmp._text import Block, Line, Node, Rec, Wrap

__all__ = ["MAX_LINE_DIFFS", "lines_text"]

#: Differing lines shown before the rest are counted.
MAX_LINE_DIFFS = 32


def _steps(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """Return ``(mark, line)`` pairs: unchanged, then per changed stretch removed before added."""
    steps: list[tuple[str, str]] = []
    removed: list[str] = []
    added: list[str] = []
    for op, i, j in align(len(old), len(new), lambda i, j: old[i] == new[j]):
        if op == "=" and i is not None:
            steps += [("-", line) for line in removed] + [("+", line) for line in added]
            removed, added = [], []
            steps.append((" ", old[i]))
            continue
        if i is not None:
            removed.append(old[i])
        if j is not None:
            added.append(new[j])
    return steps + [("-", line) for line in removed] + [("+", line) for line in added]


def _plain(line: str) -> bool:
    """Whether ``line`` can be shown raw between fences."""
    printable = line.replace("\t", " ").isprintable()
    return printable and not line.startswith(('"""', "..."))


def _only_whitespace_differs(steps: list[tuple[str, str]]) -> bool:
    """Whether some changed stretch has a removed and an added line equal but for whitespace."""
    removed: set[str] = set()
    added: set[str] = set()
    for mark, line in steps:
        if mark == " ":
            removed, added = set(), set()
            continue
        squeezed = "".join(line.split())
        if squeezed in (added if mark == "-" else removed):
            return True
        (removed if mark == "-" else added).add(squeezed)
    return False


def lines_text(x: str, y: str) -> Node:
    """Return the report node for two different strings, compared line by line.

    >>> from stoker.cmp._text import render
    >>> old = '''a
    ... b
    ... c
    ... '''
    >>> new = '''a
    ... B
    ... c
    ... '''
    >>> print(render(lines_text(old, new)).expandtabs(4), end="")
      (
        \"\"\"
        a
    -   b
    +   B
        c
        \"\"\"
      )
    """
    steps = _steps(x.split("\n"), y.split("\n"))
    fenced = all(_plain(line) for _, line in steps) and not _only_whitespace_differs(steps)
    if fenced and steps[-1] == (" ", ""):
        steps.pop()  # the newline that ends both strings goes without saying between fences

    def entry(mark: str, line: str) -> Entry:
        value = Line(line) if fenced else Line(quote(line))
        state = {" ": "identical", "-": "removed", "+": "inserted"}[mark]
        return Entry(state, lambda: [Rec(value, mark, comma=not fenced)])

    recs = elide([entry(mark, line) for mark, line in steps], "line", MAX_LINE_DIFFS)
    if fenced:
        fence = Rec(Line('"""'), comma=False)
        return Wrap("(", Block([fence, *recs, fence]), ")")
    return Wrap('"\\n".join([', Block(recs), "])")
