"""The README tells the truth: its Python examples run and its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_python_examples_run(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ```python block of the README runs without error in a fresh directory."""
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})


def test_readme_names_the_two_commands() -> None:
    """The README gives `make run` and `make test`, and the Makefile defines both targets."""
    assert "make run" in README
    assert "make test" in README
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^run:", makefile, flags=re.MULTILINE)
    assert re.search(r"^test:", makefile, flags=re.MULTILINE)


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run calls `make test`, the command the README gives a newcomer."""
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
