"""Counters a DataLoader keeps about its worker iterators, read with ``loader.stats()``.

Each DataLoader owns one :class:`LoaderStats`; its worker iterators add to it as they run:
batches yielded, seconds the main process spent waiting for replies, seconds each worker spent
fetching and collating, seconds spent starting workers, and the bytes that came back through
pipes and through shared-memory slabs; and the private memory of its process workers
(:class:`~stoker.data._memory.WorkerMemory`). :meth:`LoaderStats.snapshot` returns a plain dict.
"""

from __future__ import annotations

from typing import Any, Protocol

from stoker.data._memory import WorkerMemory

__all__ = ["LoaderStats"]


class _Counted(Protocol):
    @property
    def bytes_inline(self) -> int: ...

    @property
    def bytes_in_slabs(self) -> int: ...

    @property
    def slabs_in_use(self) -> int: ...


class LoaderStats:
    """Running totals over every worker iterator of one DataLoader."""

    def __init__(self) -> None:
        """Start every counter at zero."""
        self.batches_served = 0
        self.prefetch_depth = 0
        self.wait_seconds = 0.0
        self.start_seconds = 0.0
        self.worker_busy_seconds: dict[int, float] = {}
        self._pools: list[_Counted] = []
        self._bytes_inline_done = 0
        self._bytes_in_slabs_done = 0
        self.memory = WorkerMemory()

    def add_busy(self, worker_id: int, seconds: float) -> None:
        """Add ``seconds`` of work to worker ``worker_id``."""
        self.worker_busy_seconds[worker_id] = self.worker_busy_seconds.get(worker_id, 0.0) + seconds

    def attach(self, pool: _Counted) -> None:
        """Count the bytes and slabs of ``pool`` from now on."""
        self._pools.append(pool)
        if len(self._pools) > 4:  # keep totals of old pools, drop the pools themselves
            old = self._pools.pop(0)
            self._bytes_inline_done += old.bytes_inline
            self._bytes_in_slabs_done += old.bytes_in_slabs

    def snapshot(self) -> dict[str, Any]:
        """Return the counters as a dict of plain values.

        Keys: ``batches_served``, ``main_wait_seconds``, ``worker_busy_seconds`` (a dict by
        worker id), ``worker_start_seconds``, ``bytes_inline`` (pickled bytes through pipes),
        ``bytes_in_slabs`` (array bytes through shared memory), ``bytes_moved`` (their sum)
        ``slabs_in_use`` (slabs whose batch is still alive in the main process) and
        ``prefetch_depth`` (batches each worker of the latest iterator may load ahead:
        ``prefetch_factor``, or :data:`~stoker.data._iter_workers.AUTO_PREFETCH` once an unset
        one went deeper; 0 before any worker started); and the
        private memory (USS, bytes) of the current process workers: ``worker_uss_start`` (at
        each worker's first batch), ``worker_uss`` (latest reading, at most a second old),
        ``worker_uss_growth`` (by worker id; None where unknown),
        ``worker_uss_growth_total`` (None without process workers or ``/proc``) and
        ``worker_batch_memory`` (by worker id: the slabs and kept heap in the worker's USS,
        which the copy warning does not count).
        """
        inline = self._bytes_inline_done + sum(pool.bytes_inline for pool in self._pools)
        slabs = self._bytes_in_slabs_done + sum(pool.bytes_in_slabs for pool in self._pools)
        return {
            "batches_served": self.batches_served,
            "prefetch_depth": self.prefetch_depth,
            "main_wait_seconds": self.wait_seconds,
            "worker_busy_seconds": dict(sorted(self.worker_busy_seconds.items())),
            "worker_start_seconds": self.start_seconds,
            "bytes_inline": inline,
            "bytes_in_slabs": slabs,
            "bytes_moved": inline + slabs,
            "slabs_in_use": sum(pool.slabs_in_use for pool in self._pools),
            **self.memory.snapshot(),
        }
