"""The installed commands: ``hello`` and ``stoker``, run as a user runs them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HELLO_OUTPUT = 'Hello, Go!\n  str(\n- \t"Hello World",\n+ \t"Hello Go",\n  )\n'


def _bin(name: str) -> str:
    """Return the console script installed next to this interpreter."""
    path = Path(sys.executable).with_name(name)
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"console script {name!r} is not installed; run `make test` to install it"
    return found


@pytest.mark.parametrize(
    "argv",
    [[_bin("hello")], [sys.executable, "-m", "stoker.hello"]],
    ids=["console-script", "python-m"],
)
def test_hello_prints_exactly_five_lines(argv: list[str]) -> None:
    """`hello` prints the greeting and the diff of the two strings, nothing else, and exits 0."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == HELLO_OUTPUT
    assert result.stderr == ""


def test_stoker_without_arguments_prints_help() -> None:
    """`stoker` with no command prints its help and exits 0."""
    result = subprocess.run(
        [_bin("stoker")], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: stoker")


def test_stoker_version() -> None:
    """`stoker --version` prints the package version."""
    import stoker

    result = subprocess.run(
        [_bin("stoker"), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"stoker {stoker.__version__}"
