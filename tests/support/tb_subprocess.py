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
