"""Unit-tree policy: a unit test runs in this one process and starts no other.

Tests that start processes (process workers, ``subprocess``, ``multiprocessing``, ``os.fork``,
process pools) live under ``tests/integration/`` (tests/README.md). For the duration of each
unit test, every way the standard library starts a process is replaced by one that raises
``RuntimeError`` naming what was called; threads stay allowed. A start that the code under test
catches still fails the test at teardown, so a swallowed error cannot hide one.
"""

from __future__ import annotations

import multiprocessing.process
import multiprocessing.util
import os
import subprocess
from collections.abc import Iterator
from typing import NoReturn

import pytest

# (owner, attribute, the name an error gives): each starts a process; os.spawn*, os.popen,
# pty.fork, process pools, the multiprocessing resource tracker and fork server go through them
_PROCESS_STARTS: tuple[tuple[object, str, str], ...] = (
    (os, "fork", "os.fork"),
    (os, "forkpty", "os.forkpty"),
    (os, "posix_spawn", "os.posix_spawn"),
    (os, "posix_spawnp", "os.posix_spawnp"),
    (os, "system", "os.system"),
    (subprocess.Popen, "__init__", "subprocess.Popen"),
    (multiprocessing.process.BaseProcess, "start", "multiprocessing.Process.start"),
    (multiprocessing.util, "spawnv_passfds", "multiprocessing.util.spawnv_passfds"),
)


def _process_start_error(name: str) -> RuntimeError:
    """The error a unit test gets when it calls ``name``, which starts a process."""
    return RuntimeError(
        f"unit tests run in one process: this test starts a process ({name}); "
        "move it to tests/integration/"
    )


@pytest.fixture(autouse=True)
def no_process_starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Make every process start raise for the duration of a unit test.

    Yields the names of the starts attempted so far; a test of the guard itself clears it. Any
    left at teardown fail the test, even when the code under test caught the error.
    """
    attempts: list[str] = []

    def refuse(name: str) -> object:
        def refused(*args: object, **kwargs: object) -> NoReturn:
            attempts.append(name)
            raise _process_start_error(name)

        return refused

    for owner, attribute, name in _PROCESS_STARTS:
        if hasattr(owner, attribute):
            monkeypatch.setattr(owner, attribute, refuse(name))
    yield attempts
    if attempts:
        names = ", ".join(dict.fromkeys(attempts))
        pytest.fail(
            f"{_process_start_error(attempts[0])} ({len(attempts)} process start(s) attempted: "
            f"{names})",
            pytrace=False,
        )
