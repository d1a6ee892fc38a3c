"""The ``stoker logs`` subcommands: list a log directory's runs and tags, show a tag, export.

* ``stoker logs ls DIR``: every run and tag with its kind, number of points, last step and
  (for scalars) last value.
* ``stoker logs show DIR TAG``: a scalar tag's statistics, a sparkline of all its values, a
  braille chart fitted to the terminal (:mod:`stoker.cli._chart`) and a table of its last rows;
  ``--follow`` redraws it as the run writes, until Ctrl-C.
* ``stoker logs plot DIR TAG... -o FILE``: the tags drawn with matplotlib, every run overlaid
  and smoothed as TensorBoard smooths (:mod:`stoker.cli._plot`).
* ``stoker logs export DIR --csv FILE`` (or ``--parquet FILE`` when pyarrow is installed): every
  scalar point as rows ``run, tag, step, wall_time, value``.

Errors (a missing directory, no event files, an unknown tag or run) print one line on stderr
and exit with status 2. Corrupt records are skipped; each corrupt stretch is reported on stderr
as a warning after the output, and the command still succeeds.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

import numpy as np

from stoker.cli._chart import MIN_WIDTH, chart
from stoker.tensorboard import CorruptRecordWarning, EventFileError, Reader, ScalarSeries, is_url

__all__ = ["SPARK_CHARS", "main", "sparkline"]

SPARK_CHARS = "▁▂▃▄▅▆▇█"
_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen
_EXIT_ERROR = 2


class _UsageError(Exception):
    """A problem with what the user asked for; reported on stderr with exit status 2."""


def sparkline(values: Sequence[float] | np.ndarray[Any, Any], width: int = 60) -> str:
    """Draw values as a one-line chart of block characters ``▁▂▃▄▅▆▇█``.

    With more values than ``width``, each character shows the mean of one of ``width``
    consecutive, nearly equal slices. Non-finite values (and slices with no finite value) are
    drawn as spaces; when every finite value is equal the line is flat at ``▁``.

    Args:
        values: The values, in order.
        width: Most characters to draw (at least 1).

    Returns:
        The sparkline (empty for no values).

    Example:
        >>> sparkline([0, 1, 2, 3, 4, 5, 6, 7])
        '▁▂▃▄▅▆▇█'
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be an int >= 1, got {width!r}")
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    if data.size == 0:
        return ""
    if data.size > width:
        edges = np.linspace(0, data.size, width + 1).astype(np.int64)
        finite = np.where(np.isfinite(data), data, 0.0)
        counts = np.add.reduceat(np.isfinite(data).astype(np.int64), edges[:-1])
        sums = np.add.reduceat(finite, edges[:-1])
        with np.errstate(invalid="ignore", divide="ignore"):
            data = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    finite_mask = np.isfinite(data)
    if not finite_mask.any():
        return " " * data.size
    low = float(data[finite_mask].min())
    high = float(data[finite_mask].max())
    span = high - low
    top = len(SPARK_CHARS) - 1
    out = []
    for value in data.tolist():
        if not math.isfinite(value):
            out.append(" ")
        elif span == 0 or not math.isfinite(span):
            out.append(SPARK_CHARS[0])
        else:
            out.append(SPARK_CHARS[min(top, int((value - low) / span * top + 0.5))])
    return "".join(out)


def _format_value(value: float) -> str:
    return f"{value:.8g}"


def _format_time(wall_time: float) -> str:
    try:
        stamp = datetime.fromtimestamp(wall_time, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return _format_value(wall_time)
    return stamp.isoformat(timespec="seconds").replace("+00:00", "Z")


def _open_reader(directory: str) -> Reader:
    if not is_url(directory) and not os.path.exists(directory):
        raise _UsageError(f"log directory {directory!r} does not exist")
    try:
        reader = Reader(directory)
    except EventFileError as err:
        raise _UsageError(str(err)) from err
    if not reader.runs:
        raise _UsageError(f"no event files (names containing 'tfevents') under {directory!r}")
    return reader


def _table_lines(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _table(rows: list[list[str]], stream: TextIO) -> None:
    stream.write("".join(line + "\n" for line in _table_lines(rows)))


def _cmd_ls(args: argparse.Namespace, out: TextIO) -> None:
    reader = _open_reader(args.dir)
    runs = [args.run] if args.run is not None else reader.runs
    rows = [["RUN", "KIND", "TAG", "COUNT", "LAST STEP", "LAST VALUE"]]
    for run in runs:
        try:
            tags = reader.tags(run)
        except EventFileError as err:
            raise _UsageError(str(err)) from err
        for tag in tags["scalars"]:
            series = reader.scalars(tag, run)
            last_step = str(series.step[-1]) if len(series.step) else "-"
            last = _format_value(float(series.value[-1])) if len(series.value) else "-"
            rows.append([run, "scalars", tag, str(len(series.step)), last_step, last])
        getters: dict[str, Callable[[str, str], list[Any]]] = {
            "tensors": reader.tensors,
            "histograms": reader.histograms,
            "images": reader.images,
            "audio": reader.audio,
            "text": reader.text,
        }
        for kind, getter in getters.items():
            for tag in tags[kind]:
                points = getter(tag, run)
                last_step = str(points[-1].step) if points else "-"
                rows.append([run, kind, tag, str(len(points)), last_step, "-"])
        if tags["hparams"]:
            values = reader.hparams(run)[run].hparams
            shown = ", ".join(f"{name}={value}" for name, value in sorted(values.items()))
            rows.append([run, "hparams", "_hparams_", str(len(values)), "-", shown or "-"])
    _table(rows, out)


def _scalars(reader: Reader, args: argparse.Namespace) -> ScalarSeries:
    try:
        return reader.scalars(args.tag, args.run)
    except EventFileError as err:
        kinds = [
            kind for kind, tags in reader.tags().items() if kind != "scalars" and args.tag in tags
        ]
        if kinds:
            raise _UsageError(
                f"tag {args.tag!r} holds {kinds[0]}; `stoker logs show` shows scalar tags only"
            ) from err
        raise _UsageError(str(err)) from err


def _render_show(series: ScalarSeries, args: argparse.Namespace, columns: int) -> list[str]:
    """The lines of ``stoker logs show``: statistics, sparkline, chart, then the last rows."""
    count = len(series.step)
    lines = [f"tag {args.tag}: {count} points"]
    if count == 0:
        return lines
    finite = series.value[np.isfinite(series.value)]
    low = _format_value(float(finite.min())) if finite.size else "nan"
    high = _format_value(float(finite.max())) if finite.size else "nan"
    lines.append(
        f"steps {series.step[0]}..{series.step[-1]}  min {low}  max {high}  "
        f"last {_format_value(float(series.value[-1]))}"
    )
    lines.append(sparkline(series.value, args.width))
    if args.height > 0 and columns >= MIN_WIDTH:
        lines += chart(series.step, series.value, width=columns, height=args.height)
    first = 0 if args.all else max(0, count - args.rows)
    rows = [["STEP", "WALL TIME (UTC)", "VALUE"]]
    for index in range(first, count):
        rows.append(
            [
                str(series.step[index]),
                _format_time(float(series.wall_time[index])),
                _format_value(float(series.value[index])),
            ]
        )
    lines += _table_lines(rows)
    if first > 0:
        lines.append(f"(last {count - first} of {count} rows; --all prints every row)")
    return lines


def _cmd_show(args: argparse.Namespace, out: TextIO) -> None:
    reader = _open_reader(args.dir)
    columns = min(shutil.get_terminal_size((80, 24)).columns, 160)
    if not args.follow:
        out.write(
            "".join(line + "\n" for line in _render_show(_scalars(reader, args), args, columns))
        )
        return
    # --follow: redraw while the run writes; on a terminal in place, elsewhere each new state
    # after a blank line. Ctrl-C ends it (main() turns KeyboardInterrupt into exit status 0).
    in_place = out.isatty()
    shown = -1
    while True:
        series = _scalars(reader, args)
        if len(series.step) != shown:
            shown = len(series.step)
            columns = min(shutil.get_terminal_size((80, 24)).columns, 160)
            text = "".join(line + "\n" for line in _render_show(series, args, columns))
            out.write(_CLEAR + text if in_place else text + "\n")
            out.flush()
        time.sleep(args.interval)
        reader.reload()


def _cmd_export(args: argparse.Namespace, out: TextIO) -> None:
    reader = _open_reader(args.dir)
    try:
        table = reader.scalar_table(args.run)
    except EventFileError as err:
        raise _UsageError(str(err)) from err
    writers = importlib.import_module("stoker.cli._export")
    if args.parquet is not None:
        try:
            count = writers.write_parquet(args.parquet, table)
        except ImportError as err:
            raise _UsageError(
                "--parquet needs pyarrow, which is not installed; run `pip install pyarrow` "
                "or export with --csv"
            ) from err
        except OSError as err:
            raise _UsageError(f"cannot write {args.parquet!r}: {err}") from err
        destination = args.parquet
    elif args.csv == "-":
        writers.write_csv(out, table)
        return
    else:
        try:
            with open(args.csv, "w", newline="", encoding="utf-8") as stream:
                count = writers.write_csv(stream, table)
        except OSError as err:
            raise _UsageError(f"cannot write {args.csv!r}: {err}") from err
        destination = args.csv
    out.write(f"wrote {count} rows to {destination}\n")


def main(args: argparse.Namespace) -> int:
    """Run the ``stoker logs`` subcommand named by ``args.logs_command``; return the exit status.

    The output goes to stdout; corrupt-record warnings and errors to stderr, after the output.
    """
    command = _COMMANDS[args.logs_command]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CorruptRecordWarning)
            command(args, sys.stdout)
        sys.stdout.flush()
        for warning in caught:
            if issubclass(warning.category, CorruptRecordWarning):
                sys.stderr.write(f"stoker logs: warning: {warning.message}\n")
            else:
                warnings.warn_explicit(
                    warning.message, warning.category, warning.filename, warning.lineno
                )
    except _UsageError as err:
        sys.stderr.write(f"stoker logs: error: {err}\n")
        return _EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C ends --follow; anything else it interrupts, quietly
        sys.stdout.write("\n")
        sys.stdout.flush()
        return 0
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): stop quietly, and point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return 0


def _cmd_plot(args: argparse.Namespace, out: TextIO) -> None:
    plotting = importlib.import_module("stoker.cli._plot")
    reader = _open_reader(args.dir)
    try:
        drawn = plotting.plot(
            reader,
            args.tags,
            args.output,
            runs=args.run,
            smoothing=args.smoothing,
            x=args.x,
            log_y=args.log_y,
        )
    except (ImportError, ValueError) as err:
        raise _UsageError(str(err)) from err
    except OSError as err:
        raise _UsageError(f"cannot write {args.output!r}: {err}") from err
    runs = sorted({run for names in drawn.values() for run in names})
    out.write(f"wrote {len(drawn)} chart(s) of {len(runs)} run(s) to {args.output}\n")


_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], None]] = {
    "ls": _cmd_ls,
    "show": _cmd_show,
    "export": _cmd_export,
    "plot": _cmd_plot,
}
