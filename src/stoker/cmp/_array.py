"""Compare NumPy arrays: dtype and shape first, then the elements, under approx and nan_equal.

Arrays of different dtype or shape are different as wholes. Arrays of the same dtype and shape
compare element by element, vectorized for numbers, strings and records, one ``equal`` call per
element for ``object`` arrays. The node keeps the indices of the first :data:`SHOWN` differing
elements and the counts, which is all the report needs.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import numpy as np

from stoker.cmp._node import ArrayInfo, Kind, Node
from stoker.cmp._path import Step
from stoker.cmp._settings import Settings

__all__ = ["SHOWN", "Walker", "array_text", "compare_arrays"]


class Walker(Protocol):
    """What comparing arrays needs from the comparison walk: its settings and a recursive call."""

    settings: Settings

    def compare(self, x: Any, y: Any, path: tuple[Step, ...], quick: bool) -> Node:
        """Compare two values at ``path``; ``quick`` stops at the first difference."""
        ...


#: Differing elements a report lists one by one; the rest are counted.
SHOWN = 16


def _same_numbers(walker: Walker, x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> Any:
    """Return the element-wise equality of two float or complex arrays under the settings."""
    s = walker.settings
    with np.errstate(all="ignore"):
        same = np.asarray(x == y)
        if s.approx:
            finite = np.isfinite(x) & np.isfinite(y)
            tolerance = np.maximum(s.rel * np.maximum(np.abs(x), np.abs(y)), s.abs)
            same = same | (finite & (np.abs(x - y) <= tolerance))
        if s.nan_equal:
            same = same | (np.isnan(x) & np.isnan(y))
    return same


def _same_elements(
    walker: Walker, x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], path: tuple[Step, ...]
) -> Any:
    """Return a boolean array, ``True`` where ``x`` and ``y`` hold equal elements."""
    if x.dtype.kind in "fc":
        return _same_numbers(walker, x, y)
    if x.dtype.kind != "O":
        same = np.asarray(x == y)
        if same.shape == x.shape and same.dtype == np.bool_:
            return same
    same = np.zeros(x.shape, dtype=bool)
    for index in np.ndindex(x.shape):
        same[index] = walker.compare(x[index], y[index], (*path, Step(index)), True).equal
    return same


def compare_arrays(
    walker: Walker,
    x: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    path: tuple[Step, ...],
    label: str,
) -> Node:
    """Compare two arrays; the node's ``array`` is ``None`` when dtype or shape differ."""
    node = Node(Kind.ARRAY, x, y, False, label=label)
    if x.dtype != y.dtype or x.shape != y.shape:
        return node
    same = _same_elements(walker, x, y, path)
    bad = np.argwhere(~same)
    num_bad = int(bad.shape[0])
    shown = [tuple(int(v) for v in row) for row in bad[:SHOWN]]
    node.array = ArrayInfo(shown, num_bad, int(same.size) - num_bad)
    node.equal = num_bad == 0
    return node


def array_text(array: np.ndarray[Any, Any], limit: int) -> str:
    """Return a one-line ``array([...], dtype=...)``, summarized past ``limit`` elements.

    >>> array_text(np.arange(6).reshape(2, 3), 8)
    'array([[0, 1, 2], [3, 4, 5]], dtype=int64)'
    >>> array_text(np.arange(100.0), 8)
    'array([0.0, 1.0, 2.0, ..., 97.0, 98.0, 99.0], dtype=float64)'
    """
    body = np.array2string(
        array,
        separator=", ",
        threshold=limit,
        edgeitems=3,
        max_line_width=1 << 30,
        floatmode="unique",
        formatter={"float_kind": str, "complex_kind": str} if array.dtype.kind in "fc" else None,
    )
    body = re.sub(r"\n\s*", " ", body)
    return f"array({body}, dtype={array.dtype})"
