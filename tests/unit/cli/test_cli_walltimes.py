"""Wall times as dates: which floats a datetime holds, and the points of a series left out."""

from __future__ import annotations

import doctest
import warnings
from datetime import datetime, timezone

import numpy as np
import pytest

from stoker.cli import _walltimes
from stoker.cli._walltimes import FIRST_DATE, LAST_DATE, dated, is_date
from stoker.tensorboard import CorruptRecordWarning, ScalarSeries

_DATES = [FIRST_DATE, LAST_DATE, 0.0, -1.0, 1.7e9, -6.2e10, 2.5e11]
_NOT_DATES = [1e300, -1e300, float("nan"), float("inf"), float("-inf"), -1e20, 1e12]
_NOT_DATES += [FIRST_DATE - 1, LAST_DATE + 1]


def test_is_date_is_true_exactly_where_datetime_and_matplotlib_convert() -> None:
    """Wall times is_date accepts convert to dates; those it refuses make fromtimestamp raise.

    Every wall time is_date accepts converts with datetime.fromtimestamp and matplotlib's
    num2date; every one it refuses makes fromtimestamp raise (1e300 made plot --x wall crash).
    """
    dates = pytest.importorskip("matplotlib.dates")
    assert is_date(_DATES).all()
    for seconds in _DATES:
        datetime.fromtimestamp(seconds, tz=timezone.utc)
    dates.num2date(np.asarray(_DATES) / 86400.0)
    assert not is_date(_NOT_DATES).any()
    for seconds in _NOT_DATES:
        with pytest.raises((OverflowError, OSError, ValueError)):
            datetime.fromtimestamp(seconds, tz=timezone.utc)


def _series(walls: list[float]) -> ScalarSeries:
    count = len(walls)
    return ScalarSeries(
        np.arange(count, dtype=np.int64) * 10,
        np.asarray(walls, dtype=np.float64),
        np.arange(count, dtype=np.float64) / 2,
    )


def test_dated_keeps_a_clean_series_as_it_is_without_a_warning() -> None:
    """A series whose wall times are all dates comes back unchanged, and nothing is said."""
    series = _series([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dated(series, "train", "loss") is series


def test_dated_leaves_out_each_undated_point_with_one_warning_naming_run_and_tag() -> None:
    """Points whose wall time is not a date go, with one CorruptRecordWarning; the rest stay.

    The points whose wall time is not a date go, the others stay in order with their steps
    and values; one CorruptRecordWarning names the run, the tag, the count and the first.
    """
    series = _series([1.0, 1e300, 2.0, float("nan"), float("inf"), 3.0])
    with pytest.warns(CorruptRecordWarning) as caught:
        kept = dated(series, "train", "loss")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "run 'train' tag 'loss': 3 point(s)" in message
    assert "step 10: 1e+300" in message
    assert kept.step.tolist() == [0, 20, 50]
    assert kept.wall_time.tolist() == [1.0, 2.0, 3.0]
    assert kept.value.tolist() == [0.0, 1.0, 2.5]


def test_docstring_examples_run() -> None:
    """The module's examples hold."""
    assert doctest.testmod(_walltimes).failed == 0
