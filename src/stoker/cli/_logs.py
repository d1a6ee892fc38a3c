"""The ``stoker logs`` subcommands: list a log directory's runs and tags, show a tag, export.

* ``stoker logs ls DIR``: every run and tag with its kind, number of points, last step and
  (for scalars) last value.
* ``stoker logs show DIR TAG``: a scalar tag's statistics, a sparkline of all its values and a
  table of its last rows.
* ``stoker logs export DIR --csv FILE`` (or ``--parquet FILE`` when pyarrow is installed): every
  scalar point as rows ``run, tag, step, wall_time, value``.

Errors (a missing directory, no event files, an unknown tag or run) print one line on stderr
and exit with status 2. Corrupt records are skipped; each corrupt stretch is reported on stderr
as a warning after the output, and the command still succeeds.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

import numpy as np

from stoker.tensorboard import CorruptRecordWarning, EventFileError, Reader, is_url

__all__ = ["add_logs_parser", "sparkline"]

SPARK_CHARS = "▁▂▃▄▅▆▇█"
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


def _table(rows: list[list[str]], stream: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        stream.write(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
        stream.write("\n")


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


def _cmd_show(args: argparse.Namespace, out: TextIO) -> None:
    reader = _open_reader(args.dir)
    try:
        series = reader.scalars(args.tag, args.run)
    except EventFileError as err:
        kinds = [
            kind for kind, tags in reader.tags().items() if kind != "scalars" and args.tag in tags
        ]
        if kinds:
            raise _UsageError(
                f"tag {args.tag!r} holds {kinds[0]}; `stoker logs show` shows scalar tags only"
            ) from err
        raise _UsageError(str(err)) from err
    count = len(series.step)
    out.write(f"tag {args.tag}: {count} points\n")
    if count == 0:
        return
    finite = series.value[np.isfinite(series.value)]
    low = _format_value(float(finite.min())) if finite.size else "nan"
    high = _format_value(float(finite.max())) if finite.size else "nan"
    out.write(
        f"steps {series.step[0]}..{series.step[-1]}  min {low}  max {high}  "
        f"last {_format_value(float(series.value[-1]))}\n"
    )
    out.write(sparkline(series.value, args.width) + "\n")
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
    _table(rows, out)
    if first > 0:
        out.write(f"(last {count - first} of {count} rows; --all prints every row)\n")


def _cmd_export(args: argparse.Namespace, out: TextIO) -> None:
    reader = _open_reader(args.dir)
    try:
        table = reader.scalar_table(args.run)
    except EventFileError as err:
        raise _UsageError(str(err)) from err
    if args.parquet is not None:
        try:
            pyarrow = importlib.import_module("pyarrow")
            parquet = importlib.import_module("pyarrow.parquet")
        except ImportError as err:
            raise _UsageError(
                "--parquet needs pyarrow, which is not installed; run `pip install pyarrow` "
                "or export with --csv"
            ) from err
        columns = {name: column.tolist() if column.dtype == object else column
                   for name, column in table.items()}  # fmt: skip
        parquet.write_table(pyarrow.table(columns), args.parquet)
        destination = args.parquet
    else:
        rows = zip(
            table["run"].tolist(),
            table["tag"].tolist(),
            table["step"].tolist(),
            map(repr, table["wall_time"].tolist()),
            map(repr, table["value"].tolist()),
            strict=True,
        )
        if args.csv == "-":
            _write_csv(out, rows)
            return
        try:
            with open(args.csv, "w", newline="", encoding="utf-8") as stream:
                _write_csv(stream, rows)
        except OSError as err:
            raise _UsageError(f"cannot write {args.csv!r}: {err}") from err
        destination = args.csv
    out.write(f"wrote {len(table['step'])} rows to {destination}\n")


def _write_csv(stream: TextIO, rows: Any) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["run", "tag", "step", "wall_time", "value"])
    writer.writerows(rows)


def _runner(
    command: Callable[[argparse.Namespace, TextIO], None],
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
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
        except BrokenPipeError:
            # The reader of our output went away (e.g. `| head`): stop quietly, and point
            # stdout at /dev/null so that the interpreter's final flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return 1
        return 0

    return run


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from err
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return number


def add_logs_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``logs`` and its subcommands ``ls``, ``show`` and ``export``.

    Each subcommand's parser gets a ``func`` default taking the parsed arguments and returning
    the exit status (0, or 2 after printing an error on stderr).

    Args:
        subparsers: What ``ArgumentParser.add_subparsers()`` returned for the ``stoker`` parser.
    """
    logs = subparsers.add_parser(
        "logs",
        help="inspect TensorBoard logs: list, show and export values",
        description="Read TensorBoard event files written by any SummaryWriter.",
    )
    commands = logs.add_subparsers(dest="logs_command", metavar="SUBCOMMAND", required=True)

    ls = commands.add_parser("ls", help="list runs and tags with counts and last values")
    ls.add_argument("dir", help="log directory (runs are found recursively) or event file")
    ls.add_argument("--run", help="only this run (a directory relative to DIR, '.' for DIR)")
    ls.set_defaults(func=_runner(_cmd_ls))

    show = commands.add_parser("show", help="show a scalar tag with a sparkline")
    show.add_argument("dir", help="log directory or event file")
    show.add_argument("tag", help="the scalar tag")
    show.add_argument("--run", help="the run, when several runs have the tag")
    show.add_argument("--rows", type=_positive, default=20, help="last rows to print (20)")
    show.add_argument("--all", action="store_true", help="print every row")
    show.add_argument("--width", type=_positive, default=60, help="sparkline width (60)")
    show.set_defaults(func=_runner(_cmd_show))

    export = commands.add_parser("export", help="export every scalar point as a table")
    export.add_argument("dir", help="log directory or event file")
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--csv", metavar="FILE", help="write CSV ('-' for standard output)")
    target.add_argument("--parquet", metavar="FILE", help="write Parquet (needs pyarrow)")
    export.add_argument("--run", help="only this run")
    export.set_defaults(func=_runner(_cmd_export))
