"""The scalar routes of TensorBoard's HTTP API, answered from the reader's columns.

TensorBoard's web server answers ``/data/plugin/scalars/scalars``,
``/data/plugin/scalars/scalars_multirun`` and the scalar requests of
``/data/plugin/timeseries/timeSeries`` by asking its data provider for the points, building a
Python object per point and encoding them with ``json``: on a sweep of a thousand runs that is
most of the time to the page's first chart and all of a refresh. These functions build the same
answers from the NumPy columns of :meth:`Provider.scalar_columns`: the same points (downsampled
as TensorBoard asks: its ``--samples_per_plugin scalars=N``, 1,000 by default), the same values
(float32, as the protocol carries them), the same JSON shapes and key order, with NaN and the
infinities as the strings TensorBoard's ``json_util.Cleanse`` writes. Numbers are written by
``orjson`` when it is installed (the ``tensorboard`` extra brings it), about ten times faster
than ``json``; a JSON parser reads the same numbers from either.

Each ``*_answer`` function takes what the route was asked and returns the JSON bytes, or None
when the request is one TensorBoard answers differently (an error, a CSV, a plugin other than
scalars): those go to TensorBoard's web server, which answers them itself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stoker.board._provider import Provider, ScalarColumns

__all__ = [
    "SCALARS_PLUGIN",
    "dumps",
    "multirun_answer",
    "scalars_answer",
    "time_series_answer",
]

SCALARS_PLUGIN = "scalars"
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _json_dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


def _orjson() -> Any:
    try:
        import orjson  # noqa: PLC0415 - optional: json writes the same values, slower
    except ImportError:
        return None
    return orjson


_fast = _orjson()
"""The ``orjson`` module, or None without it."""

dumps: Callable[[Any], bytes] = _json_dumps if _fast is None else _fast.dumps
"""Encode an answer (finite floats, str keys, int64 ints) as JSON bytes."""


def _cleansed(column: np.ndarray[Any, Any]) -> list[Any]:
    """A float column as Python floats, NaN and the infinities as Cleanse's strings."""
    values: list[Any] = column.tolist()
    if not np.isfinite(column).all():
        values = [
            value if math.isfinite(value) else
            "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
            for value in values
        ]  # fmt: skip
    return values


def _rows(columns: ScalarColumns) -> list[tuple[Any, Any, Any]]:
    """``[wall_time, step, value]`` per point, the scalars route's shape."""
    steps, walls, values = columns
    return list(zip(_cleansed(walls), steps.tolist(), _cleansed(values), strict=True))


def _data(columns: ScalarColumns) -> list[dict[str, Any]]:
    """``{"wallTime", "step", "value"}`` per point, the time series route's shape."""
    steps, walls, values = columns
    return [
        {"wallTime": wall, "step": step, "value": value}
        for wall, step, value in zip(
            _cleansed(walls), steps.tolist(), _cleansed(values), strict=True
        )
    ]


# The text around each point's three numbers in the time series route's JSON.
_POINT_PARTS = (b'},{"wallTime":', b',"step":', b',"value":')
_SPLICED_FROM = 100  # points; a shorter series is written faster as dicts


def _data_json(columns: ScalarColumns) -> bytes:
    """``dumps(_data(columns))``, the same bytes, without a Python object per point.

    With ``orjson``, a series of finite numbers is written a column at a time (``orjson``
    writes a NumPy column's numbers as it writes the same Python numbers) and the points'
    text put together around them: 1.4 to 1.7 times faster than building and encoding a dict
    per point, which is most of a Time Series card's time on a sweep. Other series (short
    ones, those holding NaN or the infinities, which are Cleanse's strings) and ``json``
    take the dicts.
    """
    steps, walls, values = columns
    count = len(steps)
    if (
        count < _SPLICED_FROM
        or dumps is not getattr(_fast, "dumps", None)  # orjson's, and not replaced
        or not (np.isfinite(walls).all() and np.isfinite(values).all())
    ):
        return dumps(_data(columns))
    parts: list[bytes] = [b""] * (6 * count)
    for slot, (text, column) in enumerate(zip(_POINT_PARTS, (walls, steps, values), strict=True)):
        parts[2 * slot :: 6] = [text] * count
        numbers = np.ascontiguousarray(column, np.int64 if slot == 1 else np.float64)
        text_of_column = _fast.dumps(numbers, option=_fast.OPT_SERIALIZE_NUMPY)
        parts[2 * slot + 1 :: 6] = text_of_column[1:-1].split(b",")
    # The first point's text loses its leading "},", the last point gains its closing "}".
    return b"[" + b"".join(parts)[2:] + b"}]"


def scalars_answer(provider: Provider, run: str, tag: str, num_points: int) -> bytes | None:
    """``GET /data/plugin/scalars/scalars?run=&tag=`` (JSON): the series' rows.

    None when the run holds no such series (TensorBoard answers 404).
    """
    found = provider.scalar_columns(SCALARS_PLUGIN, tag, [run], num_points)
    if not found:
        return None
    ((_, columns),) = found
    return dumps(_rows(columns))


def multirun_answer(provider: Provider, tag: str, runs: Sequence[str], num_points: int) -> bytes:
    """``POST /data/plugin/scalars/scalars_multirun``: ``{run: rows}`` for the runs holding it."""
    found = provider.scalar_columns(SCALARS_PLUGIN, tag, runs, num_points)
    return dumps({run: _rows(columns) for run, columns in found})


def _simple(request: Any) -> bool:
    """Whether a time series request is a valid scalar one, answered here as TensorBoard would."""
    if not isinstance(request, dict) or request.get("plugin") != SCALARS_PLUGIN:
        return False
    run = request.get("run")
    sample = request.get("sample")
    return (
        isinstance(request.get("tag"), str)
        and (run is None or isinstance(run, str))
        and (not isinstance(sample, int) or _INT64[0] <= sample <= _INT64[1])
    )


def time_series_answer(provider: Provider, requests: Any, num_points: int) -> bytes | None:
    """``/data/plugin/timeseries/timeSeries``: one answer per request, for scalar requests.

    None unless every request is a valid scalar one (the others, and errors, are
    TensorBoard's). Each answer repeats the request's ``plugin``, ``tag``, ``run`` (a str)
    and ``sample`` (an int) and maps each run holding the tag to its points; a request with
    no run (or an empty one) asks every run.
    """
    if not isinstance(requests, list) or not all(_simple(request) for request in requests):
        return None
    answers = [b"["]  # the pieces of the answer, joined once (a sweep's card is tens of MB)
    for number, request in enumerate(requests):
        tag, run, sample = request["tag"], request.get("run"), request.get("sample")
        answer: dict[str, Any] = {"plugin": SCALARS_PLUGIN, "tag": tag}
        if isinstance(run, str):
            answer["run"] = run
        if isinstance(sample, int):
            answer["sample"] = sample
        found = provider.scalar_columns(SCALARS_PLUGIN, tag, [run] if run else None, num_points)
        # The answer's keys as dumps writes them, then its last, runToSeries, written here.
        series = b",".join(dumps(name) + b":" + _data_json(columns) for name, columns in found)
        answers += [b"," if number else b"", dumps(answer)[:-1], b',"runToSeries":{', series, b"}}"]
    answers.append(b"]")
    return b"".join(answers)
