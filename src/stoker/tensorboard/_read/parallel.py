"""Reading many runs on several cores: each run is read whole by one worker process.

A log directory of a sweep holds hundreds of runs; reading one is Python work over its files
(see ``run.py``), so the runs are dealt to forked worker processes and each worker sends back
each run's columns as it finishes it (the same :class:`RunData` objects, pickled: NumPy and
``array`` columns travel as their bytes). The parent keeps no more than the columns it returns
plus the runs in flight. Warnings a worker raises (damaged records) are raised again in the
parent, in the order of the runs; an error (an unreadable file) is raised in the parent too,
chained to the worker's traceback.

Workers are forked: the parent's modules and the runs' state are there without pickling or
importing anything again; only run numbers go to a worker, through its own duplex pipe. What
comes back is data only: a worker reports each progress call (``Reader(progress=)``, any
callable, a lambda or one holding ``sys.stderr``) through its pipe and the parent makes it, and
the runs come back without their callbacks, to get the parent's back. A worker holds at most
:data:`_HELD` runs at a time (the one it reads and the next) and is dealt another as it sends
one back, so one slow run holds up no other. The parent waits on every pipe and every worker's
sentinel at once: a worker that dies (the OOM killer's SIGKILL) raises :class:`EventFileError`
as soon as its pipe is drained, naming the worker, how it ended and the runs it held. A worker
that dies holding nothing lost nothing, and the read goes on. Workers ignore SIGINT: whatever
ends the read (an error, Ctrl-C), the parent ends them.

A process with other threads running may hold locks a fork would copy in their held state, so
such a process reads its runs itself, one after the other.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
import warnings
from collections.abc import Generator, Iterator
from multiprocessing import connection
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, NamedTuple

from stoker._system import describe_exit, usable_cpu_count
from stoker.tensorboard._read.errors import EventFileError
from stoker.tensorboard._read.run import RunData
from stoker.tensorboard._read.stores import store_of

__all__ = ["PARALLEL_MIN_BYTES", "WorkerTraceback", "load_runs", "pending_bytes", "worker_count"]

PARALLEL_MIN_BYTES = 32 << 20
"""Bytes to read, over at least two runs, from which runs are read by worker processes.

Below it a worker's start (a fork, a few milliseconds) and the columns' trip back cost more
than the second core saves.
"""
_MAX_WORKERS = 8
_HELD = 2  # runs dealt to a worker at a time: the one it reads and the next, so it never waits
_STOP_WAIT = 10.0  # seconds a worker told to stop (it has nothing left) has to exit

Caught = list[tuple[type[Warning], str]]


class WorkerTraceback(Exception):
    """The traceback of an error raised in a reader worker, as the cause of the one raised here."""


class _Progress(NamedTuple):
    """A worker's progress call for a file of run ``number``, made again by the parent."""

    number: int
    path: str
    done: int
    total: int


class _Loaded(NamedTuple):
    """A worker's reply for a run it read: the run, its record count, the warnings raised."""

    number: int
    run: RunData
    records: int
    caught: Caught


class _Failed(NamedTuple):
    """A worker's reply for a run that raised: the error, its traceback, the warnings before."""

    number: int
    error: Exception
    trace: str
    caught: Caught


def worker_count(workers: int | None, runs: list[RunData]) -> int:
    """How many processes read ``runs``.

    ``workers``, or for ``None`` one per core (at most eight) when they hold
    :data:`PARALLEL_MIN_BYTES` or more, else 1.
    """
    forkable = "fork" in multiprocessing.get_all_start_methods()
    if len(runs) < 2 or threading.active_count() > 1 or not forkable:
        return 1
    if not all(store_of(path).forkable for run in runs for path in run.files):
        return 1  # a store's client (fsspec) may hold threads and sockets: not forked
    if workers is not None:
        return min(workers, len(runs))
    if pending_bytes(runs) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(usable_cpu_count() or 1, _MAX_WORKERS, len(runs)))


def pending_bytes(runs: list[RunData]) -> int:
    """Bytes of the runs' local files after where they were left (0 for a file gone)."""
    total = 0
    for run in runs:
        for path, reader in run.files.items():
            try:
                total += max(0, os.stat(path).st_size - reader.position.offset)
            except OSError:
                continue
    return total


def load_runs(runs: list[RunData], workers: int) -> Generator[tuple[RunData, int], None, None]:
    """Read every run, in ``workers`` processes; yield each loaded run and its record count.

    The runs come in the order given, each run's warnings re-raised first.

    Raises:
        EventFileError: If a worker dies while it holds runs (naming it, how it ended and
            those runs), or a run's file cannot be read.
    """
    if workers <= 1:
        for run in runs:
            yield run, run.load()
        return
    pool = _Pool(multiprocessing.get_context("fork"), runs, workers)
    finished = False
    try:
        yield from pool.gather()
        finished = True
    finally:
        pool.stop(kill=not finished)


def _work(runs: list[RunData], conn: Connection, inherited: list[Connection]) -> None:
    """A worker: read the runs whose numbers come through ``conn``, until None or no parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers
    for other in inherited:  # the parent's ends, copied by the fork: EOF must mean "no parent"
        other.close()
    while True:
        try:
            index = conn.recv()
        except EOFError:
            return
        if index is None:
            return
        run = runs[index]
        for reader in run.files.values():  # the parent calls the callbacks, as told here
            if reader.progress is not None:
                reader.progress = functools.partial(_relay, conn, index)
        reply = _read(index, run)
        try:
            data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # something in the run does not pickle: the parent says what
            data = pickle.dumps(_failure(index, err, reply.caught), pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(data)
        except OSError:
            return  # the parent is gone


def _relay(conn: Connection, number: int, path: str, done: int, total: int) -> None:
    """A worker's progress callback: tell the parent, which calls the run's own callback."""
    conn.send(_Progress(number, path, done, total))


def _read(index: int, run: RunData) -> _Loaded | _Failed:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            count = run.load()
        except Exception as err:
            return _failure(index, err, [(item.category, str(item.message)) for item in caught])
    return _Loaded(index, run, count, [(item.category, str(item.message)) for item in caught])


def _failure(index: int, err: Exception, caught: Caught) -> _Failed:
    """The reply for ``err``.

    The error itself when it survives pickling, else a RuntimeError naming its type and
    message.
    """
    trace = "".join(traceback.format_exception(err))
    try:
        pickle.loads(pickle.dumps(err))
        error = err
    except Exception:
        error = RuntimeError(f"{type(err).__module__}.{type(err).__qualname__}: {err}")
    return _Failed(index, error, trace, caught)


def _receive(conn: Connection) -> _Progress | _Loaded | _Failed | None:
    """A worker's next message, or None when its pipe closed or a message was cut short."""
    try:
        message: _Progress | _Loaded | _Failed = conn.recv()
    except (EOFError, OSError):
        return None
    return message


class _Worker:
    """One worker process as the parent sees it: its pipe and the runs dealt to it, in order."""

    def __init__(self, number: int, process: BaseProcess, conn: Connection) -> None:
        self.number = number
        self.process = process
        self.conn = conn
        self.held: list[int] = []


class _Pool:
    """Forked workers reading ``runs``: deals them out, gathers them back in order."""

    def __init__(self, context: BaseContext, runs: list[RunData], workers: int) -> None:
        self.runs = runs
        self.workers: list[_Worker] = []
        self.dealt = 0  # runs dealt so far: runs[:dealt], in order
        self.replies: dict[int, _Loaded | _Failed] = {}
        self.failed = False  # a run raised: nothing more is dealt
        try:
            for number in range(workers):
                mine, theirs = context.Pipe()
                inherited = [worker.conn for worker in self.workers] + [mine]
                process = context.Process(  # type: ignore[attr-defined]
                    target=_work,
                    args=(runs, theirs, inherited),
                    name=f"stoker-reader-{number}",
                    daemon=True,
                )
                self.workers.append(_Worker(number, process, mine))
                process.start()
                theirs.close()
        except BaseException:
            self.stop(kill=True)
            raise

    def gather(self) -> Iterator[tuple[RunData, int]]:
        """Yield every run read, in order, re-raising its warnings (and its error) first."""
        for held in range(1, _HELD + 1):  # round robin: every worker starts at once
            for worker in self.workers:
                self._deal(worker, held)
        live = list(self.workers)
        for index in range(len(self.runs)):
            while index not in self.replies:
                self._wait(live)
            reply = self.replies.pop(index)
            for category, message in reply.caught:
                warnings.warn(message, category, stacklevel=5)
            if isinstance(reply, _Failed):
                raise reply.error from WorkerTraceback(reply.trace)
            yield reply.run, reply.records

    def _deal(self, worker: _Worker, up_to: int) -> None:
        while not self.failed and self.dealt < len(self.runs) and len(worker.held) < up_to:
            worker.held.append(self.dealt)
            self.dealt += 1
            try:
                worker.conn.send(worker.held[-1])
            except OSError:
                return  # it died: its sentinel says so, and the run is named as held

    def _wait(self, live: list[_Worker]) -> None:
        """Take what the workers sent; raise if one died holding runs."""
        owners: dict[Any, _Worker] = {}  # pipes and sentinels (ints) to their worker
        for worker in live:
            owners[worker.conn] = worker
            owners[worker.process.sentinel] = worker
        for handle in connection.wait(list(owners)):
            worker = owners[handle]
            if worker not in live:
                continue  # its pipe and its sentinel were both ready: handled once
            if handle is worker.conn:
                message = _receive(worker.conn)
                if message is not None:
                    self._take(worker, message)  # outside the try: a callback's OSError is its own
                    continue
            self._dead(worker)
            live.remove(worker)

    def _take(self, worker: _Worker, reply: _Progress | _Loaded | _Failed) -> None:
        """Act on a worker's message: call a progress callback, or keep a run's reply."""
        if isinstance(reply, _Progress):
            callback = self.runs[reply.number].files[reply.path].progress
            if callback is not None:
                callback(reply.path, reply.done, reply.total)
            return
        if isinstance(reply, _Loaded):  # its readers come without callbacks: give theirs back
            mine = self.runs[reply.number].files
            for path, reader in reply.run.files.items():
                reader.progress = mine[path].progress
        worker.held.remove(reply.number)
        self.replies[reply.number] = reply
        if isinstance(reply, _Failed):
            self.failed = True
        self._deal(worker, _HELD)

    def _dead(self, worker: _Worker) -> None:
        """Take what a dead worker sent before it died; raise if it held runs still."""
        while worker.conn.poll():
            message = _receive(worker.conn)
            if message is None:
                break
            self._take(worker, message)
        worker.process.join(_STOP_WAIT)
        if not worker.held:
            return
        names = [self.runs[index].name for index in worker.held]
        raise EventFileError(
            f"reader worker {worker.number} (pid {worker.process.pid}) "
            f"{describe_exit(worker.process.exitcode)} while it held runs {names}, which did "
            "not come back; if it ran out of memory (the OOM killer sends SIGKILL), free memory "
            "or read with fewer workers (workers=1 reads in this process)"
        )

    def stop(self, *, kill: bool) -> None:
        """End every worker: tell them to stop (or, for ``kill``, kill them), then reap them."""
        started = [worker for worker in self.workers if worker.process.pid is not None]
        for worker in started:
            if kill:
                worker.process.kill()
            else:
                with contextlib.suppress(OSError):  # it is gone already
                    worker.conn.send(None)
        for worker in started:
            worker.process.join(_STOP_WAIT)
            if worker.process.exitcode is None:
                worker.process.kill()
                worker.process.join()
            worker.process.close()
        for worker in self.workers:
            worker.conn.close()
