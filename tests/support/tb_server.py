"""A real TensorBoard server for tests: started on 127.0.0.1, always stopped, waits bounded."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

READY_TIMEOUT = 60.0
DATA_TIMEOUT = 45.0


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get(base: str, path: str, **query: str) -> bytes:
    """GET ``base + path`` with ``query`` and return the body (10 s timeout)."""
    url = f"{base}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=10) as response:
        data: bytes = response.read()
        return data


def get_json(base: str, path: str, **query: str) -> Any:
    """GET and decode a JSON answer."""
    return json.loads(get(base, path, **query))


def poll(read: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    """Call ``read`` until ``done(result)`` or DATA_TIMEOUT passes; return the last result.

    Connection and HTTP errors count as "not yet", so this also waits for a server to start.
    """
    deadline = time.monotonic() + DATA_TIMEOUT
    while True:
        try:
            result = read()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            result = None  # not serving yet, or the data is not loaded yet
        if (result is not None and done(result)) or time.monotonic() > deadline:
            return result
        time.sleep(0.25)


@contextlib.contextmanager
def serve(logdir: Path, *, load_fast: bool) -> Iterator[str]:
    """Run TensorBoard on ``logdir``; yield its base URL once it answers; stop it on exit.

    Raises:
        RuntimeError: If the server exits or does not answer within READY_TIMEOUT.
    """
    flags = ["--logdir", str(logdir), f"--load_fast={'true' if load_fast else 'false'}"]
    with serve_flags(flags) as base:
        yield base


@contextlib.contextmanager
def serve_flags(flags: list[str]) -> Iterator[str]:
    """Run TensorBoard with ``flags`` on 127.0.0.1 and yield its base URL once it answers.

    Run TensorBoard with ``flags`` on 127.0.0.1, a free port and a 1 s reload interval; yield
    its base URL once ``/data/runs`` answers; terminate (then kill) and reap it on exit.

    Raises:
        RuntimeError: If the server exits or does not answer within READY_TIMEOUT.
    """
    port = free_port()
    command = [
        sys.executable, "-m", "tensorboard.main", *flags,
        "--host", "127.0.0.1", "--port", str(port), "--reload_interval", "1",
    ]  # fmt: skip
    # stderr goes to a file, not a pipe: a crawl of many routes must not fill a pipe nobody reads
    # and block the server; the file's tail explains an early exit.
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(process, base, stderr)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _wait_ready(process: subprocess.Popen[bytes], base: str, stderr: IO[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if process.poll() is not None:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"tensorboard exited with {process.returncode}: {tail}")
        try:
            get(base, "/data/runs")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            if time.monotonic() > deadline:
                raise RuntimeError(f"tensorboard did not answer within {READY_TIMEOUT} s") from err
            time.sleep(0.25)
