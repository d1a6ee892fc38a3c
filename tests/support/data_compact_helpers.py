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
