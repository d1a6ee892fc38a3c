"""The ``stoker`` command's argument parsers, built without importing any subcommand's code.

``stoker --help`` and every parse error need only :mod:`argparse`; a subcommand's module (the
demo with :mod:`stoker.data`, the log tools with the reader) is imported when that subcommand
runs, through :class:`Lazy`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

__all__ = ["Lazy", "Parser", "add_demo_parser", "add_logs_parser", "float_option", "int_option"]


@dataclass(frozen=True)
class Lazy:
    """A subcommand's entry point, ``module:function``, imported on first call."""

    module: str
    function: str

    def __call__(self, args: argparse.Namespace) -> int:
        """Import the module, call the function with the parsed arguments, return its status."""
        entry = getattr(importlib.import_module(self.module), self.function)
        code: int = entry(args)
        return code


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, as the subcommands' are.

    argparse prints the whole usage before its error line; here the line alone says which
    option, what was given and what is valid, and where the usage is (exit status 2, as
    argparse's). Subparsers made from it are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` as one line and exit with status 2."""
        line = " ".join(message.splitlines())
        self.exit(2, f"{self.prog}: error: {line}; see `{self.prog} --help`\n")


def _number(text: str, kind: type[int] | type[float], expected: str) -> Any:
    try:
        return kind(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}") from err


def int_option(low: int, high: int | None = None, *, or_zero: bool = False) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (no bound for None), or 0.

    Args:
        low: The smallest value.
        high: The largest value, or ``None`` for none.
        or_zero: 0 is valid too (it turns something off), below ``low``.

    Returns:
        The function argparse calls on the option's text; it raises
        ``argparse.ArgumentTypeError`` naming the value and the range.
    """
    expected = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
    if or_zero:
        expected = f"0 or {expected}"

    def parse(text: str) -> int:
        number: int = _number(text, int, expected)
        in_range = number >= low and (high is None or number <= high)
        if not (in_range or (or_zero and number == 0)):
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return number

    return parse


def float_option(
    low: float, high: float, *, high_open: bool = False, low_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite number in the interval from ``low`` to ``high``.

    ``nan`` and ``inf`` are outside every such interval.

    Args:
        low: The lower end.
        high: The upper end.
        high_open: ``high`` itself is outside, as in ``[0, 1)``.
        low_open: ``low`` itself is outside, as in ``(0, 10]``.

    Returns:
        The function argparse calls on the option's text; it raises
        ``argparse.ArgumentTypeError`` naming the value and the interval.
    """
    expected = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        number: float = _number(text, float, expected)
        above = number > low if low_open else number >= low
        below = number < high if high_open else number <= high
        if not (above and below):  # False for nan and both infinities
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return number

    return parse


_POSITIVE = int_option(1)


def add_demo_parser(subparsers: Any) -> None:
    """Register ``stoker demo`` and its options on ``subparsers``."""
    parser = subparsers.add_parser(
        "demo",
        help="train a small model on drawn shapes and log it to TensorBoard",
        description="Train a small NumPy model on drawn shapes through both ends of stoker.",
    )
    parser.add_argument("--epochs", type=_POSITIVE, default=8, help="passes over the data (8)")
    parser.add_argument("--batch-size", type=_POSITIVE, default=64, help="samples per batch (64)")
    # 64 is more than the demo's small batches can keep busy; a huge count would start them all.
    parser.add_argument(
        "--workers", type=int_option(0, 64), default=2, help="loader worker processes, 0-64 (2)"
    )
    parser.add_argument(
        "--logdir", default=None, help="run directory (default: runs/demo/<date-time>)"
    )
    parser.add_argument(
        "--seed", type=int_option(0), default=0, help="seed for data, split and model (0)"
    )
    # At least 5 leaves the 20% validation split one image; 100,000 images take 314 MB.
    parser.add_argument(
        "--samples",
        type=int_option(5, 100_000),
        default=4000,
        help="images drawn, 5-100000 (4000)",
    )
    parser.add_argument(
        "--lr",
        type=float_option(0, 10, low_open=True),
        default=0.05,
        help="peak learning rate, in (0, 10] (0.05)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tensorboard", action="store_true", help="serve TensorBoard on 127.0.0.1 afterwards"
    )
    parser.add_argument(
        "--port", type=int_option(1, 65535), default=6006, help="TensorBoard port (6006)"
    )
    parser.set_defaults(func=Lazy("stoker.cli._demo", "main"))


def add_board_parser(subparsers: Any) -> None:
    """Register ``stoker board`` and its options on ``subparsers``."""
    parser = subparsers.add_parser(
        "board",
        help="TensorBoard's page on stoker's reader (fast on big sweeps and S3)",
        description=(
            "Serve TensorBoard's own web page with its data read by stoker's reader: a gRPC "
            "data server on a free port and TensorBoard's web server connected to it. "
            "Arguments after -- go to tensorboard (e.g. -- --samples_per_plugin scalars=5000), "
            "but for the flags stoker board sets itself: --logdir, --grpc_data_provider, "
            "--host, --port and --bind_all."
        ),
    )
    parser.add_argument("logdir", help="log directory, event file, or URL (s3://bucket/prefix)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (127.0.0.1)")
    parser.add_argument(
        "--port", type=int_option(1, 65535), default=6006, help="TensorBoard's port (6006)"
    )
    parser.add_argument(
        "--reload-interval",
        type=float_option(0, 86400),
        default=5.0,
        help="seconds between reads of new data, 0 for none (5)",
    )
    parser.add_argument(
        "--data-server-only",
        action="store_true",
        help="serve the data alone and print the --grpc_data_provider flag for tensorboard",
    )
    parser.set_defaults(func=Lazy("stoker.cli._board", "main"), tensorboard_args=[])


def add_logs_parser(subparsers: Any) -> None:
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
    run = Lazy("stoker.cli._logs", "main")

    ls = commands.add_parser("ls", help="list runs and tags with counts and last values")
    ls.add_argument("dir", help="log directory (runs are found recursively) or event file")
    ls.add_argument("--run", help="only this run (a directory relative to DIR, '.' for DIR)")
    ls.set_defaults(func=run)

    show = commands.add_parser("show", help="show a scalar tag with a sparkline")
    show.add_argument("dir", help="log directory or event file")
    show.add_argument("tag", help="the scalar tag")
    show.add_argument("--run", help="the run, when several runs have the tag")
    show.add_argument("--rows", type=_POSITIVE, default=20, help="last rows to print (20)")
    show.add_argument("--all", action="store_true", help="print every row")
    show.add_argument("--width", type=_POSITIVE, default=60, help="sparkline width (60)")
    # The chart's grid is height x width cells: a height in the millions would not fit memory.
    show.add_argument(
        "--height",
        type=int_option(2, 1000, or_zero=True),
        default=8,
        help="chart rows, 2-1000, fitted to the terminal width (8; 0: none)",
    )
    show.add_argument(
        "--follow", action="store_true", help="keep redrawing as the run writes, until Ctrl-C"
    )
    show.add_argument(
        "--interval",
        type=float_option(0.01, 86400),
        default=1.0,
        help="seconds between reads with --follow, 0.01-86400 (1)",
    )
    show.set_defaults(func=run)

    export = commands.add_parser("export", help="export every scalar point as a table")
    export.add_argument("dir", help="log directory or event file")
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--csv", metavar="FILE", help="write CSV ('-' for standard output)")
    target.add_argument("--parquet", metavar="FILE", help="write Parquet (needs pyarrow)")
    export.add_argument("--run", help="only this run")
    export.set_defaults(func=run)

    plot = commands.add_parser("plot", help="draw scalar tags to a PNG/SVG/PDF (needs matplotlib)")
    plot.add_argument("dir", help="log directory or event file")
    plot.add_argument("tags", nargs="+", metavar="TAG", help="scalar tags, one chart each")
    plot.add_argument("-o", "--output", required=True, help="file to write: .png, .svg or .pdf")
    plot.add_argument("--run", action="append", help="only this run (repeat for several)")
    plot.add_argument(
        "--smoothing",
        type=float_option(0, 1, high_open=True),
        default=0.6,
        help="TensorBoard's smoothing weight, in [0, 1) (0.6)",
    )
    plot.add_argument(
        "--x", choices=("step", "relative", "wall"), default="step", help="x axis (step)"
    )
    plot.add_argument("--log-y", action="store_true", help="logarithmic y axis")
    plot.set_defaults(func=run)
