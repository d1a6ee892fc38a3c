"""Wall times as dates: the points of a series whose wall time a date axis or column can show.

An event's ``wall_time`` is a float read from the file, and a damaged or hand-made file can hold
``1e300``, ``nan``, ``inf`` or ``-1e20`` there: no ``datetime`` (years 1 to 9999) holds those,
so ``datetime.fromtimestamp`` and matplotlib's date axis raise on them (``OverflowError``,
``ValueError``). Wherever the commands turn wall times into dates (``stoker logs show``'s
table, ``stoker logs plot --x wall`` and ``--x relative``), :func:`dated` keeps the points whose
wall time is a date and reports the others as a malformed value is reported: one
:class:`~stoker.tensorboard.CorruptRecordWarning` per series naming the run and the tag. The
export writes wall times as the numbers they are, and needs no such check.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from typing import Any

import numpy as np

from stoker.tensorboard import CorruptRecordWarning, ScalarSeries

__all__ = ["FIRST_DATE", "LAST_DATE", "dated", "is_date"]

FIRST_DATE = datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()
"""The earliest wall time that is a date: 0001-01-01T00:00:00Z (``datetime.min``)."""
LAST_DATE = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
"""The latest wall time taken as a date: 9999-12-31T23:59:59Z (a second inside ``datetime.max``,
so that rounding to microseconds cannot carry it into year 10000)."""


def is_date(wall_time: Any) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Tell, for each wall time (seconds since the epoch), whether it is a date in years 1-9999.

    ``nan`` and both infinities are not.

    Example:
        >>> is_date([0.0, 1e300, float("nan"), -1e20, 1.7e9]).tolist()
        [True, False, False, False, True]
    """
    seconds = np.asarray(wall_time, dtype=np.float64)
    result: np.ndarray[Any, np.dtype[np.bool_]] = (seconds >= FIRST_DATE) & (seconds <= LAST_DATE)
    return result


def dated(series: ScalarSeries, run: str, tag: str) -> ScalarSeries:
    """Return ``series`` without the points whose wall time is not a date, warning about them.

    Args:
        series: One scalar tag of one run.
        run: The run's name, for the warning.
        tag: The tag, for the warning.

    Returns:
        ``series`` itself when every wall time is a date; else the other points, in order.

    Warns:
        CorruptRecordWarning: once, naming the run, the tag, how many points were skipped and
            the first of them.
    """
    keep = is_date(series.wall_time)
    if keep.all():
        return series
    first = int(np.flatnonzero(~keep)[0])
    warnings.warn(
        f"run {run!r} tag {tag!r}: {int((~keep).sum())} point(s) have a wall time that is not "
        f"a date in years 1-9999 (the first at step {int(series.step[first])}: "
        f"{float(series.wall_time[first])!r}); skipping them",
        CorruptRecordWarning,
        stacklevel=2,
    )
    return ScalarSeries(series.step[keep], series.wall_time[keep], series.value[keep])
