"""Run Python code in a fresh interpreter, for what must hold from a clean start (imports)."""

from __future__ import annotations

import subprocess
import sys


def python_stdout(code: str, timeout: float = 60) -> str:
    """Run ``code`` with this interpreter in a new process; return its stdout, stripped.

    Raises:
        subprocess.CalledProcessError: If the process fails.
    """
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=True
    )
    return result.stdout.strip()


def python_run(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``args`` as ``sys.argv[1:]`` in a new interpreter; return the result.

    Its output is captured as text and a non-zero exit status is left to the caller to check.
    """
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
