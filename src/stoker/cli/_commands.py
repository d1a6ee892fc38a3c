"""The ``stoker`` command's argument parsers, built without importing any subcommand's code.

``stoker --help`` and every parse error need only :mod:`argparse`; a subcommand's module (the
demo with :mod:`stoker.data`, the log tools with the reader) is imported when that subcommand
runs, through :class:`Lazy`.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["Lazy", "add_demo_parser", "add_logs_parser", "chart_rows", "positive_int"]


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


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from err
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return number


def chart_rows(text: str) -> int:
    """An argparse type: 0 (no chart) or a chart height of at least 2 rows."""
    try:
        number = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"must be 0 or an integer >= 2, got {text!r}") from err
    if number < 0 or number == 1:
        raise argparse.ArgumentTypeError(f"must be 0 or an integer >= 2, got {text!r}")
    return number


def add_demo_parser(subparsers: Any) -> None:
    """Register ``stoker demo`` and its options on ``subparsers``."""
    parser = subparsers.add_parser(
        "demo",
        help="train a small model on drawn shapes and log it to TensorBoard",
        description="Train a small NumPy model on drawn shapes through both ends of stoker.",
    )
    parser.add_argument("--epochs", type=int, default=8, help="passes over the data (8)")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch (64)")
    parser.add_argument("--workers", type=int, default=2, help="loader worker processes (2)")
    parser.add_argument(
        "--logdir", default=None, help="run directory (default: runs/demo/<date-time>)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for data, split and model (0)")
    parser.add_argument("--samples", type=int, default=4000, help="images drawn (4000)")
    parser.add_argument("--lr", type=float, default=0.05, help="peak learning rate (0.05)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tensorboard", action="store_true", help="serve TensorBoard on 127.0.0.1 afterwards"
    )
    parser.add_argument("--port", type=int, default=6006, help="TensorBoard port (6006)")
    parser.set_defaults(func=Lazy("stoker.cli._demo", "main"))


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
    show.add_argument("--rows", type=positive_int, default=20, help="last rows to print (20)")
    show.add_argument("--all", action="store_true", help="print every row")
    show.add_argument("--width", type=positive_int, default=60, help="sparkline width (60)")
    show.add_argument(
        "--height",
        type=int,
        default=8,
        help="chart rows, fitted to the terminal width (8; 0: none)",
    )
    show.add_argument(
        "--follow", action="store_true", help="keep redrawing as the run writes, until Ctrl-C"
    )
    show.add_argument(
        "--interval", type=float, default=1.0, help="seconds between reads with --follow (1)"
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
        "--smoothing", type=float, default=0.6, help="TensorBoard's smoothing weight (0.6)"
    )
    plot.add_argument(
        "--x", choices=("step", "relative", "wall"), default="step", help="x axis (step)"
    )
    plot.add_argument("--log-y", action="store_true", help="logarithmic y axis")
    plot.set_defaults(func=run)
