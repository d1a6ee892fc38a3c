"""Run Python code in a fresh interpreter, or a command on a pseudo-terminal.

Run Python code in a fresh interpreter, for what must hold from a clean start (imports), or
a command on a pseudo-terminal, for what a user at a terminal sees.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
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
    """A list for started processes, killed, closed and reaped on leaving.

    A list for started processes; on leaving, those still running are killed, and every one
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
    """Reap the child ``pid`` within ``timeout`` seconds: its wait status, or None if running.

    Reap the child ``pid`` within ``timeout`` seconds: its wait status, or None if it is
    still running then (an unbounded ``os.waitpid`` would hang the test to pytest-timeout).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.02)
    return None


def read_until(fd: int, wanted: bytes | None, timeout: float) -> bytes:
    """Read a pseudo-terminal until ``wanted`` appears or ``timeout`` seconds pass.

    Read a pseudo-terminal until ``wanted`` appears (None: until the other side closes it)
    or ``timeout`` seconds pass; return what was read.
    """
    seen = b""
    deadline = time.monotonic() + timeout
    while (wanted is None or wanted not in seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal (EIO)
                break
            if not chunk:
                break
            seen += chunk
    return seen


def run_on_terminal(argv: list[str], timeout: float = 60) -> tuple[int, bytes]:
    """Run ``argv`` on a new pseudo-terminal; return its wait status and what it wrote there.

    Run ``argv`` with a new pseudo-terminal as its stdin, stdout and stderr, as a user's
    shell would; return its wait status and everything it wrote there.

    Raises:
        AssertionError: If it is still running after ``timeout`` seconds; it is killed and
            reaped first.
    """
    pid, fd = pty.fork()
    if pid == 0:  # the child: nothing of pytest's may run here, whatever happens
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    status = None
    try:
        output = read_until(fd, None, timeout)
        status = wait_status(pid, 30)
    finally:
        if status is None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        os.close(fd)
    if status is None:
        raise AssertionError(f"{argv} (pid {pid}) was still running after {timeout} s: killed")
    return status, output
