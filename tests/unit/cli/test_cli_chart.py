"""The terminal chart of `stoker logs show`: braille dots, connected lines, min/max/last labels."""

from __future__ import annotations

import numpy as np
import pytest

from stoker.cli._chart import BRAILLE_BASE, chart


def _dots(lines: list[str]) -> np.ndarray:
    """Decode the chart's braille cells back into a boolean dot grid (rows x columns)."""
    cells = len(lines[0].split(" ")[0])
    layout = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
    grid = np.zeros((len(lines) * 4, cells * 2), dtype=bool)
    for row, line in enumerate(lines):
        for cell, char in enumerate(line[:cells]):
            bits = ord(char) - BRAILLE_BASE
            assert 0 <= bits < 256, f"not a braille character: {char!r}"
            for dot_row in range(4):
                for dot_col in range(2):
                    grid[row * 4 + dot_row, cell * 2 + dot_col] = bool(
                        bits & layout[dot_row][dot_col]
                    )
    return grid


def test_a_rising_line_goes_from_bottom_left_to_top_right() -> None:
    """A ramp starts at the lowest dot of the first column and ends at the top of the last."""
    lines = chart(np.arange(100), np.arange(100.0), width=40, height=4)
    assert len(lines) == 4
    grid = _dots(lines)
    assert grid[-1, 0]
    assert not grid[0, 0]
    assert grid[0, -1]
    assert not grid[-1, -1]
    # Every column holds at least one dot: the line is connected, no gap.
    assert grid.any(axis=0).all()


def test_labels_show_max_min_and_last() -> None:
    """The side labels give the maximum (top), the minimum (bottom) and the last value."""
    values = [3.0, 9.0, 1.0, 5.0]
    lines = chart([0, 1, 2, 3], values, width=40, height=5)
    assert lines[0].endswith("max 9")
    assert lines[-1].endswith("min 1")
    assert sum("last 5" in line for line in lines) == 1


def test_sparse_points_are_joined_and_non_finite_values_leave_a_gap() -> None:
    """Few points over many columns are joined; a NaN between points breaks the line."""
    joined = _dots(chart([0, 10], [0.0, 1.0], width=60, height=4))
    assert joined.any(axis=0).all()
    broken = _dots(chart([0, 5, 10], [0.0, float("nan"), 1.0], width=60, height=4))
    assert not broken.any(axis=0).all()


def test_a_constant_series_is_a_flat_line_and_nothing_finite_is_no_chart() -> None:
    """Equal values draw one flat row; a series without a finite value draws nothing."""
    grid = _dots(chart(range(10), [2.0] * 10, width=30, height=3))
    assert grid.any(axis=0).all()
    assert grid.any(axis=1).sum() == 1
    assert chart([0, 1], [float("nan"), float("inf")], width=30) == []


@pytest.mark.parametrize(("width", "height"), [(19, 4), (40, 1), (True, 4), (40, 2.5)])
def test_bad_sizes_raise_value_error(width: object, height: object) -> None:
    """Sizes the chart cannot use are refused, naming the bad one."""
    with pytest.raises(ValueError, match=r"width|height"):
        chart([0, 1], [0.0, 1.0], width=width, height=height)  # type: ignore[arg-type]


def test_mismatched_sizes_raise_value_error() -> None:
    """Steps and values must pair up."""
    with pytest.raises(ValueError, match="same size"):
        chart([0, 1, 2], [0.0, 1.0])
