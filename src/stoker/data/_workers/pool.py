"""The main side's interface to its workers (:class:`WorkerPool`), and the one place to start them.

The loader's worker iterator (:mod:`stoker.data._iter_workers`) sees only this interface: it
sends tasks and commands, waits for replies and deaths, names a worker in an error, and shuts
the pool down. Two pools implement it: :class:`~stoker.data._workers.process.ProcessPool`
(``worker_type="process"``) and :class:`~stoker.data._workers.threads.ThreadPool`
(``worker_type="thread"``); :func:`make_pool` picks one. A pool is made first and started
after: what the iterator sends in between (an epoch's first tasks) waits in the workers'
pipes or queues, so each worker finds its first task the moment it starts.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext
from typing import Any, Protocol

from stoker.data._workers.process import ProcessPool
from stoker.data._workers.protocol import Command, Reply, Reset, Task, WorkerSetup
from stoker.data._workers.threads import ThreadPool

__all__ = ["WorkerPool", "make_pool"]


class WorkerPool(Protocol):
    """What the worker iterator needs from its workers, whatever runs them."""

    @property
    def pids(self) -> list[int]:
        """Process ids of the workers, by worker id."""

    @property
    def workers(self) -> list[Any]:
        """What runs each worker, by worker id; a new list each call.

        Its ``multiprocessing.Process`` (``is_alive()``, ``pid``, ``exitcode``,
        ``join(timeout)``, ``terminate()``, ``kill()``) or its ``threading.Thread``
        (``is_alive()``, ``join(timeout)``).
        """

    def start(self) -> None:
        """Start the workers, in id order (once, before the first :meth:`receive`)."""

    def send(self, worker_id: int, message: Task | Reset | Command) -> None:
        """Queue a message for one worker without blocking (before :meth:`start` too)."""

    def receive(self, timeout: float) -> tuple[list[tuple[int, Reply]], list[int]]:
        """Wait up to ``timeout`` s; return ``(worker_id, reply)`` pairs and dead worker ids."""

    def describe(self, worker_id: int) -> str:
        """Name a worker and say how it ended."""

    def exitcode(self, worker_id: int) -> int | None:
        """A worker process's exit code (negative: the signal), or None (running, a thread)."""

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop every worker within a few seconds; idempotent.

        ``wait=False``: every task is answered, so return once the workers are past their last
        work and finish the stopping in the background.
        """

    @property
    def bytes_inline(self) -> int:
        """Bytes received through pipes (pickled replies)."""

    @property
    def bytes_in_slabs(self) -> int:
        """Bytes of batch arrays received through shared-memory slabs."""

    @property
    def slabs_in_use(self) -> int:
        """Slabs whose batch is still alive in the main process."""

    def batch_memory(self, worker_id: int) -> int:
        """Bytes of a worker's private memory that may serve its batches (0 for threads)."""


def make_pool(
    context: BaseContext | None, setups: list[WorkerSetup], worker_type: str = "process"
) -> WorkerPool:
    """Make the pool for ``setups``, not started.

    Threads, or processes with ``context`` (or the default).
    """
    if worker_type == "thread":
        return ThreadPool(setups)
    return ProcessPool(context or multiprocessing.get_context(), setups)
