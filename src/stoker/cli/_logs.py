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

Errors (a missing directory, no event files, an unknown tag or run, a directory that cannot be
listed, a store that cannot be used, a file that is not an event file) print one line on stderr
naming the path, the cause and the fix, and exit with status 2. A bad record is skipped and
reported the same way by every subcommand: one warning line on stderr after the output, and the
command still succeeds (``ls`` lists a tag whose values cannot be decoded as ``(malformed)``;
``show`` and ``plot``'s time axes leave out a point whose wall time is not a date).

Event files are untrusted: everything printed that came from one (run names, tags, hparams,
warning and error lines) goes through :func:`printable`, so that escape sequences in a tag
cannot retitle, clear or recolour the terminal. CSV written to a file keeps the data exact;
CSV written to standard output is escaped only when that is a terminal. Reading a huge or
badly damaged file shows its progress on stderr when stderr is a terminal.
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
from stoker.cli._walltimes import dated
from stoker.tensorboard import CorruptRecordWarning, EventFileError, Reader, ScalarSeries, is_url

__all__ = ["SPARK_CHARS", "main", "printable", "sparkline"]

SPARK_CHARS = "▁▂▃▄▅▆▇█"
_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen
_CLEAR_LINE = "\r\x1b[K"
_EXIT_ERROR = 2
_PROGRESS_AFTER = 1.0  # seconds of reading before progress is shown
_PROGRESS_EVERY = 0.1


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


def printable(text: str) -> str:
    r"""Return ``text`` with each non-printable character escaped as ``repr`` escapes it.

    Control characters (``ESC``, ``BEL``, newlines), other non-printable code points (bidi
    overrides, zero-width spaces, unassigned ones) become ``\x1b``, ``\n``, ``\u202e``...;
    printable text, non-ASCII letters included, is unchanged.

    Example:
        >>> printable("loss\x1b]0;pwned\x07"), printable("précision")
        ('loss\\x1b]0;pwned\\x07', 'précision')
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


class _Progress:
    """Reading progress on a terminal: shown once reading has taken a second, then updated."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.drawn = 0.0

    def __call__(self, path: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.started < _PROGRESS_AFTER or now - self.drawn < _PROGRESS_EVERY:
            return
        self.drawn = now
        self.stream.write(
            f"{_CLEAR_LINE}stoker logs: reading {printable(path)}: {done >> 20} of "
            f"{total >> 20} MiB"
        )
        self.stream.flush()

    def done(self) -> None:
        """Erase the progress line, if one was drawn."""
        if self.drawn:
            self.stream.write(_CLEAR_LINE)
            self.stream.flush()
            self.drawn = 0.0


def _format_value(value: float) -> str:
    return f"{value:.8g}"


def _format_time(wall_time: float) -> str:
    try:
        stamp = datetime.fromtimestamp(wall_time, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return _format_value(wall_time)
    return stamp.isoformat(timespec="seconds").replace("+00:00", "Z")


def _open_reader(directory: str) -> Reader:
    if not is_url(directory) and not os.path.lexists(directory):
        raise _UsageError(
            f"log directory {directory!r} does not exist; check the spelling or pass the "
            "log_dir given to SummaryWriter"
        )
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    try:
        reader = Reader(directory, progress=progress)
    except EventFileError as err:
        raise _UsageError(str(err)) from err
    finally:
        if progress is not None:
            progress.done()
    if not reader.runs:
        raise _UsageError(
            f"no event files (names containing 'tfevents') under {directory!r}; pass the "
            "log_dir given to SummaryWriter, or a directory above it"
        )
    return reader


def _table_lines(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _table(rows: list[list[str]], stream: TextIO) -> None:
    stream.write("".join(line + "\n" for line in _table_lines(rows)))


_MALFORMED = "(malformed)"


def _malformed(err: EventFileError) -> list[str]:
    """Report a value the reader cannot decode as the one warning line every command prints."""
    warnings.warn(f"{err}; skipping it", CorruptRecordWarning, stacklevel=3)
    return ["-", "-", _MALFORMED]


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
                try:
                    points = getter(tag, run)
                except EventFileError as err:
                    rows.append([run, kind, tag, *_malformed(err)])
                    continue
                last_step = str(points[-1].step) if points else "-"
                rows.append([run, kind, tag, str(len(points)), last_step, "-"])
        if tags["hparams"]:
            try:
                values = reader.hparams(run)[run].hparams
            except EventFileError as err:
                rows.append([run, "hparams", "_hparams_", *_malformed(err)])
                continue
            shown = ", ".join(f"{name}={value}" for name, value in sorted(values.items()))
            rows.append([run, "hparams", "_hparams_", str(len(values)), "-", shown or "-"])
    _table([[printable(cell) for cell in row] for row in rows], out)


def _scalars(reader: Reader, args: argparse.Namespace) -> ScalarSeries:
    """The tag's points, less those whose wall time is not a date (a warning names them)."""
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
    run = args.run
    if run is None:  # the one run with the tag, or reader.scalars would have raised
        run = next(name for name in reader.runs if args.tag in reader.tags(name)["scalars"])
    return dated(series, run, args.tag)


def _render_show(series: ScalarSeries, args: argparse.Namespace, columns: int) -> list[str]:
    """The lines of ``stoker logs show``: statistics, sparkline, chart, then the last rows."""
    count = len(series.step)
    lines = [f"tag {printable(args.tag)}: {count} points"]
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
        try:
            reader.reload()
        except EventFileError as err:  # a file replaced or truncated under us, a store gone
            raise _UsageError(str(err)) from err


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
        writers.write_csv(out, table, text=printable if out.isatty() else str)
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
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CorruptRecordWarning)
            command(args, sys.stdout)
        sys.stdout.flush()
    except _UsageError as err:
        sys.stdout.flush()
        sys.stderr.write(f"stoker logs: error: {printable(str(err))}\n")
        return _EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C ends --follow; anything else it interrupts, quietly
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): stop quietly, and point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    _report(caught)
    return 0


def _report(caught: list[warnings.WarningMessage]) -> None:
    """Print the reader's warnings as one line each; pass any other warning on as it was."""
    shown: set[str] = set()  # --follow meets the same damage at every redraw: say it once
    for warning in caught:
        if issubclass(warning.category, CorruptRecordWarning):
            line = f"stoker logs: warning: {printable(str(warning.message))}\n"
            if line not in shown:
                shown.add(line)
                sys.stderr.write(line)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )


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
