"""Datasets and hooks for the worker tests, importable by spawn and forkserver workers.

The tests run each behaviour with process workers and thread workers: :func:`kind_kwargs` turns a
worker kind into DataLoader arguments and :class:`WorkerWatch` finds the workers an iterator
started (child processes or threads) and waits for them to end. The ``check_*`` functions are
test bodies run with thread workers by the unit tests and with process workers by the
integration tests.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from stoker.data import DataLoader, Dataset, IterableDataset, SharedMemoryFullError, get_worker_info

SUPPORT = str(Path(__file__).resolve().parent)
"""This folder (pytest's ``pythonpath``): scripts run in a fresh interpreter add it to sys.path."""

START_METHODS = ["fork", "spawn", "forkserver"]
WORKER_KINDS = ["process", "thread"]
"""Worker kinds: process workers (the default start method) and thread workers."""
ALL_KINDS = [*START_METHODS, "thread"]
"""Process workers with each start method, and thread workers."""


def kind_kwargs(kind: str) -> dict[str, Any]:
    """DataLoader arguments for ``kind``: "thread", "process", or a start method's name."""
    if kind == "thread":
        return {"worker_type": "thread"}
    if kind == "process":
        return {}
    return {"multiprocessing_context": kind}


def _worker_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("stoker-data-worker-")}


class WorkerWatch:
    """The workers started after this watch was made: child processes (pids) or threads."""

    def __init__(self, kind: str) -> None:
        self.threads = kind == "thread"
        self._pids_before = children_of(os.getpid())
        self._threads_before = _worker_threads()

    def started(self) -> list[Any]:
        """The workers (pids or threads) started since the watch was made and still alive."""
        if self.threads:
            return sorted(_worker_threads() - self._threads_before, key=lambda t: t.name)
        return sorted(children_of(os.getpid()) - self._pids_before)

    def alive_after(self, workers: list[Any], within: float) -> list[Any]:
        """Wait up to ``within`` seconds for ``workers`` to end; return those still alive."""
        if not self.threads:
            return wait_all_gone(workers, within)
        deadline = time.monotonic() + within
        for thread in workers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return [thread for thread in workers if thread.is_alive()]


def ran_in_workers(pids: set[int], kind: str) -> bool:
    """Whether samples made in the processes ``pids`` came from workers of ``kind``."""
    if kind == "thread":
        return pids == {os.getpid()}
    return os.getpid() not in pids and len(pids) >= 1


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
        return {"i": index, "via": 0, "pid": os.getpid(), "tid": threading.get_native_id()}

    def __getitems__(self, indices: list[int]) -> list[Any]:
        tid = threading.get_native_id()
        return [{"i": i, "via": 1, "pid": os.getpid(), "tid": tid} for i in indices]


class NeedsTwoArgs(Exception):
    """An exception type that cannot be rebuilt from a message alone."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


class FailingDataset(RangeDataset):
    """Raises an exception of the chosen kind at index ``bad``.

    Kinds: ``"value"`` (ValueError), ``"key"`` (KeyError), ``"public"`` (stoker.data's
    SharedMemoryFullError, a type the main process finds by its public path), anything else
    :class:`NeedsTwoArgs`.
    """

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
            if self.kind == "public":
                raise SharedMemoryFullError(f"no room for sample {index}")
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
        if info.rng is not None:  # thread workers: per-worker generators, as documented
            py_random, np_random = info.rng["random"].random(), info.rng["numpy"].random()
        else:  # process workers: the process-wide generators, seeded per worker
            py_random, np_random = random.random(), np.random.random_sample()
        return {
            "index": index,
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "pid": os.getpid(),
            "random": py_random,
            "numpy": float(np_random),
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


class RestartingStream(IterableDataset[tuple[int, int, int]]):
    """An iterator that is its own iterable, as litdata's StreamingDataset: ``iter()`` restarts it.

    Each ``__iter__`` call is counted in the replica (a worker's copy counts its own) and starts
    worker ``w`` of ``k`` at ``w`` (plus a loaded state's position), striding by ``k`` over
    ``0..n-1``; each sample is ``(value, worker id or -1, the replica's __iter__ calls so far)``.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.iter_calls = 0
        self._worker = -1
        self._next = 0
        self._step = 1

    def __iter__(self) -> RestartingStream:
        info = get_worker_info()
        self.iter_calls += 1
        self._worker = -1 if info is None else info.id
        start, self._step = (0, 1) if info is None else (info.id, info.num_workers)
        self._next = start + self._step * self._resume_at()
        return self

    def _resume_at(self) -> int:
        return 0

    def __next__(self) -> tuple[int, int, int]:
        if self._next >= self.n:
            raise StopIteration
        value, self._next = self._next, self._next + self._step
        return value, self._worker, self.iter_calls


class StatefulRestartingStream(RestartingStream):
    """A :class:`RestartingStream` with a state: how many samples this replica yielded."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self._loaded = 0

    def _resume_at(self) -> int:
        loaded, self._loaded = self._loaded, 0
        return loaded

    def state_dict(self) -> dict[str, Any]:
        """The samples this replica yielded in its current pass."""
        first = 0 if self._worker < 0 else self._worker
        return {"yielded": (self._next - first) // self._step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Make the next ``iter()`` skip the samples ``state`` says were yielded."""
        self._loaded = int(state["yielded"])


class ArgumentStateStream(RestartingStream):
    """A :class:`RestartingStream` whose ``state_dict`` needs arguments, as litdata's does.

    A :class:`RestartingStream` whose ``state_dict`` needs arguments, as litdata's
    ``StreamingDataset.state_dict(num_samples_yielded, num_workers, batch_size)``: not the
    no-argument contract stoker's loader calls.
    """

    def state_dict(self, num_samples_yielded: int, num_workers: int, batch_size: int) -> Any:
        """A state only the dataset's own loader knows how to ask for."""
        return {"yielded": num_samples_yielded, "workers": num_workers, "batch": batch_size}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Never called by stoker's loader (it resumes this dataset by fast-forward)."""
        raise AssertionError(f"load_state_dict({state!r}) was called")


class CountingDataset(RangeDataset):
    """Counts every fetch in a shared multiprocessing counter.

    Counts every fetch in a shared multiprocessing counter; with ``nbytes``, sample i is
    ``nbytes`` bytes of ``i % 256`` instead.
    """

    def __init__(self, n: int, counter: Any, nbytes: int = 0) -> None:
        super().__init__(n)
        self.counter = counter
        self.nbytes = nbytes

    def __getitem__(self, index: int) -> Any:
        with self.counter.get_lock():
            self.counter.value += 1
        if self.nbytes:
            return np.full(self.nbytes, index % 256, dtype=np.uint8)
        return super().__getitem__(index)


def counter_settles_at(counter: Any, expected: int, within: float = 30.0, hold: float = 0.5) -> int:
    """Wait for a shared counter to reach ``expected``, hold a while, and return its value.

    Wait up to ``within`` seconds for a shared counter to reach ``expected``, then ``hold``
    seconds more; return its value then.

    A slow worker (one not started yet, or waiting for a core) only delays the count; a loader
    that fetches too much shows it by overshooting during the hold, one that fetches too
    little by falling short once ``within`` runs out.
    """
    deadline = time.monotonic() + within
    while counter.value < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(hold)
    with counter.get_lock():
        return int(counter.value)


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


class SlowTailDataset(RangeDataset):
    """Samples below ``fast`` come at once; every later one sleeps ``delay`` seconds first."""

    def __init__(self, n: int, fast: int, delay: float, width: int = 4096) -> None:
        super().__init__(n, width)
        self.fast = fast
        self.delay = delay

    def __getitem__(self, index: int) -> Any:
        if index >= self.fast:
            time.sleep(self.delay)
        return super().__getitem__(index)


MARKER_CAP = 30.0
"""Seconds a handshake waits for its marker file: a broken loader fails slowly, never hangs."""


def wait_for_marker(path: str | Path, within: float = MARKER_CAP) -> bool:
    """Wait up to ``within`` seconds for the file ``path`` to exist; return whether it does.

    Workers are separate processes, so handshakes between a test and its workers go through
    files (in the test's tmp_path), not events.
    """
    deadline = time.monotonic() + within
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class GatedDataset(RangeDataset):
    """Index ``gate`` (every index when None) waits, up to 30 s, for the file ``marker``.

    The test creates the marker when it is ready for the fetch to finish, so an outcome that
    must come before that fetch cannot depend on how fast a sleeping worker is woken.
    """

    def __init__(self, n: int, gate: int | None, marker: str | Path) -> None:
        super().__init__(n)
        self.gate = gate
        self.marker = str(marker)

    def __getitem__(self, index: int) -> Any:
        if self.gate is None or index == self.gate:
            wait_for_marker(self.marker)
        return super().__getitem__(index)


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


class SquareVectors(Dataset[Any]):
    """Sample i: (a float vector filled with i, i squared)."""

    def __init__(self, n: int, delay: float = 0.0) -> None:
        self.n = n
        self.delay = delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        if self.delay:
            time.sleep(self.delay * ((index * 7) % 3))  # uneven work: replies arrive out of order
        return np.full(4, index, dtype=np.float32), index * index


class StatefulShards(IterableDataset[int]):
    """Yields 0..n-1 split by worker, and keeps a state_dict of how far it got."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.position = 0

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for value in range(start, self.n, step):
            self.position = value + 1
            yield value

    def state_dict(self) -> dict[str, int]:
        """How far this replica got: ``{"position": last value yielded + 1}``."""
        return {"position": self.position}


def plain_batches(batches: list[Any]) -> list[Any]:
    """Batches as nested lists (each part of a tuple or list batch through NumPy's tolist)."""
    out = []
    for batch in batches:
        if isinstance(batch, (list, tuple)):
            out.append([np.asarray(part).tolist() for part in batch])
        else:
            out.append(np.asarray(batch).tolist())
    return out


def check_stats_count_batches_wait_and_busy_time(worker_type: str) -> None:
    """loader.stats() counts batches served and per-worker busy time for both worker types."""
    loader = DataLoader(
        SquareVectors(40, delay=0.001), batch_size=4, num_workers=2, worker_type=worker_type
    )
    assert loader.stats()["batches_served"] == 0
    list(loader)
    stats = loader.stats()
    assert stats["batches_served"] == 10
    assert set(stats["worker_busy_seconds"]) == {0, 1}
    assert all(seconds > 0 for seconds in stats["worker_busy_seconds"].values())
    assert stats["main_wait_seconds"] > 0
    if worker_type == "process":
        assert stats["bytes_moved"] == stats["bytes_inline"] > 0
    else:
        assert stats["bytes_moved"] == 0


def check_iterable_worker_state_reaches_the_iterator(worker_type: str) -> None:
    """An IterableDataset's state_dict() after each batch is kept per worker as batches yield."""
    loader = DataLoader(StatefulShards(20), batch_size=3, num_workers=2, worker_type=worker_type)
    iterator = iter(loader)
    first = next(iterator)
    assert np.asarray(first).tolist() == [0, 2, 4]
    assert iterator.last_worker_state == {0: {"position": 5}}  # type: ignore[attr-defined]
    next(iterator)
    assert iterator.last_worker_state[1] == {"position": 6}  # type: ignore[attr-defined]
    rest = list(iterator)
    assert sum(len(batch) for batch in rest) == 20 - 6
    assert iterator.last_worker_state == {  # type: ignore[attr-defined]
        0: {"position": 19},
        1: {"position": 20},
    }
