"""Process workers: the process host, its entry point, and the pool that starts and watches them.

Each worker gets its own task pipe (written by :class:`~stoker.data._workers.taskpipe.TaskPipe`
from the calling thread without ever blocking) and its own one-way result pipe (the worker
pickles each reply and writes it; no lock is shared between workers, so a worker killed
mid-write cannot block another). The main process waits on every result pipe and every process
sentinel at once, as :func:`multiprocessing.connection.wait` does but with one
:func:`select.poll` object kept for the pool's life (and each worker waits on its task pipe with
its own), so a reply and a death are both noticed at once, without busy polling, and every wait
takes a deadline.

Workers run :func:`process_main`: they ignore SIGINT (the main process decides when they stop),
and while waiting for tasks they check every
:data:`~stoker.data._workers.timeouts.PARENT_CHECK_INTERVAL` seconds that the main process is
still alive (their parent pid is unchanged, and the main process is neither gone nor a zombie
according to ``/proc``; a forkserver worker's parent is the fork server, which can outlive the
main process). A watchdog thread (:mod:`stoker.data._workers.watchdog`) makes the same check
while the worker is busy in a fetch, so a main process killed outright leaves no worker behind.

Large batches travel in shared-memory slabs (:mod:`stoker.data._workers.slabs`): the worker's
:class:`~stoker.data._workers.slabs.SlabWriter` pickles each reply, the pool's
:class:`~stoker.data._workers.slabs.SlabReader` for that worker unpickles it, and slab ids freed
in the main process ride along with the next task sent to their worker (``Task.released``). A
worker unlinks its segment names when it exits, the pool unlinks a worker's names when the
worker dies or stops, and every new pool sweeps names left by processes that no longer exist
(:mod:`stoker.data._workers.shm`).

Fast start: with spawn and forkserver the worker setup (dataset, collate_fn, worker_init_fn) is
pickled once, not once per worker, and reaches each worker as the first message on its task
pipe (written by a helper thread when larger than the pipe), so ``Process.start`` never waits
for a child to read a large payload and the workers boot in parallel. Some objects cannot travel
that way, and the setup then goes to each worker with its ``Process`` arguments, pickled once
per worker while the process starts, as torch's workers get theirs: objects multiprocessing
reduces through its own registry (``ForkingPickler.register``: torch's tensors and storages,
connections, sockets), which hand over a file descriptor that one process only can receive,
and synchronisation objects of the loader's context (``Lock``, ``Value``), which pickle only
while a process is being started (:class:`_OncePickler` finds the first kind; the second raises
``RuntimeError``).
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import io
import math
import os
import pickle
import queue
import select
import signal
import threading
import time
from collections.abc import Callable

# popen_fork: multiprocessing imports it at a process's first fork; imported here, it no longer
# costs a fresh loader's first batch about 0.5 ms
from multiprocessing import connection, popen_fork  # noqa: F401
from multiprocessing.context import BaseContext
from multiprocessing.reduction import ForkingPickler
from typing import Any

from stoker._system import describe_exit
from stoker._warn import warn_at_caller
from stoker.data._collate import default_collate
from stoker.data._errors import TypeAttributeError, TypePicklingError, short_repr
from stoker.data._workers.info import (
    WorkerInfo,
    seed_process_rngs,
    set_process_worker_info,
    torch_answers_process,
)
from stoker.data._workers.loop import worker_loop
from stoker.data._workers.protocol import STOP, Command, Reply, Reset, Task, WorkerSetup
from stoker.data._workers.shared_arrays import serves_every_process, tickets_dropped_on_error
from stoker.data._workers.shm import sweep_orphans, unlink_owned, unlink_segments
from stoker.data._workers.slabs import SlabReader, SlabWriter
from stoker.data._workers.taskpipe import TaskPipe, grow_pipe
from stoker.data._workers.timeouts import (
    DEAD_JOIN,
    HELPER_RECHECK,
    KILL_GRACE,
    PARENT_CHECK_INTERVAL,
    STOP_GRACE,
)
from stoker.data._workers.watchdog import parent_alive, start_watchdog

__all__ = ["ProcessHost", "ProcessPool", "process_main"]

_PARENT_CHECK_MS = math.ceil(PARENT_CHECK_INTERVAL * 1000)


_sched_yield: Callable[[], None] = getattr(os, "sched_yield", lambda: None)  # not on Windows


class ProcessHost:
    """The worker side of process workers (see :class:`~stoker.data._workers.loop.WorkerHost`)."""

    worker_method = "multiprocessing"

    def __init__(
        self, task_conn: connection.Connection, result_conn: connection.Connection, main_pid: int
    ) -> None:
        self._tasks = task_conn
        # one poll object for the worker's life: Connection.poll builds a selector every call
        self._task_poll = select.poll()
        self._task_poll.register(task_conn.fileno(), select.POLLIN)
        self._conn = result_conn
        self._main_pid = main_pid
        self._parent_pid = os.getppid()
        self.slabs = SlabWriter(main_pid)

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        """Seed this process's generators and make ``get_worker_info()`` answer."""
        seed = seed_process_rngs(setup.base_seed, setup.worker_id)
        info = WorkerInfo(
            id=setup.worker_id, num_workers=setup.num_workers, seed=seed, dataset=setup.dataset
        )
        set_process_worker_info(info)
        torch_answers_process(info)
        return info

    def prepare_collate(self, collate_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Collate ``default_collate`` batches straight into slabs; keep other functions."""
        return self.slabs.collate if collate_fn is default_collate else collate_fn

    def parent_alive(self) -> bool:
        """Tell whether the main process still exists."""
        return parent_alive(self._main_pid, self._parent_pid)

    def start_watchdog(self) -> None:
        """End this process (unlinking its segment names) once the main process is gone."""
        start_watchdog(self._main_pid, self._parent_pid)

    def receive_raw(self) -> Any:
        """Return the next message as sent, or STOP once the main process is gone.

        A message is the setup, a task or a command.
        """
        while True:
            try:
                if self._task_poll.poll(_PARENT_CHECK_MS):
                    return ForkingPickler.loads(self._tasks.recv_bytes())
            except (EOFError, OSError):
                return STOP
            if not self.parent_alive():
                return STOP

    def receive(self) -> Task | Reset | Command:
        """Return the next task (taking back the slabs it releases) or command, or STOP."""
        message: Task | Reset | Command = self.receive_raw()
        if type(message) is Task:
            if message.released:
                self.slabs.release(message.released)
            if message.whole:  # a share: size new slabs for the whole batch
                self.slabs.expect_share(len(message.index), message.whole)
        return message

    def send(self, reply: Reply) -> None:
        """Pickle ``reply`` (pickling errors propagate) and write it to the result pipe.

        Then the worker yields its CPU once (``sched_yield``): the main process, woken by the
        reply, runs at once even when every core is busy with a worker, instead of waiting up
        to a scheduler slice (about 3 ms on a 2-core machine, seen on the first batch in
        about half of the fresh loaders there). With a core free the call returns at once.
        """
        self._conn.send_bytes(self.slabs.encode(reply))
        _sched_yield()


def process_main(
    setup: WorkerSetup | None,
    worker_id: int,
    task_conn: connection.Connection,
    result_conn: connection.Connection,
    main_pid: int,
    *,
    resume_state: Any = None,
    inherited: tuple[int, ...] = (),
) -> None:
    """Entry point of a worker process: run the worker loop over the process transport.

    ``setup`` is None when it comes pickled as the first message on the task pipe (spawn
    and forkserver), and is then completed with ``worker_id`` and ``resume_state``. The
    process ends with exit code :data:`~stoker.data._workers.watchdog.PARENT_GONE_EXIT` when its
    watchdog finds the main process gone. ``inherited``: with fork, the pipe ends the fork
    copied that are not this worker's (the main process's ends of every pipe, the other
    workers' task pipes), closed first: the pool makes every task pipe before it starts a
    worker.

    First, every object the worker holds at its start (with fork: all of the main process's,
    torch's modules and the dataset among them) moves to the collector's permanent generation
    (``gc.freeze()``, as Python's documentation of ``gc.freeze`` advises for forked children):
    the worker's full collections then walk only its own objects. Without it, the first full
    collection in a worker forked from a process holding torch walked its 170,000 objects for
    about 100 ms in the middle of a short epoch, and wrote to the header of each, copying every
    page that holds one (copy-on-write).
    """
    gc.freeze()
    for fd in inherited:  # with fork: pipe ends that are not this worker's
        with contextlib.suppress(OSError):
            os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    host = ProcessHost(task_conn, result_conn, main_pid)
    host.start_watchdog()  # before any dataset work, which may block for long
    try:
        if setup is None:
            shared = host.receive_raw()
            if not isinstance(shared, WorkerSetup):
                return
            setup = shared._replace(worker_id=worker_id, resume_state=resume_state)
        worker_loop(setup, host)
    finally:
        unlink_segments(main_pid, os.getpid())
        if not host.parent_alive():
            unlink_owned(main_pid)  # the main process's shared containers: nobody's now
        # the main process may stop waiting once this pipe closes (ProcessPool.shutdown):
        # the names are gone by now; unmapping the slabs (2-3 ms for four image slabs) is not
        # its business
        result_conn.close()
        task_conn.close()
        host.slabs.close()


_PICKLE_WARNING = (
    "Got pickle error when attempting to start a worker Process. This might be because the "
    "worker Process arguments are not picklable. Python 3.14+ changed the multiprocessing "
    "start method in non-Mac POSIX platforms to 'forkserver', which requires the worker "
    "Process arguments to be picklable. You can also try multiprocessing.set_start_method"
    "('fork')."
)
"""torch's warning when a worker's arguments cannot be pickled."""


class _PerProcess(Exception):
    """Raised by :class:`_OncePickler` at an object whose pickle serves one process only."""


def _refuse(obj: object) -> Any:
    raise _PerProcess(type(obj).__name__)


def _one_process(cls: type) -> bool:
    return not serves_every_process(cls)


class _OncePickler(ForkingPickler):
    """ForkingPickler that stops at an object whose reduction is made for one process.

    Every type in multiprocessing's reducer registry (what ``ForkingPickler.register`` added:
    torch's tensors and storages, connections, sockets) hands the receiving process a file
    descriptor that can be received once, so such a pickle cannot serve every worker. The
    pickler stops before reducing it (which would share a storage and open a descriptor for
    nobody). stoker's compact containers are registered too, but their pickle (a segment name)
    serves every process, so they pickle here as usual.
    """

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        registered: dict[type, Any] = getattr(ForkingPickler, "_extra_reducers", {})
        table = dict(self.dispatch_table)
        table.update(dict.fromkeys(filter(_one_process, registered), _refuse))
        self.dispatch_table = table


class ProcessPool:
    """The main side of process workers: one process, task pipe and result pipe each."""

    def __init__(self, context: BaseContext, setups: list[WorkerSetup]) -> None:
        """Make each worker's task pipe; :meth:`start` then starts the processes.

        Messages sent in between wait in the pipes, so a worker finds its first tasks there
        when it starts (with fork, the first worker is then at work while the next one is
        being forked).

        Args:
            context: the multiprocessing context (fork, spawn or forkserver).
            setups: one :class:`~stoker.data._workers.protocol.WorkerSetup` per worker, in id
                order.
        """
        self.processes: list[Any] = []
        self.task_pipes: list[TaskPipe] = []
        self.result_conns: list[connection.Connection] = []
        self.readers: list[SlabReader] = []
        self.bytes_inline = 0
        self._owner_of: dict[Any, int] = {}
        self._poller: Any = None  # made on the first wait, once every worker has started
        self._by_fd: dict[int, Any] = {}
        self._owner_pid = os.getpid()
        self._context = context
        self._setups = setups
        self._shared: bytes | None = None
        # each worker's end of its task pipe, until that worker has started
        self._task_readers: list[connection.Connection | None] = []
        self.closed = False
        try:
            if setups and context.get_start_method() != "fork":
                # one blob for all: what differs per worker travels with Process.start
                common = setups[0]._replace(resume_state=None)
                self._shared = self._pickle_once(context, common)
            for _ in setups:
                task_reader, task_writer = context.Pipe(duplex=False)
                pipe = TaskPipe(task_writer)
                self.task_pipes.append(pipe)
                self._task_readers.append(task_reader)
                self.readers.append(SlabReader())
                if self._shared is not None:
                    pipe.send(self._shared, answered=False)
        except BaseException:
            self.shutdown()
            raise

    def start(self) -> None:
        """Start the worker processes, in id order."""
        try:
            for setup in self._setups:
                self._start_one(setup)
            # names left by processes that died: swept once the workers are at work, not
            # before the first one is forked (the first sweep in a process cost up to 1 ms)
            sweep_orphans()
        except BaseException:
            self.shutdown()
            raise
        finally:
            self._setups, self._shared = [], None  # the dataset is the iterator's to keep

    @staticmethod
    def _picklable_error(context: BaseContext, err: Exception) -> TypeError:
        """Warn torch's warning and return the error to raise.

        The error is a TypeError that is also of ``err``'s kind (torch re-raises ``err``
        itself), with ``err``'s text first.
        """
        warn_at_caller(_PICKLE_WARNING)
        method = context.get_start_method()
        kind: type[TypeError] = TypeError
        if isinstance(err, pickle.PicklingError):
            kind = TypePicklingError
        elif isinstance(err, AttributeError):
            kind = TypeAttributeError
        return kind(
            f"{err}: the dataset, collate_fn and worker_init_fn must be picklable to start "
            f"workers with the {method!r} start method; define them at module level (no "
            "lambdas or local classes) or use multiprocessing_context='fork'"
        )

    def _pickle_once(self, context: BaseContext, setup: WorkerSetup) -> bytes | None:
        """Pickle ``setup`` once for every worker; None when it must go to each separately."""
        buffer = io.BytesIO()
        try:
            with tickets_dropped_on_error():  # a pickle given up half-way is read by nobody
                _OncePickler(buffer).dump(setup)
        except _PerProcess:
            return None  # a tensor, connection, ...: each worker gets its own pickle
        except RuntimeError:
            return None  # a Lock or Value: pickled only while a process starts
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            raise self._picklable_error(context, err) from err
        return buffer.getvalue()

    def _start_one(self, setup: WorkerSetup) -> None:
        context, shared, worker_id = self._context, self._shared, setup.worker_id
        task_reader = self._task_readers[worker_id]
        assert task_reader is not None
        # Made now, not with the task pipes: a worker forked later must not hold this pipe's
        # writing end, or this worker's death would not end a half-written reply's read.
        reader, writer = context.Pipe(duplex=False)
        inherited: tuple[int, ...] = ()
        if context.get_start_method() == "fork":
            # the main process's ends of every pipe, which a forked child would otherwise keep
            # open: the main process closing a task pipe then reads as end of file in its
            # worker, and a worker's write to a main process gone fails instead of filling a
            # pipe nobody reads; and the other workers' reading ends of their task pipes
            inherited = tuple(
                [pipe.fileno() for pipe in self.task_pipes]
                + [conn.fileno() for conn in [*self.result_conns, reader]]
                + [
                    end.fileno()
                    for other, end in enumerate(self._task_readers)
                    if other != worker_id and end is not None
                ]
            )
        process = context.Process(  # type: ignore[attr-defined]
            target=process_main,
            args=(None if shared else setup, worker_id, task_reader, writer, os.getpid()),
            kwargs={
                "resume_state": setup.resume_state if shared else None,
                "inherited": inherited,
            },
            name=f"stoker-data-worker-{worker_id}",
            daemon=True,
        )
        grow_pipe(reader)  # a worker then never waits to write a window of small replies
        self.result_conns.append(reader)
        try:
            process.start()
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            raise self._picklable_error(context, err) from err
        finally:
            writer.close()
            task_reader.close()
            self._task_readers[worker_id] = None
        self.processes.append(process)
        self._owner_of[reader] = worker_id
        self._owner_of[process.sentinel] = worker_id

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids, by worker id."""
        return [int(p.pid) for p in self.processes]

    @property
    def workers(self) -> list[Any]:
        """The worker processes (``multiprocessing.Process``), by worker id; a new list."""
        return list(self.processes)

    def send(self, worker_id: int, message: Task | Reset | Command) -> None:
        """Send ``message`` to worker ``worker_id``; never blocks (see TaskPipe).

        A task takes along the slabs of that worker freed since the last one. The message is
        pickled here, in the calling thread, so an index that cannot be pickled raises
        TypeError now.
        """
        if type(message) is Task:
            released = self.readers[worker_id].take_released()
            if released:
                message = message._replace(released=released)
        try:
            payload = bytes(ForkingPickler.dumps(message))
        except Exception as err:
            raise TypeError(
                f"every item the sampler yields must be picklable to reach a worker process, "
                f"got {short_repr(message)}: {err}; yield ints or lists of ints"
            ) from err
        self.task_pipes[worker_id].send(payload)

    def receive(self, timeout: float) -> tuple[list[tuple[int, Reply]], list[int]]:
        """Wait up to ``timeout`` seconds for replies or deaths.

        Returns:
            ``(replies, dead)``: ``(worker_id, reply)`` pairs in arrival order, and the ids of
            workers that have exited or closed their task pipe (after reading whatever they
            sent before dying).
        """
        for pipe in self.task_pipes:
            if pipe.busy:
                pipe.flush()
                if pipe.busy:  # a helper thread is writing: look again soon
                    timeout = min(timeout, HELPER_RECHECK)
        ready = self._ready(timeout)
        replies: list[tuple[int, Reply]] = []
        # a worker whose task pipe broke has closed its end: it is ending, it will not answer
        dead = {worker_id for worker_id, pipe in enumerate(self.task_pipes) if pipe.broken}
        for item in ready:
            worker_id = self._owner_of[item]
            if isinstance(item, connection.Connection):
                try:
                    replies.append((worker_id, self._read(worker_id, item)))
                except (EOFError, OSError):
                    dead.add(worker_id)
            else:
                dead.add(worker_id)
        for worker_id in sorted(dead):
            replies.extend((worker_id, reply) for reply in self._drain(worker_id))
            self.processes[worker_id].join(timeout=DEAD_JOIN)
        return replies, sorted(dead)

    def _ready(self, timeout: float) -> list[Any]:
        """Return the result pipes and sentinels readable (or hung up) within ``timeout`` s.

        As :func:`multiprocessing.connection.wait` would, with one poll object kept for the
        pool's life instead of a selector built for every wait.
        """
        poller = self._poller
        if poller is None:
            poller = self._poller = select.poll()
            self._by_fd = {}
            for item in [*self.result_conns, *(p.sentinel for p in self.processes)]:
                fd = item.fileno() if isinstance(item, connection.Connection) else item
                poller.register(fd, select.POLLIN)
                self._by_fd[fd] = item
        events = poller.poll(math.ceil(max(timeout, 0.0) * 1000))
        by_fd = self._by_fd
        return [by_fd[fd] for fd, _ in events]

    def _read(self, worker_id: int, conn: connection.Connection) -> Reply:
        data = conn.recv_bytes()
        self.bytes_inline += len(data)
        self.task_pipes[worker_id].acknowledge()
        return self.readers[worker_id].decode(data)

    def _drain(self, worker_id: int) -> list[Reply]:
        conn = self.result_conns[worker_id]
        found = []
        with contextlib.suppress(EOFError, OSError):
            while conn.poll(0):
                found.append(self._read(worker_id, conn))
        for pid in self.pids[worker_id : worker_id + 1]:
            unlink_segments(self._owner_pid, pid)
        return found

    @property
    def bytes_in_slabs(self) -> int:
        """Bytes of batch arrays received through slabs so far."""
        return sum(reader.bytes_in_slabs for reader in self.readers)

    def batch_memory(self, worker_id: int) -> int:
        """Bytes of worker ``worker_id``'s private memory that may serve its batches.

        See :meth:`SlabReader.batch_memory`.
        """
        return self.readers[worker_id].batch_memory()

    @property
    def slabs_in_use(self) -> int:
        """Slabs whose batch is still alive in this process."""
        return sum(len(reader.in_use) for reader in self.readers)

    def describe(self, worker_id: int) -> str:
        """Say which process worker ``worker_id`` is and how it ended."""
        process = self.processes[worker_id]
        return f"worker {worker_id} (pid {process.pid}) {describe_exit(process.exitcode)}"

    def exitcode(self, worker_id: int) -> int | None:
        """The worker process's exit code (negative: the signal that ended it), or None."""
        code: int | None = self.processes[worker_id].exitcode
        return code

    def shutdown(self, grace: float = STOP_GRACE, *, wait: bool = True) -> None:
        """Stop every worker: ask, wait up to ``grace`` seconds, then SIGTERM, then SIGKILL.

        Safe to call more than once and from a finalizer; returns within about ``grace`` plus
        twice :data:`~stoker.data._workers.timeouts.KILL_GRACE`. With ``wait=False`` (the end
        of an epoch, every task answered) it returns as soon as every worker has closed its
        result pipe, which a worker does once its segment names are unlinked, just before it
        exits, and the joins, with the same escalation, and the unmapping of the slabs go to
        a background thread: the kernel's teardown of a forked worker's memory (1-3 ms) and
        the freeing of the slabs' pages (10-15 ms for image batches) are then not waited for.
        A worker that has not closed its pipe within ``grace`` is stopped as with
        ``wait=True``.
        """
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self._owner_pid:
            return  # a forked copy of this pool in another process: its workers are not ours
        stop_message = bytes(ForkingPickler.dumps(STOP))
        for pipe in self.task_pipes:
            pipe.try_send_now(stop_message)
            with contextlib.suppress(OSError):
                pipe.close()  # end of file also tells the worker to stop
        if not wait:
            try:
                ended = self._all_hung_up(grace)
            except BaseException:  # Ctrl-C in the wait: the joins still happen, in the thread
                self._finish_in_background(grace)
                raise
            if ended:
                self._finish_in_background(grace)
                return
        self._finish(grace)
        self._close_pipes()

    def _finish_in_background(self, grace: float) -> None:
        self._close_pipes()
        _REAPER.submit(self._finish, grace)

    def _finish(self, grace: float) -> None:
        """Join the workers (see :meth:`_join_all`), then drop this process's slab mappings.

        The unmapping frees the slabs' pages, 10 ms for 8 image slabs here.
        """
        self._join_all(grace)
        for reader in self.readers:
            reader.close()

    def _all_hung_up(self, grace: float) -> bool:
        """Wait up to ``grace`` s until every worker has closed its result pipe or exited.

        A process the worker forked may hold the pipe open; its exit then decides.
        """
        if len(self.processes) != len(self.task_pipes):
            return False  # a worker never started
        waiting = select.poll()
        owner: dict[int, int] = {}
        ends = zip(self.result_conns, self.processes, strict=True)
        for worker_id, (conn, process) in enumerate(ends):
            for fd in (conn.fileno(), process.sentinel):
                waiting.register(fd, select.POLLIN)
                owner[fd] = worker_id
        pipes = {conn.fileno() for conn in self.result_conns}
        left = set(range(len(self.processes)))
        deadline = time.monotonic() + grace
        while left:
            budget = deadline - time.monotonic()
            if budget <= 0:
                return False
            for fd, events in waiting.poll(math.ceil(budget * 1000)):
                if fd in pipes and (events & select.POLLIN or not events & select.POLLHUP):
                    return False  # a message nobody asked for: stop it as a busy worker
                waiting.unregister(fd)
                left.discard(owner[fd])
        return True

    def _join_all(self, grace: float) -> None:
        """Join the workers within ``grace`` s, SIGTERM then SIGKILL those left.

        Then unlink the segment names of every one that ran.
        """
        deadline = time.monotonic() + grace
        for process in self.processes:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
        for stop in ("terminate", "kill"):
            alive = [p for p in self.processes if p.is_alive()]
            if not alive:
                break
            for process in alive:
                with contextlib.suppress(OSError):
                    getattr(process, stop)()
            deadline = time.monotonic() + KILL_GRACE
            for process in alive:
                process.join(timeout=max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.pid is not None:
                unlink_segments(self._owner_pid, process.pid)

    def _close_pipes(self) -> None:
        for conn in self.result_conns:
            conn.close()
        for end in self._task_readers:
            if end is not None:  # a worker that never started
                end.close()


class _Reaper:
    """One daemon thread that joins the workers of pools shut down without waiting.

    Started on first use, and again in a forked child that uses a pool of its own (the thread
    does not survive a fork). A job is :meth:`ProcessPool._finish`: the workers have closed
    their pipes and are exiting, so a join returns within milliseconds (a worker stuck in its
    interpreter's exit, a non-daemon thread of the dataset's, is terminated, then killed, as a
    waited shutdown would), and the slabs' pages are freed there, off the caller's thread.
    """

    def __init__(self) -> None:
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[float], None], float]] = queue.SimpleQueue()
        self._started = False
        self._lock = threading.Condition()
        self._outstanding = 0

    def submit(self, job: Callable[[float], None], grace: float) -> None:
        """Run ``job(grace)`` in the background thread."""
        with self._lock:
            self._outstanding += 1
            if not self._started:
                # the low-level start: threading.Thread.start waits until the new thread
                # runs, 2-3 ms at the end of an epoch while the exiting workers hold the cores
                _thread.start_new_thread(self._run, ())
                self._started = True
        self._jobs.put((job, grace))

    def _run(self) -> None:
        while True:
            job, grace = self._jobs.get()
            with contextlib.suppress(Exception):  # a join's OSError must not end the thread
                job(grace)
            del job  # the pool, until the next job comes
            with self._lock:
                self._outstanding -= 1
                self._lock.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until every job submitted so far is done; say if so.

        The main process's slab pages of a finished epoch are gone then.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._outstanding == 0, timeout)


_REAPER = _Reaper()
