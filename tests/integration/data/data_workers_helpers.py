"""Datasets and hooks for the worker-process tests, importable by spawn and forkserver workers."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from stoker.data import Dataset, IterableDataset, get_worker_info


class RangeDataset(Dataset[Any]):
    """Sample i is (a float vector filled with i, the int i)."""

    def __init__(self, n: int, width: int = 3) -> None:
        self.n = n
        self.width = width

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[np.ndarray[Any, Any], int]:
        if not 0 <= index < self.n:
            raise IndexError(index)
        return np.full(self.width, index, dtype=np.float64), index


class GetItemsDataset(RangeDataset):
    """Marks samples fetched through __getitems__ with via=1 and through __getitem__ with via=0."""

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        return {"i": index, "via": 0, "pid": os.getpid()}

    def __getitems__(self, indices: list[int]) -> list[Any]:
        return [{"i": i, "via": 1, "pid": os.getpid()} for i in indices]


class NeedsTwoArgs(Exception):
    """An exception type that cannot be rebuilt from a message alone."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


class FailingDataset(RangeDataset):
    """Raises an exception of the chosen kind at index ``bad``."""

    def __init__(self, n: int, bad: int, kind: str = "value") -> None:
        super().__init__(n)
        self.bad = bad
        self.kind = kind

    def __getitem__(self, index: int) -> Any:
        if index == self.bad:
            if self.kind == "value":
                raise ValueError(f"sample {index} is broken")
            if self.kind == "key":
                raise KeyError(f"missing-{index}")
            raise NeedsTwoArgs(index, "cannot rebuild")
        return super().__getitem__(index)


class DyingDataset(RangeDataset):
    """Ends its own worker process at index ``bad``: SIGKILL, os._exit(3) or a segfault."""

    def __init__(self, n: int, bad: int, how: str) -> None:
        super().__init__(n)
        self.bad = bad
        self.how = how

    def __getitem__(self, index: int) -> Any:
        if index == self.bad and get_worker_info() is not None:
            if self.how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.how == "exit":
                os._exit(3)
            else:
                faulthandler.disable()  # keep the test output free of the crash dump
                ctypes.string_at(0)
        return super().__getitem__(index)


class SlowDataset(RangeDataset):
    """Sleeps ``delay`` seconds before returning index ``slow``."""

    def __init__(self, n: int, slow: int, delay: float) -> None:
        super().__init__(n)
        self.slow = slow
        self.delay = delay

    def __getitem__(self, index: int) -> Any:
        if index == self.slow:
            time.sleep(self.delay)
        return super().__getitem__(index)


class WhoDataset(Dataset[Any]):
    """Sample i says which worker made it and what its random generators give."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.tag = -1

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, Any]:
        info = get_worker_info()
        assert info is not None, "WhoDataset must be read in a worker"
        return {
            "index": index,
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "pid": os.getpid(),
            "random": random.random(),
            "numpy": float(np.random.random_sample()),
            "tag": info.dataset.tag,
            "same_dataset": info.dataset is self,
        }


def tag_worker(worker_id: int) -> None:
    """worker_init_fn: tags the worker's dataset copy with 100 + its id."""
    info = get_worker_info()
    assert info is not None
    assert info.id == worker_id
    info.dataset.tag = 100 + worker_id


def failing_init(worker_id: int) -> None:
    """worker_init_fn that always fails."""
    raise OSError(f"worker {worker_id} cannot open its shard")


class ShardedStream(IterableDataset[int]):
    """Yields 0..n-1 split between workers by get_worker_info (every worker its own stride)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class ReplicatedStream(ShardedStream):
    """Yields 0..n-1 in every worker (no sharding)."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.n))


class UnevenStream(IterableDataset[int]):
    """Worker w yields ``counts[w]`` samples ``w * 1000 + k``."""

    def __init__(self, counts: list[int]) -> None:
        self.counts = counts

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        worker = 0 if info is None else info.id
        return iter(worker * 1000 + k for k in range(self.counts[worker]))


class CountingDataset(RangeDataset):
    """Counts every fetch in a shared multiprocessing counter."""

    def __init__(self, n: int, counter: Any) -> None:
        super().__init__(n)
        self.counter = counter

    def __getitem__(self, index: int) -> Any:
        with self.counter.get_lock():
            self.counter.value += 1
        return super().__getitem__(index)


def process_alive(pid: int) -> bool:
    """Tell from /proc whether ``pid`` is a live (non-zombie) process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] not in ("Z", "X")


def wait_all_gone(pids: list[int], within: float) -> list[int]:
    """Wait up to ``within`` seconds for all ``pids`` to end; return those still alive."""
    deadline = time.monotonic() + within
    alive = [p for p in pids if process_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if process_alive(p)]
    return alive


class SteadyDataset(RangeDataset):
    """Sleeps ``delay`` seconds on every sample."""

    def __init__(self, n: int, delay: float) -> None:
        super().__init__(n)
        self.delay = delay

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.delay)
        return super().__getitem__(index)


def children_of(pid: int) -> set[int]:
    """Return the live child processes of ``pid``, read from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.add(int(entry))
    return found
