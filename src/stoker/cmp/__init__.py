"""Structural comparison of Python values, with diffs in the layout of Go's go-cmp.

:func:`equal` says whether two values are equal; :func:`diff` says how they differ, as text that is
empty exactly when they are equal. Unchanged lines start with two spaces, lines only in the first
value with ``"- "``, lines only in the second with ``"+ "``; each nesting level adds a tab, and the
root is labelled with its type name (tabs shown as spaces here)::

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: int
    ...     y: int
    ...     tags: list[str]
    >>> print(diff(Point(1, 2, ["a", "b"]), Point(1, 3, ["a", "c", "b"])).expandtabs(4), end="")
      Point{
        x: 1,
    -   y: 2,
    +   y: 3,
        tags: [
            "a",
    +       "c",
            "b",
        ],
      }

Values of different types are never equal. Dataclasses and namedtuples compare by field, mappings
by key, lists and tuples by aligned elements, sets by membership, NumPy arrays by dtype, shape and
elements, multi-line strings line by line, and other objects with ``==``. Cyclic values are fine.
Bytes that are not mostly text are reported as hex dump rows, as go-cmp does for binary data.
Under options that can change element equality, set elements are matched one to one under the
options instead (O(n*m) comparisons at worst, only then).

Options change the rules: :func:`approx`, :func:`nan_equal`, :func:`ignore`,
:func:`sort_sequences`, :func:`comparer` and :func:`transformer`. Paths in :func:`ignore` are
spelled ``.field``, ``[index]`` and ``["key"]``, with ``*`` matching any one step; a set element
is at ``[*]`` below its set.
"""

from __future__ import annotations

from typing import Any

from stoker._public import fixup_module_metadata
from stoker.cmp._options import (
    Option,
    approx,
    comparer,
    ignore,
    nan_equal,
    sort_sequences,
    transformer,
)
from stoker.cmp._report import report
from stoker.cmp._settings import resolve
from stoker.cmp._walk import Walker

__all__ = [
    "Option",
    "approx",
    "comparer",
    "diff",
    "equal",
    "ignore",
    "nan_equal",
    "sort_sequences",
    "transformer",
]


def equal(x: Any, y: Any, *options: Option) -> bool:
    """Return whether ``x`` and ``y`` are structurally equal under ``options``.

    Args:
        x: the first value.
        y: the second value.
        *options: made by :func:`approx`, :func:`nan_equal`, :func:`ignore`,
            :func:`sort_sequences`, :func:`comparer` and :func:`transformer`.

    Raises:
        TypeError: if an option is not one of these, or a comparison cannot be made (``==``
            that does not give a bool, elements ``sort_sequences`` cannot order).
        ValueError: if options contradict each other.

    >>> equal({"a": [1, 2]}, {"a": [1, 2]})
    True
    >>> equal(1, 1.0)  # different types
    False
    >>> equal(0.1 + 0.2, 0.3, approx(rel=1e-12))
    True
    """
    return Walker(resolve(options)).compare(x, y, (), True).equal


def diff(x: Any, y: Any, *options: Option) -> str:
    r"""Return a report of how ``x`` and ``y`` differ: ``""`` exactly when they are equal.

    The report ends with a newline. Takes the same options as :func:`equal` and raises the same
    errors. Lines start with a two-column mark (``"  "``, ``"- "``, ``"+ "``) and one tab per
    nesting level (shown as spaces by ``expandtabs`` in the examples below).

    >>> diff("Hello World", "Hello Go")
    '  str(\n- \t"Hello World",\n+ \t"Hello Go",\n  )\n'
    >>> print(diff({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}).expandtabs(4), end="")
      dict{
        "a": 1,
    -   "b": 2,
    +   "b": 3,
    +   "c": 4,
      }
    >>> diff([1, 2], [1, 2])
    ''
    """
    node = Walker(resolve(options)).compare(x, y, (), False)
    return "" if node.equal else report(node)


fixup_module_metadata(__name__, globals())
