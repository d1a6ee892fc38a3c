"""``stoker logs plot``: scalar tags drawn to a PNG, SVG or PDF file with matplotlib.

One chart per tag, every run that has the tag overlaid in its own colour (the same colour for a
run on every chart) with a legend; the line is smoothed the way TensorBoard smooths it, with the
raw values drawn faintly behind. The x axis is the step, the wall time, or the hours since the
run's first point (TensorBoard's "relative"); the y axis may be logarithmic. On a time axis, a
point whose wall time is not a date (``1e300``, ``nan``: a damaged file) is left out with a
warning naming its run and tag (:mod:`stoker.cli._walltimes`). matplotlib is an
optional extra, imported only here, with the Agg backend (no display needed).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stoker.cli._walltimes import dated
from stoker.tensorboard import Reader

__all__ = ["AXES", "FORMATS", "MissingExtraError", "plot", "smooth"]

AXES = ("step", "relative", "wall")
FORMATS = (".png", ".svg", ".pdf")
_RAW_ALPHA = 0.25


class MissingExtraError(ImportError):
    """matplotlib is not installed; the message names the extra that brings it."""


def smooth(values: Any, weight: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    """TensorBoard's smoothing: a debiased exponential moving average.

    As TensorBoard's scalar chart computes it: ``last = last * w + (1 - w) * value``, divided
    by ``1 - w ** n`` after ``n`` finite values so the start is not pulled towards 0. Non-finite
    values pass through unsmoothed and do not enter the average; a constant series is returned
    unchanged.

    Args:
        values: The series.
        weight: The smoothing weight in ``[0, 1)``; 0 returns the values unchanged.

    Returns:
        The smoothed series as ``float64``.

    Raises:
        ValueError: if ``weight`` is outside ``[0, 1)``.
    """
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight < 1:
        raise ValueError(f"smoothing must be a number in [0, 1), got {weight!r}")
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    out: np.ndarray[Any, np.dtype[np.float64]] = data.copy()
    finite = np.isfinite(data)
    if weight == 0 or data.size == 0 or np.all(data == data[0]):
        return out
    last = 0.0
    for count, position in enumerate(np.flatnonzero(finite).tolist(), start=1):
        last = last * weight + (1 - weight) * float(data[position])
        out[position] = last / (1 - weight**count)
    return out


def _pyplot() -> Any:
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError as err:
        raise MissingExtraError(
            "stoker logs plot needs matplotlib, which is not installed: "
            "pip install 'stoker[matplotlib]' (or pip install matplotlib)"
        ) from err
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def _x_values(x: str, steps: Any, wall_times: Any) -> Any:
    if x == "step":
        return steps
    if x == "relative":
        return (wall_times - wall_times[0]) / 3600.0 if len(wall_times) else wall_times
    dates = importlib.import_module("matplotlib.dates")
    return dates.num2date(np.asarray(wall_times) / 86400.0)


def _literal(text: str) -> str:
    """Text matplotlib draws as it is: a ``$`` in a run name must not start mathtext."""
    return text.replace("$", r"\$")


def plot(
    reader: Reader,
    tags: Sequence[str],
    output: str,
    *,
    runs: Sequence[str] | None = None,
    smoothing: float = 0.6,
    x: str = "step",
    log_y: bool = False,
) -> dict[str, list[str]]:
    """Draw each tag's scalars from every run that has it and save the figure to ``output``.

    Args:
        reader: The log directory, read.
        tags: The scalar tags, one chart each, in this order.
        output: The file to write; its suffix picks the format (``.png``, ``.svg``, ``.pdf``).
        runs: Only these runs (default: all).
        smoothing: TensorBoard's smoothing weight in ``[0, 1)`` (0.6 by default, as TensorBoard).
        x: ``"step"``, ``"relative"`` (hours since the run's first point) or ``"wall"``.
        log_y: A logarithmic y axis (non-positive values are left out by matplotlib).

    Returns:
        For each tag, the runs drawn on its chart.

    Raises:
        MissingExtraError: if matplotlib is not installed.
        ValueError: for an unknown format, axis or smoothing, or a tag that no run holds as
            scalars.

    Warns:
        CorruptRecordWarning: for a run and tag with points whose wall time is not a date,
            which are left out when ``x`` is ``"wall"`` or ``"relative"``.
    """
    suffix = output[output.rfind(".") :].lower() if "." in output else ""
    if suffix not in FORMATS:
        raise ValueError(f"output must end in one of {', '.join(FORMATS)}, got {output!r}")
    if x not in AXES:
        raise ValueError(f"x must be one of {', '.join(AXES)}, got {x!r}")
    smooth([], smoothing)  # validates the weight before any drawing
    chosen = list(reader.runs) if runs is None else list(runs)
    unknown = sorted(set(chosen) - set(reader.runs))
    if unknown:
        raise ValueError(f"no run named {unknown[0]!r}; runs are {', '.join(reader.runs)}")
    per_tag: dict[str, list[str]] = {}
    for tag in tags:
        per_tag[tag] = [run for run in chosen if tag in reader.tags(run).get("scalars", [])]
        if not per_tag[tag]:
            raise ValueError(f"no run has the scalar tag {tag!r}; `stoker logs ls` lists the tags")
    pyplot = _pyplot()
    colours = pyplot.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn = [run for run in chosen if any(run in names for names in per_tag.values())]
    colour_of = {run: colours[i % len(colours)] for i, run in enumerate(drawn)}
    columns = 1 if len(tags) == 1 else 2
    rows = math.ceil(len(tags) / columns)
    figure, axes = pyplot.subplots(
        rows, columns, figsize=(6.4 * columns, 3.8 * rows), squeeze=False
    )
    try:
        for chart, tag in zip(axes.flat, tags, strict=False):
            for run in per_tag[tag]:
                series = reader.scalars(tag, run)
                if x != "step":  # a time axis: a wall time that is not a date has no place
                    series = dated(series, run, tag)
                xs = _x_values(x, series.step, series.wall_time)
                colour = colour_of[run]
                if smoothing > 0:
                    chart.plot(xs, series.value, color=colour, alpha=_RAW_ALPHA, linewidth=1)
                chart.plot(xs, smooth(series.value, smoothing), color=colour, label=_literal(run))
            chart.set_title(_literal(tag))
            chart.set_xlabel({"step": "step", "relative": "hours", "wall": "wall time"}[x])
            if log_y:
                chart.set_yscale("log")
            chart.grid(True, alpha=0.3)
            chart.legend(fontsize="small")
        for unused in list(axes.flat)[len(tags) :]:
            unused.set_visible(False)
        figure.tight_layout()
        figure.savefig(output, dpi=100)
    finally:
        pyplot.close(figure)
    return per_tag
