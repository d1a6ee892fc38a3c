"""A line chart of a series drawn in the terminal with braille dots, min/max/last at the side.

Each character cell holds a 2 x 4 grid of braille dots (Unicode U+2800-U+28FF), so a chart ``w``
cells wide and ``h`` rows high has ``2w x 4h`` points of resolution. Values are binned by step
into the columns (the mean of each bin), consecutive columns are joined by vertical runs so the
line stays connected, and non-finite values leave gaps. Text from the user's files never reaches
the chart: it draws numbers only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BRAILLE_BASE", "MIN_WIDTH", "chart"]

BRAILLE_BASE = 0x2800
# Dot bits of a braille cell by (row 0-3 from the top, column 0-1), per the Unicode layout.
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
_LABEL_WIDTH = 24  # room for two labels on one row: 'max 0.95625  last 0.95625'
MIN_WIDTH = _LABEL_WIDTH + 5  # a chart of at least four cells


def _label(name: str, value: float, digits: int = 5) -> str:
    return f"{name} {value:.{digits}g}"


def _columns(steps: np.ndarray[Any, Any], values: np.ndarray[Any, Any], count: int) -> Any:
    """The mean finite value of each of ``count`` equal step bins, NaN where there is none."""
    finite = np.isfinite(values)
    low, high = float(steps.min()), float(steps.max())
    span = high - low
    if span <= 0:
        position = np.zeros(steps.shape, dtype=np.int64)
    else:
        position = ((steps.astype(np.float64) - low) / span * (count - 1) + 0.5).astype(np.int64)
    sums = np.bincount(position[finite], weights=values[finite], minlength=count)
    counts = np.bincount(position[finite], minlength=count)
    broken = np.bincount(position[~finite], minlength=count) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    # Columns between two points with no point of their own are joined by a straight line;
    # a column that only holds non-finite values stays a gap.
    known = np.flatnonzero(counts > 0)
    empty = (counts == 0) & ~broken
    inside = empty & (np.arange(count) > known[0]) & (np.arange(count) < known[-1])
    means[inside] = np.interp(np.flatnonzero(inside), known, means[known])
    return means


def chart(
    steps: Any,
    values: Any,
    *,
    width: int = 60,
    height: int = 8,
) -> list[str]:
    """Draw ``values`` against ``steps`` as lines of braille characters.

    Args:
        steps: The x coordinates (any order-preserving numbers, e.g. global steps).
        values: The y values, one per step.
        width: The whole chart's width in characters, labels included (at least
            :data:`MIN_WIDTH`).
        height: Rows of dots (at least 2).

    Returns:
        ``height`` lines: the chart, with ``max`` on the first line's right, ``min`` on the
        last line's right and ``last`` on the line where the series ends (after ``max`` or ``min``
        when it ends on their line). An empty list when no value is finite.

    Raises:
        ValueError: if the width or height is too small, or the sizes of steps and values differ.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < MIN_WIDTH:
        raise ValueError(f"width must be an int >= {MIN_WIDTH}, got {width!r}")
    if isinstance(height, bool) or not isinstance(height, int) or height < 2:
        raise ValueError(f"height must be an int >= 2, got {height!r}")
    x = np.asarray(steps, dtype=np.float64).reshape(-1)
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"steps and values must have the same size, got {x.size} and {y.size}")
    finite = np.isfinite(y)
    if not finite.any():
        return []
    cells = width - _LABEL_WIDTH - 1
    dots_x, dots_y = cells * 2, height * 4
    column = _columns(x, y, dots_x)
    low, high = float(y[finite].min()), float(y[finite].max())
    span = high - low
    level = np.full(dots_x, -1, dtype=np.int64)  # dot row from the bottom, -1 = gap
    known = np.isfinite(column)
    if span > 0:
        level[known] = ((column[known] - low) / span * (dots_y - 1) + 0.5).astype(np.int64)
    else:
        level[known] = dots_y // 2
    grid = np.zeros((height, cells), dtype=np.int64)
    previous = -1
    for dot_x, dot_y in enumerate(level.tolist()):
        if dot_y < 0:
            previous = -1
            continue
        start, stop = (dot_y, dot_y) if previous < 0 else sorted((previous, dot_y))
        for row_from_bottom in range(start, stop + 1):
            row = dots_y - 1 - row_from_bottom
            grid[row // 4, dot_x // 2] |= _DOTS[row % 4][dot_x % 2]
        previous = dot_y
    last = float(y[finite][-1])
    last_row = 0 if span == 0 else height - 1 - int((last - low) / span * (height - 1) + 0.5)
    labels = [""] * height
    labels[0], labels[-1] = _label("max", high), _label("min", low)
    # The last value's label sits on the row where the line ends, after max/min if they share it
    # (both then with 4 digits, to fit the label column).
    if last_row == 0:
        labels[0] = f"{_label('max', high, 4)}  {_label('last', last, 4)}"
    elif last_row == height - 1:
        labels[-1] = f"{_label('min', low, 4)}  {_label('last', last, 4)}"
    else:
        labels[last_row] = _label("last", last)
    lines = []
    for row in range(height):
        text = "".join(chr(BRAILLE_BASE + int(bits)) for bits in grid[row])
        lines.append(f"{text} {labels[row]}".rstrip())
    return lines
