"""Asynchronous event file writer: file naming, a bounded queue, a writer thread, flushing.

Callers hand in encoded ``Event`` payloads. They are appended to an in-memory batch under a lock
(cheap); a background thread takes the whole batch, frames every record (``_record.frame_many``)
and appends it to the one open file with a single ``os.write``. The thread wakes when the batch
reaches ``max_queue`` events, on ``flush()``/``close()``, and at least every ``flush_interval``
seconds (1 s by default), so data reaches the file quickly even when little is logged; every
``flush_secs`` seconds it also ``fsync``s the file. The batch is bounded: when the thread falls
behind by ``max_queue * 256`` events or 64 MiB, callers wait for it, with a deadline.

``flush()`` returns only once everything added before it is in the file. On interpreter exit
(normal or through an uncaught exception) every writer still open is flushed and closed. After
``os.fork()`` the child drops the parent's unwritten batch (the parent still writes it), never
touches the parent's file or locks, and opens its own file on its first event.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable

from stoker.tensorboard import _record, _wire

FILE_VERSION = "brain.Event:2"
_BACKLOG_EVENTS_PER_SLOT = 256
_BACKLOG_BYTES = 64 << 20
_WAIT_SLICE = 0.1
_DEFAULT_TIMEOUT = 300.0

# One process-wide counter, like TensorBoard's own writer: it keeps names unique when several
# writers open files in the same directory within the same second.
_file_counter = itertools.count()
_live_files: weakref.WeakSet[_FileState] = weakref.WeakSet()
_fork_hook_installed = False


def event_file_name(filename_suffix: str = "") -> str:
    """Return a new event file name, ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``."""
    return (
        f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
        f"{os.getpid()}.{next(_file_counter)}{filename_suffix}"
    )


def file_version_event(wall_time: float) -> bytes:
    """Encode the ``Event`` that starts every event file."""
    version = FILE_VERSION.encode()
    return (
        b"\x09"
        + _wire.DOUBLE.pack(wall_time)
        + b"\x1a"
        + _wire.encode_varint(len(version))
        + version
    )


def _reset_after_fork() -> None:
    for state in list(_live_files):
        state.forget_parent()


def _install_fork_hook() -> None:
    global _fork_hook_installed
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_after_fork)
        _fork_hook_installed = True


class _FileState:
    """Everything the writer thread touches; kept apart so that the public object can be freed."""

    def __init__(
        self,
        logdir: str,
        max_queue: int,
        flush_secs: float,
        filename_suffix: str,
        flush_interval: float,
    ) -> None:
        self.logdir = logdir
        self.max_queue = max(1, max_queue)
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.flush_interval = flush_interval
        self.backlog_events = self.max_queue * _BACKLOG_EVENTS_PER_SLOT
        self.path = ""
        self.fd: int | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.closed = True
        self._reset_sync()

    def _reset_sync(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.added = 0
        self.written = 0
        self.flush_requested = False
        self.closing = False

    def open(self) -> None:
        """Create a new event file, write its version record, start the writer thread."""
        os.makedirs(self.logdir, exist_ok=True)
        self.path = os.path.join(self.logdir, event_file_name(self.filename_suffix))
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self.fd = os.open(self.path, flags, 0o644)
        _write_all(self.fd, _record.frame(file_version_event(time.time())))
        self._reset_sync()
        self.error = None
        self.closed = False
        self.pid = os.getpid()
        self.thread = threading.Thread(
            target=self._run, name=f"stoker-tensorboard-writer:{self.path}", daemon=True
        )
        self.thread.start()
        _install_fork_hook()
        _live_files.add(self)

    def forget_parent(self) -> None:
        """In a forked child: drop the parent's thread, batch and file; reopen on next use."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd = None
        self.thread = None
        self._reset_sync()
        self.closed = True
        self.needs_reopen_in_child = True

    def add(self, data: bytes) -> None:
        """Queue one encoded event."""
        if self.closed:
            if getattr(self, "needs_reopen_in_child", False):
                self.needs_reopen_in_child = False
                self.open()
            else:
                raise RuntimeError(
                    f"event file in {self.logdir!r} is closed; call reopen() to write again"
                )
        with self.cond:
            pending = self.pending
            pending.append(data)
            self.added += 1
            self.pending_bytes += len(data)
            count = len(pending)
            if count >= self.max_queue:
                if count == self.max_queue:
                    self.cond.notify_all()
                if count >= self.backlog_events or self.pending_bytes >= _BACKLOG_BYTES:
                    self._wait_locked(lambda: len(self.pending) < self.max_queue, "drain")

    def flush(self, timeout: float = _DEFAULT_TIMEOUT) -> None:
        """Return once every event added so far is in the file."""
        if self.closed:
            return
        with self.cond:
            target = self.added
            self.flush_requested = True
            self.cond.notify_all()
            self._wait_locked(lambda: self.written >= target, "flush", timeout)

    def _wait_locked(
        self, done: Callable[[], bool], what: str, timeout: float = _DEFAULT_TIMEOUT
    ) -> None:
        """Wait (holding the condition) until ``done()``, the thread dies, or the deadline."""
        deadline = time.monotonic() + timeout
        while not done():
            if self.error is not None:
                raise RuntimeError(
                    f"event writer for {self.path!r} failed: {self.error!r}"
                ) from self.error
            thread = self.thread
            if thread is None or not thread.is_alive():
                raise RuntimeError(f"event writer thread for {self.path!r} is not running")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(
                    f"event writer for {self.path!r} did not {what} within {timeout} s; "
                    "is the disk stalled?"
                )
            self.cond.wait(min(_WAIT_SLICE, remaining))
            self.cond.notify_all()

    def close(self, timeout: float = _DEFAULT_TIMEOUT) -> None:
        """Flush, stop the thread and close the file; safe to call twice."""
        if self.closed:
            return
        thread = self.thread
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(
                    f"event writer for {self.path!r} did not stop within {timeout} s"
                )
        fd = self.fd
        self.closed = True
        self.fd = None
        self.thread = None
        _live_files.discard(self)
        try:
            if fd is not None and self.pending and self.error is None:
                _write_all(fd, _record.frame_many(self.pending))
                self.pending = []
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self.error is not None:
            raise RuntimeError(f"event writer for {self.path!r} failed: {self.error!r}") from (
                self.error
            )

    def _run(self) -> None:
        cond = self.cond
        fd = self.fd
        last_sync = time.monotonic()
        dirty = False
        while True:
            with cond:
                if not (
                    len(self.pending) >= self.max_queue or self.flush_requested or self.closing
                ):
                    cond.wait(self.flush_interval)
                batch = self.pending
                self.pending = []
                self.pending_bytes = 0
                self.flush_requested = False
                closing = self.closing
            if batch and fd is not None:
                try:
                    _write_all(fd, _record.frame_many(batch))
                except OSError as err:
                    with cond:
                        self.error = err
                        self.pending = batch + self.pending
                        cond.notify_all()
                    return
                dirty = True
            with cond:
                self.written += len(batch)
                cond.notify_all()
            if dirty and fd is not None and time.monotonic() - last_sync >= self.flush_secs:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
                last_sync = time.monotonic()
                dirty = False
            if closing:
                with cond:
                    if not self.pending:
                        return


def _close_quietly(state: _FileState) -> None:
    """Close at garbage collection or interpreter exit, logging instead of raising."""
    try:
        state.close()
    except RuntimeError:
        logging.getLogger(__name__).exception("closing event file %s failed", state.path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        count = os.write(fd, view)
        view = view[count:]


class EventFileWriter:
    """Writes encoded events to one event file in a log directory, from a background thread.

    Args:
        logdir: Directory for the event file; created if missing.
        max_queue: Events batched before the writer thread is woken.
        flush_secs: Seconds between ``fsync`` calls of the event file.
        filename_suffix: Appended to the event file name.
        flush_interval: Longest time, in seconds, an event waits before it is written to the file.
    """

    def __init__(
        self,
        logdir: str,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        flush_interval: float = 1.0,
    ) -> None:
        """Open a new event file in ``logdir``."""
        if not isinstance(max_queue, int) or isinstance(max_queue, bool):
            raise TypeError(f"max_queue must be an int, got {max_queue!r}; pass e.g. 10")
        if not isinstance(flush_secs, (int, float)) or flush_secs <= 0:
            raise ValueError(f"flush_secs must be a positive number, got {flush_secs!r}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {filename_suffix!r}")
        interval = min(float(flush_interval), float(flush_secs))
        self._state = _FileState(str(logdir), max_queue, flush_secs, filename_suffix, interval)
        self._state.open()
        self._finalizer = weakref.finalize(self, _close_quietly, self._state)

    @property
    def path(self) -> str:
        """The path of the current event file."""
        return self._state.path

    def get_logdir(self) -> str:
        """Return the directory the event file is in."""
        return self._state.logdir

    def add_event_bytes(self, data: bytes) -> None:
        """Queue one encoded ``Event``."""
        self._state.add(data)

    def flush(self) -> None:
        """Return once every queued event is in the file."""
        self._state.flush()

    def close(self) -> None:
        """Flush and close the file; later events need :meth:`reopen`."""
        self._state.close()

    def reopen(self) -> None:
        """Open a new event file in the same directory after :meth:`close`; no-op if open."""
        if self._state.closed:
            self._state.open()

    @property
    def closed(self) -> bool:
        """Whether the writer is closed."""
        return self._state.closed
