"""The unit tree's guard: a unit test that starts a process gets an error naming the call.

tests/unit/conftest.py replaces every way to start a process for the duration of each unit
test. These tests call each one inside the guard, check the error and the recorded attempt (then
clear it, which a test of the guard alone may do), and check that threads still run.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import multiprocessing.util
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from stoker.data import DataLoader


def _message(name: str) -> str:
    return (
        rf"^unit tests run in one process: this test starts a process \({name}\); "
        r"move it to tests/integration/$"
    )


def _fork() -> None:
    os.fork()  # looked up at call time, inside the guard


def _forkpty() -> None:
    pty.fork()


def _fork_context_process() -> None:
    multiprocessing.get_context("fork").Process(target=print).start()


def _spawn_context_process() -> None:
    multiprocessing.get_context("spawn").Process(target=print).start()


def _process_pool() -> None:
    context = multiprocessing.get_context("fork")  # its queues need no resource tracker
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        pool.submit(print).result()


def _resource_tracker() -> None:
    multiprocessing.util.spawnv_passfds(sys.executable, [sys.executable], ())


STARTS: list[tuple[str, Callable[[], object]]] = [
    ("os.fork", _fork),
    ("os.fork", lambda: os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", ""])),
    ("os.forkpty", _forkpty),
    ("os.posix_spawn", lambda: os.posix_spawn(sys.executable, [sys.executable], {})),
    ("os.posix_spawnp", lambda: os.posix_spawnp("python3", ["python3"], {})),
    ("os.system", lambda: os.system("true")),
    ("subprocess.Popen", lambda: subprocess.run([sys.executable, "-c", ""], check=True)),
    ("subprocess.Popen", lambda: subprocess.Popen(["true"])),
    ("subprocess.Popen", lambda: os.popen("true")),
    ("multiprocessing.Process.start", _fork_context_process),
    ("multiprocessing.Process.start", _spawn_context_process),
    ("multiprocessing.Process.start", _process_pool),
    ("multiprocessing.util.spawnv_passfds", _resource_tracker),
]
IDS = [
    "os.fork",
    "os.spawnv",
    "pty.fork",
    "os.posix_spawn",
    "os.posix_spawnp",
    "os.system",
    "subprocess.run",
    "subprocess.Popen",
    "os.popen",
    "fork-process",
    "spawn-process",
    "ProcessPoolExecutor",
    "spawnv_passfds",
]


@pytest.mark.parametrize(("name", "start"), STARTS, ids=IDS)
def test_starting_a_process_raises_naming_the_call(
    name: str, start: Callable[[], object], no_process_starts: list[str]
) -> None:
    with pytest.raises(RuntimeError, match=_message(name)):
        start()
    assert no_process_starts == [name]
    no_process_starts.clear()


def test_subprocess_run_raises_and_records_the_start(no_process_starts: list[str]) -> None:
    with pytest.raises(RuntimeError, match=_message("subprocess.Popen")):
        subprocess.run(["echo", "hello"], check=True, capture_output=True)
    assert no_process_starts == ["subprocess.Popen"]
    no_process_starts.clear()


def test_a_caught_start_is_still_recorded(no_process_starts: list[str]) -> None:
    with contextlib.suppress(RuntimeError):
        os.fork()
    assert no_process_starts == ["os.fork"]
    no_process_starts.clear()


def test_threads_run(no_process_starts: list[str]) -> None:
    results: list[int] = []
    thread = threading.Thread(target=results.append, args=(1,))
    thread.start()
    thread.join()
    loader = DataLoader(list(range(6)), batch_size=2, num_workers=2, worker_type="thread")
    assert [batch.tolist() for batch in loader] == [[0, 1], [2, 3], [4, 5]]
    assert results == [1]
    assert no_process_starts == []
