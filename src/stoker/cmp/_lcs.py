"""Align two sequences by a longest common subsequence, so one insertion reads as one insertion.

:func:`align` returns an edit script: ``("=", i, j)`` for equal elements, ``("~", i, j)`` for a
changed element (a removed and an added element paired up, so a nested value can show its own
diff), ``("-", i, None)`` for an element only the first sequence has and ``("+", None, j)`` for one
only the second has. Common heads and tails are matched first; the middle is aligned by dynamic
programming when it is small enough (:data:`MAX_CELLS`), and paired position by position otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["MAX_CELLS", "Edit", "align"]

#: Largest table (middle of x times middle of y) aligned exactly; bigger middles pair by position.
MAX_CELLS = 250_000

Edit = tuple[str, int | None, int | None]


def _lcs_middle(
    x0: int, x1: int, y0: int, y1: int, eq: Callable[[int, int], bool]
) -> list[tuple[int | None, int | None]]:
    """Return the steps (i, j) of an LCS alignment of ``x[x0:x1]`` with ``y[y0:y1]``."""
    n, m = x1 - x0, y1 - y0
    if n * m > MAX_CELLS:
        return [(x0 + k, None) for k in range(n)] + [(None, y0 + k) for k in range(m)]
    # lengths[i][j]: length of the LCS of x[x0 + i:x1] and y[y0 + j:y1].
    lengths = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = lengths[i], lengths[i + 1]
        for j in range(m - 1, -1, -1):
            if eq(x0 + i, y0 + j):
                row[j] = below[j + 1] + 1
            else:
                row[j] = max(below[j], row[j + 1])
    steps: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < n and j < m:
        if eq(x0 + i, y0 + j):
            steps.append((x0 + i, y0 + j))
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            steps.append((x0 + i, None))
            i += 1
        else:
            steps.append((None, y0 + j))
            j += 1
    steps.extend((x0 + k, None) for k in range(i, n))
    steps.extend((None, y0 + k) for k in range(j, m))
    return steps


def align(nx: int, ny: int, eq: Callable[[int, int], bool]) -> list[Edit]:
    """Return the edit script turning a sequence of ``nx`` elements into one of ``ny``.

    ``eq(i, j)`` says whether element ``i`` of the first equals element ``j`` of the second; it
    should be cheap to call twice on the same pair (the caller memoizes).

    >>> align(3, 4, lambda i, j: "abc"[i] == "axbc"[j])
    [('=', 0, 0), ('+', None, 1), ('=', 1, 2), ('=', 2, 3)]
    >>> align(2, 2, lambda i, j: "ab"[i] == "cb"[j])
    [('~', 0, 0), ('=', 1, 1)]
    """
    head = 0
    while head < nx and head < ny and eq(head, head):
        head += 1
    tail_x, tail_y = nx, ny
    while tail_x > head and tail_y > head and eq(tail_x - 1, tail_y - 1):
        tail_x, tail_y = tail_x - 1, tail_y - 1
    steps: list[tuple[int | None, int | None]] = [(k, k) for k in range(head)]
    steps += _lcs_middle(head, tail_x, head, tail_y, eq)
    steps += [(tail_x + k, tail_y + k) for k in range(nx - tail_x)]

    edits: list[Edit] = []
    removed: list[int] = []
    added: list[int] = []

    def flush() -> None:
        paired = min(len(removed), len(added))
        edits.extend(("~", removed[k], added[k]) for k in range(paired))
        edits.extend(("-", i, None) for i in removed[paired:])
        edits.extend(("+", None, j) for j in added[paired:])
        removed.clear()
        added.clear()

    for i, j in steps:
        if i is not None and j is not None:
            if removed or added:
                flush()
            edits.append(("=", i, j))
        elif i is not None:
            removed.append(i)
        elif j is not None:
            added.append(j)
    flush()
    return edits
