"""The ``stoker`` command in a fresh interpreter: subcommand code is loaded only when it runs.

Each test runs the command's ``main()`` in a new Python process and reads back which heavy
modules it imported: help and parse errors load no subcommand code, ``logs`` loads the reader.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stoker.tensorboard import SummaryWriter

# Runs the command's main() in a fresh interpreter, then prints which heavy modules it loaded.
_PROBE = """
import sys
from stoker.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
loaded = sorted(m for m in ("stoker.data", "stoker.cli._demo", "stoker.tensorboard", "numpy")
                if m in sys.modules)
print("LOADED", ",".join(loaded), "CODE", code)
"""


def _loaded(*argv: str) -> tuple[set[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True
    )
    line = done.stdout.strip().splitlines()[-1]
    _, names, _, code = line.split(" ")
    return set(filter(None, names.split(","))), code


def test_help_imports_no_subcommand_code() -> None:
    """``stoker --help`` parses and prints help with neither the demo, stoker.data nor NumPy."""
    loaded, code = _loaded("--help")
    assert loaded == set()
    assert code == "0"


def test_logs_loads_the_reader_but_not_the_demo_or_stoker_data(tmp_path: Path) -> None:
    """``stoker logs ls`` imports stoker.tensorboard, never the demo or stoker.data."""
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("loss", 1.0, 0)
    loaded, code = _loaded("logs", "ls", str(tmp_path))
    assert "stoker.tensorboard" in loaded
    assert not loaded & {"stoker.data", "stoker.cli._demo"}
    assert code == "0"


@pytest.mark.parametrize("argv", [["demo", "--epochs", "x"], ["logs", "show", "d"]])
def test_a_parse_error_needs_no_subcommand_code(argv: list[str]) -> None:
    """A bad command line is reported (exit 2) before any subcommand module is imported."""
    loaded, code = _loaded(*argv)
    assert loaded == set()
    assert code == "2"
