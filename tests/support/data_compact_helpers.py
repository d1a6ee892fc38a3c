"""Datasets for the compact-container and worker-memory tests, importable by spawn workers.

:class:`ReadAll` reads every item of what it holds inside a worker and reports the worker's
private memory (USS) before and after, so a test can tell whether reading copied the data.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from stoker.data._memory import private_bytes


class ReadAll:
    """One sample per worker: read every item of ``items``, return (USS before, after, count)."""

    def __init__(self, items: Any, length: int = 1) -> None:
        self.items = items
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[int, int, int]:
        before = private_bytes(os.getpid()) or 0
        count = sum(1 for item in self.items if item is not None)
        after = private_bytes(os.getpid()) or 0
        return before, after, count


class Rows:
    """Sample i is ``items[i]``; a batch is slowed by ``pause`` seconds in the worker."""

    def __init__(self, items: Any, pause: float = 0.0) -> None:
        self.items = items
        self.pause = pause

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        if self.pause and index % 256 == 0:
            time.sleep(self.pause)
        return self.items[index]


class KillAt(Rows):
    """Like :class:`Rows`, but the worker SIGKILLs itself at index ``at``."""

    def __init__(self, items: Any, at: int) -> None:
        super().__init__(items)
        self.at = at

    def __getitem__(self, index: int) -> Any:
        if index == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(index)


def owned_names(pid: int) -> list[str]:
    """The names in /dev/shm of the segments ``pid`` owns (its shared containers)."""
    prefix = f"stoker-data-{pid}-{pid}-"
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))


def names_of(pid: int) -> list[str]:
    """Every name in /dev/shm of main process ``pid`` (its own and its workers' segments)."""
    prefix = f"stoker-data-{pid}-"
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))


def numbered_texts(count: int, tag: str) -> list[str]:
    """``count`` distinct strings marked with ``tag`` (what a test sends and checks)."""
    return [f"{tag} item {number}" for number in range(count)]


def echo_lists(inbox: Any, outbox: Any, count: int) -> None:
    """Read ``count`` containers from ``inbox``; put each back as a list, or the error's repr."""
    for _ in range(count):
        try:
            outbox.put(list(inbox.get(timeout=60)))
        except Exception as err:  # the test compares what comes back, so say what went wrong
            outbox.put(repr(err))


def put_temporaries(outbox: Any, count: int) -> None:
    """Put ``count`` containers on ``outbox`` keeping no reference to them, then return."""
    from stoker.data import compact

    for number in range(count):
        outbox.put(compact(numbered_texts(1000, f"temporary {number}")))


def as_list(items: Any) -> list[Any]:
    """``items`` as a list (a pool task run on a container it was sent)."""
    return list(items)


def read_when_told(conn: Any, go: Any, outbox: Any) -> None:
    """Wait for ``go``, then receive one container from ``conn`` and put it back as a list."""
    try:
        if not go.wait(60):
            raise TimeoutError("never told to read")
        outbox.put(list(conn.recv()))
    except Exception as err:
        outbox.put(repr(err))


def read_after_parent_dies(inbox: Any, tags: list[str]) -> None:
    """Once the parent has ended, check the containers from ``inbox``, print the verdict, exit.

    Wait for the parent process to end, read one container per tag from ``inbox`` and print
    ``ok`` if each holds :func:`numbered_texts` of its tag (else what was wrong), then exit
    (which sweeps up the dead parent's names).
    """
    import multiprocessing

    from stoker.data._workers.shm import process_alive

    parent = multiprocessing.parent_process()
    assert parent is not None
    parent.join(60)
    deadline = time.monotonic() + 30  # its pipes close before it is a zombie: wait for that
    while process_alive(parent.pid or 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        got = [list(inbox.get(timeout=30)) for _ in tags]
        ok = got == [numbered_texts(1000, tag) for tag in tags]
        print("ok" if ok else f"wrong: {[row[:1] for row in got]}", flush=True)
    except Exception as err:
        print(repr(err), flush=True)


def read_one_then_hang(inbox: Any, outbox: Any) -> None:
    """Read one container from ``inbox``, put it back as a list (or the error), then sleep."""
    echo_lists(inbox, outbox, 1)
    time.sleep(120)
