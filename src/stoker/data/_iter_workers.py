"""Iteration with workers, threads or processes: dispatching tasks, ordering replies, failures.

Each batch is a :class:`~stoker.data._workers.protocol.Task` ``(task_id, index)`` sent to one
worker; ids count up from 0 each epoch. At most ``prefetch_factor * num_workers`` tasks are out
(sent and not yet yielded) at a time: the loader fills that window when an epoch starts and
sends one more task each time it yields a batch (or a worker reports its iterable replica
exhausted). With ``in_order=True`` tasks go to the workers round-robin and batches are yielded
in task order, later ones waiting in a reorder buffer; with ``in_order=False`` a task goes to
the next worker with room and each batch is yielded as soon as it arrives.

When the user leaves ``prefetch_factor`` unset (torch's default of 2), process workers whose
batches prove small go deeper: when the first whole batches arrive (the first replies carrying
batches; with a split first batch, those after it), if they moved under
:data:`AUTO_PREFETCH_BYTES` on average, every worker may run :data:`AUTO_PREFETCH` batches
ahead, decided once per iterator. Deciding on arrival, not on delivery, keeps a worker that
started first at work while a later one is still starting (decided once as many batches as
workers had been yielded, the first worker of a fresh loader sat idle, its tasks done, waiting
on the second worker's first batch). Small batches come so fast that a window of two per
worker makes the loader wait on round trips (a reply, then the next task) rather than on work;
the figures, from ``benchmarks/loader_bench.py`` and ``benchmarks/first_batch_bench.py``, are
in docs/design/data_loader.md, and the memory ahead stays under 1 MiB a worker. Which worker
loads which batch, and so every batch and its order, does not change; only how far ahead the
workers run. A ``prefetch_factor`` the user sets (2 included) is kept as given.

With ``split_first_batch`` (map-style datasets, default collation, 2 or more workers), the
first batch of each epoch goes out as one *share* per worker (task ids 0, -1, -2, ...): each
worker gathers its slice of the samples, and the main process collates the shares in order into
the batch of task 0, which then comes up to ``num_workers`` times sooner. The rest of the
epoch's window is sent once that batch is collated, so the workers do not take the cores from
the collation (they wait for it, once an epoch).

Every wait for replies lasts at most :data:`~stoker.data._workers.timeouts.CHECK_INTERVAL`
seconds at a time and watches the workers' liveness too, so a dead worker raises RuntimeError
naming its pid, exit code or signal and the indices it held, and ``timeout`` raises RuntimeError
naming the timeout. A failure inside a worker re-raises in order, with its original type; the
iterator stays usable. Workers stop at the end of the epoch (unless persistent), on
:meth:`WorkerIter.close`, when the iterator is garbage collected, and at interpreter exit (a
:func:`weakref.finalize` owns the shutdown).

Workers are processes or, with ``worker_type="thread"``, threads (see
:mod:`stoker.data._workers.pool`); the bookkeeping here is the same for both. Each reply's
``meta`` carries the worker's busy time (added to the loader's
:class:`~stoker.data._stats.LoaderStats`) and, for an IterableDataset with a ``state_dict()``,
the replica's state right after the batch: it becomes ``last_worker_state[worker_id]`` when
that batch is yielded (and when the worker reports its replica exhausted). With the worker that
delivered last and the workers already exhausted, these states let a checkpoint resume an
IterableDataset exactly (see docs/design/resume.md): a resumed iterator hands each worker its
saved state in its ``WorkerSetup`` and starts the round-robin at the worker that was next.
"""

from __future__ import annotations

import errno
import itertools
import os
import resource
import signal
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from stoker._checks import torch_first
from stoker.data._collate import default_collate
from stoker.data._errors import short_repr
from stoker.data._iter import LoaderIter
from stoker.data._plan import LoaderPlan
from stoker.data._resume.progress import DeliveryMarks
from stoker.data._resume.tracker import ResumeTracker
from stoker.data._sample_rng import KeyedIndices
from stoker.data._stats import LoaderStats
from stoker.data._task_book import SplitBatch, TaskBook
from stoker.data._workers import (
    BATCH,
    CHECK_INTERVAL,
    EXHAUSTED,
    FAILED,
    NO_STATE,
    RESET_DONE,
    Meta,
    Reply,
    Reset,
    Status,
    Task,
    WorkerSetup,
    make_pool,
)

__all__ = ["AUTO_PREFETCH", "AUTO_PREFETCH_BYTES", "WorkerIter"]

AUTO_PREFETCH = 16
"""Batches a process worker may load ahead when ``prefetch_factor`` is unset and batches are
small (torch's default of 2 holds otherwise)."""

AUTO_PREFETCH_BYTES = 64 << 10
"""Average bytes a batch moves (pickled, plus arrays through slabs) under which an unset
``prefetch_factor`` goes to :data:`AUTO_PREFETCH`: at most 1 MiB ahead per worker."""


class _Shares:
    """The samples of a split first batch, gathered by the workers, to collate here."""

    __slots__ = ("samples",)

    def __init__(self, samples: list[Any]) -> None:
        self.samples = samples


_OUT_OF_FILES = (
    "Too many open files. Communication with the workers is no longer possible. Please "
    "increase the limit using `ulimit -n` in the shell or change the sharing strategy by "
    "calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
    "your code"
)
"""torch's text for running out of file descriptors while talking to workers."""


_FD_MARGIN = 10
"""Descriptors that must still be free for a failed receive not to count as running out of
files (torch's margin in ``_try_get_data``)."""


def _out_of_files(err: BaseException) -> bool:
    """Tell whether ``err`` comes from this process running out of file descriptors.

    EMFILE says so itself. Other failures may hide it: a tensor sent with torch's reductions
    arrives as a descriptor, and ``recvmsg`` at the limit drops that descriptor, so unpickling
    fails with ``RuntimeError: received 0 items of ancdata``. So, as torch does, any other error
    counts when fewer than :data:`_FD_MARGIN` descriptors can be opened right after it.
    """
    if isinstance(err, OSError) and err.errno == errno.EMFILE:
        return True
    if not isinstance(err, Exception):
        return False  # Ctrl-C, SystemExit
    opened: list[int] = []
    try:
        for _ in range(_FD_MARGIN):
            opened.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as probe:
        return probe.errno == errno.EMFILE
    finally:
        for fd in opened:
            os.close(fd)
    return False


def _raise_if_out_of_files(err: BaseException, doing: str) -> None:
    """Raise torch's RuntimeError when ``err`` comes from running out of file descriptors.

    The error carries stoker's reading of it (see :func:`_out_of_files`).
    """
    if not _out_of_files(err):
        return
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    raise RuntimeError(
        torch_first(
            f"{_OUT_OF_FILES}.",
            f"the process reached its limit of {soft} open files while {doing}; every worker "
            "holds two pipes and every shared-memory slab of a batch still alive one mapping, "
            "and tensors a dataset sends back travel as file descriptors: raise the limit, "
            "keep fewer batches alive, or use fewer workers",
        )
    ) from err


class WorkerIter(LoaderIter):
    """Fetches batches in worker threads or processes; see the module docstring."""

    def __init__(self, plan: LoaderPlan, tracker: ResumeTracker, stats: LoaderStats) -> None:
        """Start the workers of ``plan`` and fill the prefetch window of the first epoch.

        Args:
            plan: what to load and how.
            tracker: the loader's resume tracker (epoch progress, restored positions).
            stats: the loader's counters, which this iterator adds to.
        """
        super().__init__(plan, tracker)
        self._prefetch_factor = plan.prefetch_factor
        # an unset prefetch_factor may deepen once the first batches show they are small
        self._depth_pending = plan.prefetch_auto and plan.worker_type == "process"
        self._in_order = plan.in_order
        self._collate_fn = plan.collate_fn
        self._split_first = (
            plan.split_first_batch
            and plan.num_workers > 1
            and plan.auto_collation
            and not plan.iterable
            and plan.collate_fn is default_collate
        )
        self._persistent = plan.persistent_workers
        resume = self._progress.replicas.resume
        setups = [
            WorkerSetup(
                dataset=plan.dataset,
                iterable=plan.iterable,
                auto_collation=plan.auto_collation,
                collate_fn=plan.collate_fn,
                drop_last=plan.drop_last,
                base_seed=self._base_seed,
                worker_id=worker_id,
                num_workers=plan.num_workers,
                init_fn=plan.worker_init_fn,
                resume_state=None if resume is None else resume["workers"][worker_id],
                epoch_setup=plan.epoch_setup,
                shared_seed=self._shared_seed,
            )
            for worker_id in range(plan.num_workers)
        ]
        self._stats = stats
        self._pending_state: dict[int, Any] = {}
        started = time.perf_counter()
        try:
            self._pool = make_pool(plan.multiprocessing_context, setups, plan.worker_type)
            self._finalizer = weakref.finalize(self, self._pool.shutdown)
            # The first window goes into the task pipes before any worker starts: each worker
            # finds its first task as it starts, and with fork the first worker is at work
            # while the next one is forked (on the image workload of benchmarks/
            # first_batch_bench.py it began 3-4 ms sooner).
            self._start_epoch()
            self._pool.start()
        except OSError as err:
            _raise_if_out_of_files(err, "starting the workers")
            raise
        self._stats.start_seconds += time.perf_counter() - started
        self._stats.attach(self._pool)
        self._stats.prefetch_depth = self._prefetch_factor
        if plan.worker_type == "thread":
            self._stats.memory.attach(None)
        else:
            self._stats.memory.attach(self._pool.pids, self._pool.batch_memory)

    @property
    def worker_pids(self) -> list[int]:
        """The workers' process ids, by worker id (this process's, for thread workers)."""
        return self._pool.pids

    # torch's private names for the same things, read by code written against torch's
    # iterator (torch's own tests, trainers checking that workers ended): views, never setters

    @property
    def _workers(self) -> list[Any]:
        """What runs each worker, by worker id, as torch's iterator lists its processes.

        The ``multiprocessing.Process`` of each process worker (``is_alive()``, ``pid``,
        ``exitcode``, ``join(timeout)``, ``terminate()``), the ``threading.Thread`` of each
        thread worker. They stay listed after the workers stop, as in torch; a new list each
        read, so changing it changes nothing.
        """
        return self._pool.workers

    def _shutdown_workers(self) -> None:
        """Torch's name for :meth:`close`: stop the workers and end the iteration."""
        self.close()

    @property
    def last_worker_state(self) -> dict[int, Any]:
        """An IterableDataset's ``state_dict()`` per worker id, as of its last batch yielded.

        A worker's final state (taken when its replica ended) replaces it once all of that
        worker's batches have been yielded. Empty for datasets without ``state_dict()``.
        """
        return self._progress.replicas.states

    def _start_epoch(self) -> None:
        self._send_idx = 0
        self._rcvd_idx = 0
        self._book = TaskBook(self._num_workers)
        self._ready: dict[int, tuple[Status, Any, Meta]] = {}
        self._first = SplitBatch()  # the shares of a split first batch, until all are in
        # A resumed epoch goes on where it stopped: the round-robin starts at the worker that
        # was next, and workers whose replica had ended get no task.
        progress, count = self._progress, self._num_workers
        progress.marks = None if self._in_order else DeliveryMarks()
        replicas = progress.replicas
        first = 0 if replicas.last_worker is None else replicas.last_worker + 1
        self._active = [w not in replicas.exhausted for w in range(count)]
        self._cycle: Iterator[int] = itertools.cycle((first + i) % count for i in range(count))
        self._dispatch()
        if self._first.holds_window:
            # The first batch went out in shares, one per worker. The main process collates
            # them (a copy of the whole batch), and with the rest of the window sent the workers
            # would already be on the next batches, each core shared three ways: on the
            # JPEG workload of benchmarks/loader_bench.py that collation took 126 ms instead
            # of about 40. So the window fills once the first batch is collated.
            return
        self._fill_window()

    def _settle_depth(self, replies: list[tuple[int, Reply]], moved: int) -> None:
        """Settle the prefetch depth from the first replies carrying whole batches.

        With ``prefetch_factor`` unset: on the first replies carrying whole batches, which
        moved ``moved`` bytes, let every worker run :data:`AUTO_PREFETCH` batches ahead if
        they average under :data:`AUTO_PREFETCH_BYTES` (see the module docstring); decided
        once per iterator.
        """
        if self._first.holds_window:
            return  # shares of a split first batch: slices, not whole batches
        batches = sum(1 for _, reply in replies if reply.status is BATCH)
        if not batches:
            return
        self._depth_pending = False
        if moved <= batches * AUTO_PREFETCH_BYTES:
            self._prefetch_factor = max(self._prefetch_factor, AUTO_PREFETCH)
            self._stats.prefetch_depth = self._prefetch_factor
            self._fill_window()

    def _pick_worker(self) -> int | None:
        active = sum(self._active)
        if active == 0:
            return None
        room = max(1, (self._prefetch_factor * self._num_workers) // active)
        for _ in range(self._num_workers):
            worker_id = next(self._cycle)
            if self._active[worker_id] and (self._in_order or self._book.load(worker_id) < room):
                return worker_id
        candidates = [w for w in range(self._num_workers) if self._active[w]]
        return min(candidates, key=self._book.load)

    def _dispatch(self) -> bool:
        """Send the next task if the window has room; say whether one went out."""
        if self._closed or self._book.outstanding >= self._prefetch_factor * self._num_workers:
            return False
        worker_id = self._pick_worker()
        if worker_id is None:
            return False
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return False
        task_id = self._send_idx
        if task_id == 0 and self._split_first and self._split(worker_id, index):
            self._send_idx += 1
            return True
        self._pool.send(worker_id, Task(task_id, index))
        self._book.add(task_id, worker_id, index)
        self._send_idx += 1
        return True

    def _split(self, first_worker: int, index: Any) -> bool:
        """Send the epoch's first batch as one share per worker; False when it cannot split.

        Share 0 (task id 0) goes to ``first_worker``, the others (task ids -1, -2, ...) to the
        next workers; each carries its slice of the indices with the batch's sample key, so
        every sample is loaded as it would be in one piece, by whichever worker.
        """
        if type(index) not in (list, KeyedIndices) or len(index) < 2:
            return False
        key = getattr(index, "key", None)
        sent = []
        for task_id, worker_id, piece in SplitBatch.shares(index, first_worker, self._num_workers):
            share = list(piece) if key is None else KeyedIndices(list(piece), key)
            self._pool.send(worker_id, Task(task_id, share, whole=len(index)))
            self._book.add(task_id, worker_id, share)
            sent.append(task_id)
        self._first.expect(sent)
        return True

    def _join_shares(self, task_id: int, status: Status, payload: Any, meta: Meta) -> None:
        """Keep one share's reply; once all are in, the batch is ready as task 0.

        The batch is uncollated (:meth:`_deliver` collates it); the first failed share stands
        for the batch.
        """
        if task_id != 0:
            self._book.pop(task_id)  # share 0 stands for the batch until it is delivered
        done = self._first.join(task_id, (status, payload, meta))
        if done is None:
            return
        failed = [reply for reply in done if reply[0] is FAILED]
        if failed:
            self._ready[0] = failed[0]
            return
        samples = [sample for _, payload_part, _ in done for sample in payload_part]
        self._ready[0] = (BATCH, _Shares(samples), done[0][2])

    def _next_data(self) -> Any:
        while True:
            if self._in_order:
                while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._book:
                    self._rcvd_idx += 1
                if self._rcvd_idx in self._ready:
                    return self._deliver(self._rcvd_idx)
            elif self._ready:
                return self._deliver(next(iter(self._ready)))
            if not self._book:
                if not self._persistent:
                    self._pool.shutdown(wait=False)  # every task answered: no teardown wait
                    self.close()
                raise StopIteration
            self._wait(self._handle_reply)

    def _deliver(self, task_id: int) -> Any:
        status, payload, meta = self._ready.pop(task_id)
        worker_id, _ = self._book.pop(task_id)
        if self._in_order:
            self._rcvd_idx = task_id + 1
        progress = self._progress
        replicas = progress.replicas
        replicas.last_worker = worker_id
        if progress.marks is not None:
            progress.marks.deliver(task_id)
        if self._iterable:
            if meta.ended:
                replicas.exhausted.add(worker_id)
            if meta.worker_state is not NO_STATE:
                replicas.states[worker_id] = meta.worker_state
            elif meta.state_error is not None:
                replicas.failed = True
                failure = meta.state_error
                warnings.warn(
                    f"the IterableDataset's state_dict() failed in worker {worker_id}, so its "
                    f"state was not recorded with this batch: {failure.describe()}",
                    RuntimeWarning,
                    stacklevel=4,
                )
        self._apply_pending_state(worker_id)
        self._stats.batches_served += 1
        self._stats.memory.on_batch(worker_id, stacklevel=4)  # the caller of next(iterator)
        if self._first.release_window():  # a split first batch: the rest of the window once
            try:  # it is collated
                return self._batch_of(status, payload)
            finally:
                self._fill_window()
        self._fill_window()
        return self._batch_of(status, payload)

    def _batch_of(self, status: Status, payload: Any) -> Any:
        """Raise a failed batch's error; collate a split batch's shares; return the batch."""
        if status is FAILED:
            payload.reraise()
        if type(payload) is _Shares:
            return self._collate_fn(payload.samples)
        return payload

    def _fill_window(self) -> None:
        while self._dispatch():
            pass

    def _apply_pending_state(self, worker_id: int) -> None:
        """Record an exhausted worker's final state once none of its batches is waiting."""
        if worker_id in self._pending_state and not self._book.holds_any(worker_id):
            replicas = self._progress.replicas
            replicas.states[worker_id] = self._pending_state.pop(worker_id)
            replicas.exhausted.add(worker_id)

    def _handle_reply(self, worker_id: int, reply: Reply) -> None:
        task_id, status, payload, meta = reply
        self._stats.add_busy(worker_id, meta.busy)
        if task_id not in self._book:
            return
        if task_id in self._first:
            self._join_shares(task_id, status, payload, meta)
        elif status is EXHAUSTED:
            self._active[worker_id] = False
            self._book.pop(task_id)
            if meta.worker_state is not NO_STATE:
                self._pending_state[worker_id] = meta.worker_state
                self._apply_pending_state(worker_id)
            self._dispatch()
        elif status is BATCH or status is FAILED:
            self._ready[task_id] = (status, payload, meta)

    def _wait(self, handle: Callable[[int, Reply], None]) -> None:
        """Wait for at least one reply and pass each to ``handle``; raise on death or timeout."""
        deadline = None if not self._timeout else time.monotonic() + float(self._timeout)
        while True:
            budget = CHECK_INTERVAL
            if deadline is not None:
                budget = min(budget, deadline - time.monotonic())
            started = time.perf_counter()
            moved = self._moved() if self._depth_pending else 0
            try:
                replies, dead = self._pool.receive(budget)
            except BaseException as err:
                # Ctrl-C (or SystemExit) while reading may leave a half-read message behind:
                # this iterator cannot go on, so its workers stop now.
                self.close()
                _raise_if_out_of_files(err, "receiving a batch")
                raise
            self._stats.wait_seconds += time.perf_counter() - started
            for worker_id, reply in replies:
                handle(worker_id, reply)
            if self._depth_pending and replies:
                self._settle_depth(replies, self._moved() - moved)
            if dead:
                self._fail_dead(dead)
            if replies:
                return
            if deadline is not None and time.monotonic() >= deadline:
                self._fail_timeout()

    def _moved(self) -> int:
        """Bytes received from the workers so far, through pipes and slabs."""
        return self._pool.bytes_inline + self._pool.bytes_in_slabs

    def _held(self, worker_id: int) -> list[tuple[int, Any]]:
        return self._book.held_by(worker_id, self._ready)

    def _fail_dead(self, dead: list[int]) -> None:
        lines = []
        for worker_id in dead:
            held = self._held(worker_id)
            if held:
                batches = ", ".join(
                    f"batch {task_id} (indices {short_repr(index, 80)})"
                    for task_id, index in held[:4]
                )
                more = f" and {len(held) - 4} more" if len(held) > 4 else ""
                lines.append(f"{self._pool.describe(worker_id)}; it held {batches}{more}")
            else:
                lines.append(f"{self._pool.describe(worker_id)}; it held no batch")
        pids = ", ".join(str(self._pool.pids[worker_id]) for worker_id in dead)
        torch_words = "".join(self._torch_account(worker_id) for worker_id in dead)
        self.close()
        raise RuntimeError(
            f"DataLoader worker (pid(s) {pids}) exited unexpectedly: {torch_words}"
            + "; ".join(lines)
            + ". A signal usually means the process crashed (segfault) or was killed (out of "
            "memory: see dmesg); an exit code means the dataset called sys.exit/os._exit or the "
            "worker failed to start (its stderr shows why). The loader can be iterated again."
        )

    def _torch_account(self, worker_id: int) -> str:
        """Torch's sentence for a worker process it sees end (its SIGCHLD handler's), or ""."""
        code = self._pool.exitcode(worker_id)
        if code is None:
            return ""
        pid = self._pool.pids[worker_id]
        if code < 0:
            try:
                name = signal.strsignal(-code) or f"signal {-code}"
            except ValueError:
                name = f"signal {-code}"
            return f"DataLoader worker (pid {pid}) is killed by signal: {name}. "
        return (
            f"DataLoader worker (pid {pid}) exited unexpectedly with exit code {code}. Details "
            "are lost due to multiprocessing. Rerunning with num_workers=0 may give better "
            "error trace. "
        )

    def _fail_timeout(self) -> None:
        if self._in_order and self._rcvd_idx in self._book:
            worker_id = self._book.holder(self._rcvd_idx)
            what = (
                f"batch {self._rcvd_idx} from worker {worker_id} (pid {self._pool.pids[worker_id]})"
            )
        else:
            what = f"any of {self._book.outstanding} outstanding batches"
        raise RuntimeError(
            f"DataLoader timed out after {self._timeout} seconds (timeout={self._timeout!r}) "
            f"waiting for {what}; raise timeout, or pass timeout=0 to wait without a limit"
        )

    def _reset(self, plan: LoaderPlan) -> None:
        """Start a new epoch on the same workers: reset each, discard stale replies."""
        super()._reset(plan)
        if self._closed:
            raise RuntimeError(
                "cannot reset a closed DataLoader iterator; call iter(loader) for a new one"
            )
        reset = Reset(self._shared_seed)
        for worker_id in range(self._num_workers):
            self._pool.send(worker_id, reset)
        waiting = set(range(self._num_workers))

        def on_reply(worker_id: int, reply: Reply) -> None:
            if reply.status is RESET_DONE:
                waiting.discard(worker_id)

        while waiting:
            self._wait(on_reply)
        self._pending_state.clear()  # each replica starts its iteration again
        self._start_epoch()

    def close(self) -> None:
        """Stop the workers (within a few seconds) and end the iteration."""
        self._closed = True
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()
