"""Process transport: starts worker processes, carries messages both ways, notices dead ones.

Each worker gets its own index queue (a :class:`multiprocessing.Queue`, so the main process never
blocks on a put: a feeder thread writes) and its own one-way result pipe (the worker pickles each
reply and writes it; no lock is shared between workers, so a worker killed mid-write cannot block
another). The main process waits on every result pipe and every process sentinel at once with
:func:`multiprocessing.connection.wait`, so a reply and a death are both noticed at once, without
polling, and every wait takes a deadline.

Workers run :func:`process_main`: they ignore SIGINT (the main process decides when they stop),
and while waiting for indices they check every :data:`PARENT_CHECK_INTERVAL` seconds that the
main process is still alive (their parent pid is unchanged, and the main process is neither gone
nor a zombie according to ``/proc``; a forkserver worker's parent is the fork server, which can
outlive the main process), so a main process killed outright leaves no worker behind.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import time
from multiprocessing import connection
from multiprocessing.context import BaseContext
from multiprocessing.reduction import ForkingPickler
from typing import Any

from stoker.data._errors import short_repr
from stoker.data._worker import (
    STOP,
    WorkerInfo,
    WorkerSetup,
    seed_process_rngs,
    set_process_worker_info,
    worker_loop,
)

__all__ = ["PARENT_CHECK_INTERVAL", "ProcessHost", "ProcessPool", "describe_exit", "process_main"]

PARENT_CHECK_INTERVAL = 0.25
"""Seconds a worker waits for its next message before checking that the main process lives."""

STOP_GRACE = 1.0
"""Seconds :meth:`ProcessPool.shutdown` lets workers exit on their own before terminating them."""


def describe_exit(exitcode: int | None) -> str:
    """Say how a process ended, from :attr:`multiprocessing.Process.exitcode`."""
    if exitcode is None:
        return "closed its result pipe but has not exited yet"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by signal {name} (exit code {exitcode})"
    return f"exited with exit code {exitcode}"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProcessHost:
    """The worker side of the process transport (see :class:`~stoker.data._worker.WorkerHost`)."""

    worker_method = "multiprocessing"

    def __init__(self, index_queue: Any, result_conn: connection.Connection, main_pid: int) -> None:
        self._queue = index_queue
        self._conn = result_conn
        self._main_pid = main_pid
        self._parent_pid = os.getppid()

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        """Seed this process's generators and make ``get_worker_info()`` answer."""
        seed = seed_process_rngs(setup.base_seed, setup.worker_id)
        info = WorkerInfo(
            id=setup.worker_id, num_workers=setup.num_workers, seed=seed, dataset=setup.dataset
        )
        set_process_worker_info(info)
        return info

    def parent_alive(self) -> bool:
        """Tell whether the main process still exists."""
        if os.getppid() != self._parent_pid:
            return False
        try:
            # A killed main process can linger as a zombie until its own parent reaps it, and
            # forkserver workers keep their parent (the fork server) alive: read the state.
            with open(f"/proc/{self._main_pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        except (OSError, IndexError):
            return _pid_exists(self._main_pid)
        return state not in (b"Z", b"X")

    def receive(self) -> Any:
        """Return the next message, or STOP once the main process is gone."""
        while True:
            try:
                payload = self._queue.get(timeout=PARENT_CHECK_INTERVAL)
            except queue.Empty:
                if not self.parent_alive():
                    return STOP
            except (EOFError, OSError):
                return STOP
            else:
                return ForkingPickler.loads(payload)

    def send(self, message: tuple[int, int, Any]) -> None:
        """Pickle ``message`` (pickling errors propagate) and write it to the result pipe."""
        payload = ForkingPickler.dumps(message)
        self._conn.send_bytes(payload)


def process_main(
    setup: WorkerSetup, index_queue: Any, result_conn: connection.Connection, main_pid: int
) -> None:
    """Entry point of a worker process: run the worker loop over the process transport."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    host = ProcessHost(index_queue, result_conn, main_pid)
    try:
        worker_loop(setup, host)
    finally:
        result_conn.close()


class ProcessPool:
    """The main side of the process transport: one process, index queue and pipe per worker."""

    def __init__(self, context: BaseContext, setups: list[WorkerSetup]) -> None:
        """Start one worker process per setup.

        Args:
            context: the multiprocessing context (fork, spawn or forkserver).
            setups: one :class:`~stoker.data._worker.WorkerSetup` per worker, in id order.
        """
        self.processes: list[Any] = []
        self.index_queues: list[Any] = []
        self.result_conns: list[connection.Connection] = []
        self._owner_of: dict[Any, int] = {}
        self._owner_pid = os.getpid()
        self.closed = False
        try:
            for setup in setups:
                self._start_one(context, setup)
        except BaseException:
            self.shutdown()
            raise

    def _start_one(self, context: BaseContext, setup: WorkerSetup) -> None:
        index_queue = context.Queue()
        index_queue.cancel_join_thread()
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(  # type: ignore[attr-defined]
            target=process_main,
            args=(setup, index_queue, writer, os.getpid()),
            name=f"stoker-data-worker-{setup.worker_id}",
            daemon=True,
        )
        self.index_queues.append(index_queue)
        self.result_conns.append(reader)
        try:
            process.start()
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            method = context.get_start_method()
            raise TypeError(
                f"the dataset, collate_fn and worker_init_fn must be picklable to start workers "
                f"with the {method!r} start method, got an error pickling them: {err}; define "
                "them at module level (no lambdas or local classes) or use "
                "multiprocessing_context='fork'"
            ) from err
        finally:
            writer.close()
        self.processes.append(process)
        self._owner_of[reader] = setup.worker_id
        self._owner_of[process.sentinel] = setup.worker_id

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids, by worker id."""
        return [int(p.pid) for p in self.processes]

    def send(self, worker_id: int, message: Any) -> None:
        """Queue ``message`` for worker ``worker_id``; never blocks.

        The message is pickled here, in the calling thread, so an index that cannot be pickled
        raises TypeError now instead of being lost in the queue's feeder thread (which would
        leave the main process waiting for a reply that never comes).
        """
        try:
            payload = bytes(ForkingPickler.dumps(message))
        except Exception as err:
            raise TypeError(
                f"every item the sampler yields must be picklable to reach a worker process, "
                f"got {short_repr(message)}: {err}; yield ints or lists of ints"
            ) from err
        self.index_queues[worker_id].put(payload)

    def receive(self, timeout: float) -> tuple[list[tuple[int, Any]], list[int]]:
        """Wait up to ``timeout`` seconds for replies or deaths.

        Returns:
            ``(replies, dead)``: ``(worker_id, reply)`` pairs in arrival order, and the ids of
            workers that have exited (after reading whatever they sent before dying).
        """
        waitables = [*self.result_conns, *(p.sentinel for p in self.processes)]
        ready = connection.wait(waitables, timeout=max(timeout, 0.0))
        replies: list[tuple[int, Any]] = []
        dead: set[int] = set()
        for item in ready:
            worker_id = self._owner_of[item]
            if isinstance(item, connection.Connection):
                try:
                    replies.append((worker_id, item.recv()))
                except (EOFError, OSError):
                    dead.add(worker_id)
            else:
                dead.add(worker_id)
        for worker_id in sorted(dead):
            replies.extend((worker_id, reply) for reply in self._drain(worker_id))
            self.processes[worker_id].join(timeout=1.0)
        return replies, sorted(dead)

    def _drain(self, worker_id: int) -> list[Any]:
        conn = self.result_conns[worker_id]
        found = []
        with contextlib.suppress(EOFError, OSError):
            while conn.poll(0):
                found.append(conn.recv())
        return found

    def describe(self, worker_id: int) -> str:
        """Say which process worker ``worker_id`` is and how it ended."""
        process = self.processes[worker_id]
        return f"worker {worker_id} (pid {process.pid}) {describe_exit(process.exitcode)}"

    def shutdown(self, grace: float = STOP_GRACE) -> None:
        """Stop every worker: ask, wait up to ``grace`` seconds, then SIGTERM, then SIGKILL.

        Safe to call more than once and from a finalizer; returns within about ``grace + 2`` s.
        """
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self._owner_pid:
            return  # a forked copy of this pool in another process: its workers are not ours
        stop_message = bytes(ForkingPickler.dumps(STOP))
        for index_queue in self.index_queues:
            with contextlib.suppress(Exception):
                index_queue.put(stop_message)
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
            deadline = time.monotonic() + 1.0
            for process in alive:
                process.join(timeout=max(0.0, deadline - time.monotonic()))
        for index_queue in self.index_queues:
            with contextlib.suppress(Exception):
                index_queue.close()
        for conn in self.result_conns:
            conn.close()
