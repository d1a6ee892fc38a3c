"""The ``stoker`` command: argument parsing and dispatch to its subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import stoker

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser for the ``stoker`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="stoker",
        description=(
            "Feed a training loop and watch its gauges: stoker.data loads batches, "
            "stoker.tensorboard writes and reads TensorBoard logs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"stoker {stoker.__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``stoker`` command on ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stdout)
        return 0
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse rejects first
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
