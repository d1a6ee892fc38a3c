"""The ``stoker`` command: argument parsing and dispatch to its subcommands.

Only the parsers are built here (:mod:`stoker.cli._commands`); a subcommand's code is imported
when it runs, so ``stoker --help`` and ``stoker logs`` load neither the demo nor stoker.data.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import stoker
from stoker.cli import _commands

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser for the ``stoker`` command and its subcommands.

    A bad command line is one line on stderr naming the option, the value and what is valid,
    and exit status 2.
    """
    parser = _commands.Parser(
        prog="stoker",
        description=(
            "Feed a training loop and watch its gauges: stoker.data loads batches, "
            "stoker.tensorboard writes and reads TensorBoard logs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"stoker {stoker.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _commands.add_demo_parser(commands)
    _commands.add_logs_parser(commands)
    _commands.add_board_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``stoker`` command on ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if "board" in words and "--" in words[words.index("board") :]:
        cut = words.index("--", words.index("board"))
        words, passed = words[:cut], words[cut + 1 :]  # stoker board's flags for tensorboard
    args = parser.parse_args(words)
    if passed:
        args.tensorboard_args = passed
    if args.command is None:
        parser.print_help(sys.stdout)
        return 0
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
