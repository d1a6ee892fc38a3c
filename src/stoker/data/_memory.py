"""Process workers' private memory (USS), sampled cheaply, and the warning when it grows.

A forked worker starts sharing every page of the main process. Reading a Python object writes
its reference count, so each page of the dataset's objects a worker reads becomes a private copy
(copy-on-write); over an epoch each worker can end up with a copy of most of the dataset.
:class:`WorkerMemory` watches for that from the main process: when a worker delivers its first
batch it reads the worker's private memory (USS: ``Private_Clean + Private_Dirty`` of
``/proc/<pid>/smaps_rollup``), and then, at most once every :data:`SAMPLE_INTERVAL` seconds when a
batch is yielded (never per batch), it reads every worker's again. The reading for a worker's
first batch is taken when the next batch is delivered (or the stats are asked for), not before
that first batch reaches the caller: a fresh loader's first batch waits on no ``/proc`` read
(each is milliseconds, more in a process holding torch). When the growth summed over
the workers passes the threshold (``STOKER_DATA_COPY_WARN_MIB``, default
:data:`DEFAULT_WARN_MIB`), it warns once per loader with :class:`DatasetCopyWarning`, which names
the cause and the fixes. Without ``/proc`` every figure is None and it never warns.

A worker's USS also holds memory that serves its batches and copies nothing: its shared-memory
slabs (private to it once the main process has dropped its pages of an idle slab), a slab
being written, and the free heap kept for the next
batch's samples. The pool tells how many bytes that may be per worker (``batch_memory``); the
warning counts only the growth beyond it, so a pipeline of large batches with a deep
``prefetch_factor`` does not warn. ``worker_uss_growth`` stays the plain difference.

The figures appear in ``loader.stats()`` (see :meth:`WorkerMemory.snapshot`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from stoker._checks import env_int

__all__ = [
    "DEFAULT_WARN_MIB",
    "SAMPLE_INTERVAL",
    "WARN_ENV",
    "DatasetCopyWarning",
    "WorkerMemory",
    "private_bytes",
]

SAMPLE_INTERVAL = 1.0
"""Seconds between two readings of the workers' memory."""

DEFAULT_WARN_MIB = 256
"""Total growth of the workers' private memory, in MiB, past which the loader warns.

Measured on the copy-on-write workload of ``benchmarks/loader_bench.py --only cow``: 4 fork
workers reading 3,000,000 str and dicts from plain lists in one epoch grow the process tree by
2,961 MB; the same records in stoker's containers by 51 MB.
"""

WARN_ENV = "STOKER_DATA_COPY_WARN_MIB"
"""The environment variable that sets the threshold in MiB (0 turns the warning off)."""


class DatasetCopyWarning(UserWarning):
    """Process workers are copying the dataset: their private memory grew past the threshold.

    Warned once per DataLoader. The usual cause is a dataset holding many Python objects
    (lists of str, of dicts, of ints): each worker writes the reference count of every object it
    reads, so the operating system copies each page it touches (copy-on-write), and every
    worker ends up with its own copy. The fixes: keep the records in ``stoker.data``'s compact
    containers (:func:`~stoker.data.compact`, :class:`~stoker.data.StringSequence`,
    :class:`~stoker.data.RecordSequence`, NumPy arrays), which are a few objects over NumPy
    buffers; or use thread workers (``worker_type="thread"``), which share the dataset with no
    copy. The threshold is ``STOKER_DATA_COPY_WARN_MIB`` (MiB, default 256; 0: never warn).
    """


def private_bytes(pid: int) -> int | None:
    """Return the private memory (USS) of process ``pid`` in bytes, or None when unknown."""
    total = 0
    found = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
                    found += 1
    except (OSError, ValueError, IndexError):
        return None
    return total if found == 2 else None


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"


class WorkerMemory:
    """The private memory of one loader's current process workers, and its one warning."""

    def __init__(self) -> None:
        """Watch no worker yet."""
        self._pids: list[int] | None = None
        self._batch_memory: Callable[[int], int] | None = None
        self.start: dict[int, int | None] = {}
        self.now: dict[int, int | None] = {}
        self._pending: list[int] = []  # workers whose first batch came, not yet read
        self._next_sample = 0.0
        self._threshold: int | None = None
        self.warned = False

    def attach(
        self, pids: list[int] | None, batch_memory: Callable[[int], int] | None = None
    ) -> None:
        """Watch a new pool's workers (``pids`` by worker id; None for thread workers).

        ``batch_memory(worker_id)`` tells the bytes of a worker's memory that may serve its
        batches.
        """
        self._pids = pids
        self._batch_memory = batch_memory
        self.start = {}
        self.now = {}
        self._pending = []
        mib = env_int(WARN_ENV, minimum=0, hint="set it to a number of MiB (0: never warn)")
        self._threshold = (DEFAULT_WARN_MIB if mib is None else mib) * 2**20 or None

    def on_batch(self, worker_id: int, stacklevel: int) -> None:
        """Note a batch from ``worker_id``; read memory if due; warn once past the threshold."""
        if self._pids is None:
            return
        self._read_pending()
        if worker_id not in self.start:
            self._pending.append(worker_id)  # read at the next batch, not before this one
        if time.monotonic() < self._next_sample:
            return
        self.sample()
        growth = self.copy_growth()
        if self._threshold is None or self.warned or growth is None:
            return
        if growth > self._threshold:
            self.warned = True
            warnings.warn(self._message(growth), DatasetCopyWarning, stacklevel=stacklevel + 1)

    def _read_pending(self) -> None:
        """Take the first reading of the workers whose first batch was delivered earlier."""
        pids = self._pids
        if pids is None:
            return
        for worker_id in self._pending:
            if worker_id not in self.start:
                self.start[worker_id] = self.now[worker_id] = private_bytes(pids[worker_id])
        self._pending.clear()

    def sample(self) -> None:
        """Read every started worker's private memory now (a gone worker keeps its last)."""
        self._next_sample = time.monotonic() + SAMPLE_INTERVAL
        if self._pids is None:
            return
        for worker_id in self.start:
            size = private_bytes(self._pids[worker_id])
            if size is not None:
                self.now[worker_id] = size

    def growth(self) -> dict[int, int | None]:
        """Each started worker's growth since its first batch, in bytes (None: unknown)."""
        result: dict[int, int | None] = {}
        for worker_id, start in self.start.items():
            now = self.now.get(worker_id)
            result[worker_id] = None if start is None or now is None else now - start
        return result

    def total_growth(self) -> int | None:
        """The growth summed over the workers, or None when no worker's is known."""
        known = [size for size in self.growth().values() if size is not None]
        return sum(known) if known else None

    def batch_memory(self) -> dict[int, int]:
        """Bytes of each started worker's memory that may serve its batches."""
        if self._batch_memory is None:
            return dict.fromkeys(self.start, 0)
        return {worker_id: self._batch_memory(worker_id) for worker_id in self.start}

    def copy_growth(self) -> int | None:
        """The growth the warning counts: each worker's beyond its batch memory, summed."""
        serving = self.batch_memory()
        counted = [
            max(size - serving[worker_id], 0)
            for worker_id, size in self.growth().items()
            if size is not None
        ]
        return sum(counted) if counted else None

    def _message(self, growth: int) -> str:
        serving = self.batch_memory()
        each = ", ".join(
            f"worker {worker_id} +{_mib(size)}"
            + (f", batch memory {_mib(serving[worker_id])}" if serving[worker_id] else "")
            for worker_id, size in sorted(self.growth().items())
            if size is not None
        )
        return (
            f"the DataLoader's process workers' private memory grew by {_mib(growth)} in total "
            f"beyond their batch memory since their first batch ({each}), past "
            f"{_mib(self._threshold or 0)} "
            f"(${WARN_ENV}): the workers are copying the dataset. Reading a Python object "
            "writes its reference count, so each page of the dataset's Python objects a forked "
            "worker reads is copied into it (copy-on-write), and every worker ends up with its "
            "own copy. Fixes: keep the records in stoker.data's compact containers "
            "(stoker.data.compact(list), StringSequence, BytesSequence, RecordSequence, NumPy "
            "arrays), which workers share without copies; or use thread workers "
            "(worker_type='thread'). Set "
            f"{WARN_ENV}=0 to silence this warning."
        )

    def snapshot(self) -> dict[str, Any]:
        """The figures for ``loader.stats()``, reading the workers again if due.

        Keys (bytes, by worker id; None where unknown): ``worker_uss_start`` (at the worker's
        first batch), ``worker_uss`` (the latest reading), ``worker_uss_growth`` (their
        difference), ``worker_uss_growth_total`` (the sum; None without process workers) and
        ``worker_batch_memory`` (the bytes of a worker's USS that may serve its batches: its
        slabs the main process holds no batch in, one more being written, the kept heap; the
        warning counts only the growth beyond them).
        """
        self._read_pending()
        if self._pids is not None and time.monotonic() >= self._next_sample:
            self.sample()
        return {
            "worker_uss_start": dict(sorted(self.start.items())),
            "worker_uss": dict(sorted(self.now.items())),
            "worker_uss_growth": dict(sorted(self.growth().items())),
            "worker_uss_growth_total": self.total_growth(),
            "worker_batch_memory": dict(sorted(self.batch_memory().items())),
        }
