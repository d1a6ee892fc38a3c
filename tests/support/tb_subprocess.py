"""Run Python code in a fresh interpreter, for what must hold from a clean start (imports)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator


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


@contextlib.contextmanager
def reaped() -> Iterator[list[subprocess.Popen[str]]]:
    """A list for started processes; on leaving, those still running are killed, and every one
    has its pipes closed and is reaped.

    A test that times out waiting for one of several processes then fails alone: no process
    is left running and no pipe is left open for the garbage collector to report (as a
    ResourceWarning, an error under ``filterwarnings = error``) in whichever test runs next.
    """
    procs: list[subprocess.Popen[str]] = []
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            with proc:  # Popen's exit closes the pipes and waits
                pass


def wait_status(pid: int, timeout: float) -> int | None:
    """Reap the child ``pid`` within ``timeout`` seconds: its wait status, or None if it is
    still running then (an unbounded ``os.waitpid`` would hang the test to pytest-timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.02)
    return None
