"""Thread workers: the thread host and pool that run the one worker loop in this process.

``DataLoader(..., worker_type="thread")`` starts ``num_workers`` daemon threads, each running
:func:`~stoker.data._workers.loop.worker_loop` with a :class:`ThreadHost`. Tasks reach a thread
through its own :class:`queue.Queue`; replies come back on one shared queue as
``(worker_id, reply)``. Batches are handed over as objects: no pickling, no copy, no shared
memory. The dispatching, ordering and failure handling are the main side's
(:mod:`stoker.data._iter_workers`), the same for both kinds, so the batches and their order are
the same as with processes. A thread whose loop returns leaves an ``ENDED`` reply, which the
pool reports like a dead process.

Differences from process workers, all because threads share one process:

* each thread gets a shallow copy of the dataset (:func:`copy.copy`; the dataset itself when it
  cannot be copied): attributes a worker sets (in ``worker_init_fn``, or an IterableDataset's
  position) stay its own, as with processes, while the objects they point to (arrays, files)
  are shared, not duplicated;
* process-wide generators are not reseeded: ``WorkerInfo.rng`` holds this worker's own
  ``random.Random`` and ``numpy.random.Generator`` (keys ``"random"`` and ``"numpy"``), both
  seeded with ``WorkerInfo.seed``;
* torch keeps one ``get_worker_info()`` answer per process: while worker threads run, that
  answer is looked up per thread (see :mod:`stoker.data._workers.info`), so a dataset that asks
  torch in a worker thread gets that thread's id, and one that asks in another thread an error;
* a thread cannot be killed: :meth:`ThreadPool.shutdown` asks each to stop and waits up to
  :data:`~stoker.data._workers.timeouts.STOP_GRACE`; a thread stuck in ``__getitem__`` is left
  to finish as a daemon;
* CPU-bound pure-Python ``__getitem__`` code holds the GIL, so threads help when the work
  releases it (NumPy, decoding, file and network I/O);
* the heap tuning process workers make in themselves (keep about one batch of freed heap for
  the next batch's samples, :mod:`stoker.data._workers.heap`) is made in this process once a
  thread worker collates a batch of 2 MiB of arrays or more: glibc's thresholds for the whole
  process, bounded as for a worker (``STOKER_DATA_KEEP_HEAP=0`` leaves malloc alone).
"""

from __future__ import annotations

import contextlib
import copy
import os
import queue
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from stoker.data._workers.heap import MAX_KEEP, keep_heap, kept
from stoker.data._workers.info import WorkerInfo, set_thread_worker_info, torch_answers_thread
from stoker.data._workers.loop import worker_loop
from stoker.data._workers.protocol import (
    ENDED,
    NO_TASK,
    STOP,
    Command,
    Meta,
    Reply,
    Reset,
    Task,
    WorkerSetup,
)
from stoker.data._workers.slabs import DROP_PAGES_FROM, array_bytes
from stoker.data._workers.timeouts import STOP_GRACE

__all__ = ["KEEP_HEAP_FROM", "ThreadHost", "ThreadPool"]

KEEP_HEAP_FROM = DROP_PAGES_FROM
"""Array bytes of a batch from which thread workers keep freed heap for the next batch."""

_Results = queue.Queue[tuple[int, Reply]]
"""The queue every thread puts its ``(worker_id, reply)`` pairs on."""


class ThreadHost:
    """The worker side of thread workers (see :class:`~stoker.data._workers.loop.WorkerHost`)."""

    worker_method = "threading"

    def __init__(
        self, worker_id: int, tasks: queue.Queue[Task | Reset | Command], results: _Results
    ) -> None:
        self._worker_id = worker_id
        self._tasks = tasks
        self._results = results

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        """Give this thread its own generators and make ``get_worker_info()`` answer."""
        seed = setup.base_seed + setup.worker_id
        rng = {"random": random.Random(seed), "numpy": np.random.default_rng(seed)}
        info = WorkerInfo(
            id=setup.worker_id,
            num_workers=setup.num_workers,
            seed=seed,
            dataset=setup.dataset,
            rng=rng,
            worker_method=self.worker_method,
        )
        set_thread_worker_info(info)
        torch_answers_thread(info)
        return info

    def prepare_collate(self, collate_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Keep ``collate_fn`` (batches are handed over as objects), noting each batch's bytes.

        The bytes noted are the batch's array bytes: from :data:`KEEP_HEAP_FROM` on, this
        process keeps about a batch of freed heap for the next batch's samples
        (:func:`~stoker.data._workers.heap.keep_heap`).
        """

        def collate_and_keep(batch: Any) -> Any:
            collated = collate_fn(batch)
            if kept() < MAX_KEEP:
                size = array_bytes(collated)
                if size >= KEEP_HEAP_FROM:
                    keep_heap(size)
            return collated

        return collate_and_keep

    def receive(self) -> Task | Reset | Command:
        """Return the next message (blocks; the pool always ends with STOP)."""
        message: Task | Reset | Command = self._tasks.get()
        return message

    def send(self, reply: Reply) -> None:
        """Hand ``reply`` to the main thread."""
        self._results.put((self._worker_id, reply))


def _thread_main(setup: WorkerSetup, host: ThreadHost, results: _Results) -> None:
    try:
        worker_loop(setup, host)
    finally:
        set_thread_worker_info(None)
        results.put((setup.worker_id, Reply(NO_TASK, ENDED, None, Meta())))


def _own_copy(dataset: Any) -> Any:
    try:
        return copy.copy(dataset)
    except Exception:  # an uncopyable dataset is shared as it is
        return dataset


class ThreadPool:
    """The main side of thread workers: one thread and task queue per worker."""

    def __init__(self, setups: list[WorkerSetup]) -> None:
        """Make one daemon thread per setup; :meth:`start` starts them."""
        self._results: _Results = queue.Queue()
        self._tasks: list[queue.Queue[Task | Reset | Command]] = []
        self.threads: list[threading.Thread] = []
        self._stopping = False
        self._ended: set[int] = set()
        self.closed = False
        self.bytes_inline = 0
        self.bytes_in_slabs = 0
        self.slabs_in_use = 0
        for shared in setups:
            setup = shared._replace(dataset=_own_copy(shared.dataset))
            tasks: queue.Queue[Task | Reset | Command] = queue.Queue()
            host = ThreadHost(setup.worker_id, tasks, self._results)
            thread = threading.Thread(
                target=_thread_main,
                args=(setup, host, self._results),
                name=f"stoker-data-worker-{setup.worker_id}",
                daemon=True,
            )
            self._tasks.append(tasks)
            self.threads.append(thread)

    def start(self) -> None:
        """Start the worker threads (tasks sent before wait in their queues)."""
        for thread in self.threads:
            thread.start()

    @property
    def pids(self) -> list[int]:
        """The process id (this process) once per worker."""
        return [os.getpid()] * len(self.threads)

    @property
    def workers(self) -> list[threading.Thread]:
        """The worker threads, by worker id; a new list."""
        return list(self.threads)

    def send(self, worker_id: int, message: Task | Reset | Command) -> None:
        """Queue ``message`` for worker thread ``worker_id``."""
        self._tasks[worker_id].put(message)

    def receive(self, timeout: float) -> tuple[list[tuple[int, Reply]], list[int]]:
        """Wait up to ``timeout`` seconds for replies; report threads that ended on their own."""
        replies: list[tuple[int, Reply]] = []
        try:
            item = self._results.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return replies, []
        items = [item]
        with contextlib.suppress(queue.Empty):
            while True:
                items.append(self._results.get_nowait())
        dead = []
        for worker_id, reply in items:
            if reply.status is ENDED:
                self._ended.add(worker_id)
                if not self._stopping:
                    dead.append(worker_id)
            else:
                replies.append((worker_id, reply))
        return replies, dead

    def batch_memory(self, worker_id: int) -> int:
        """No slabs: threads hand batches over as objects."""
        return 0

    def describe(self, worker_id: int) -> str:
        """Name a worker thread and say how it ended."""
        thread = self.threads[worker_id]
        state = "is running" if thread.is_alive() else "ended (an exception escaped its loop)"
        return f"worker {worker_id} (thread {thread.name} in pid {os.getpid()}) {state}"

    def exitcode(self, worker_id: int) -> int | None:
        """None: a thread has no exit code."""
        return None

    def shutdown(self, grace: float = STOP_GRACE, *, wait: bool = True) -> None:
        """Ask every thread to stop and wait up to ``grace`` seconds for them; idempotent.

        ``wait`` is for the pool interface: a thread's end costs nothing to wait for.
        """
        if self.closed:
            return
        self.closed = True
        self._stopping = True
        for tasks in self._tasks:
            with contextlib.suppress(queue.Empty):  # drop queued tasks: stop after the current one
                while True:
                    tasks.get_nowait()
            tasks.put(STOP)
        deadline = time.monotonic() + grace
        current = threading.current_thread()
        for thread in self.threads:
            if thread is not current and thread.ident is not None:  # started
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
