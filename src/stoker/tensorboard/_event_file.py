"""One writer's event files: a bounded batch, a writer thread, framing, rotation, flushing.

Callers hand in encoded ``Event`` payloads. They are appended to an in-memory batch under a lock
(cheap); a background thread takes the whole batch, frames every record (``_proto``'s
``frame_many``) and appends it to the one open file with a single ``os.write``. The thread
wakes when the batch reaches ``max_queue`` events, on ``flush()``/``close()``, and at least
every ``flush_interval`` seconds (1 s by default), so data reaches the file quickly even when
little is logged; every ``flush_secs`` seconds it also ``fsync``s the file. The batch is
bounded: when the thread falls behind by ``max_queue * 256`` events or 64 MiB, callers wait for
it, with a deadline. A write that fails stops the thread; the error is raised by the next
``add``, ``flush`` or ``close``.

``flush()`` returns only once everything added before it is in the file. What happens at exit,
in ``multiprocessing`` children and after ``os.fork()`` is ``_process_hooks``'s: every open
file is registered there.

Files go to a *destination*: the log dir itself for a local path, or a staging directory whose
closed files are uploaded for a URL log dir (``_destination``). The writer thread rotates the
file when the :class:`~stoker.tensorboard._rotate.Rotation` limits say so; each new file starts
with its own ``file_version`` record and a name that sorts after the previous one (``_rotate``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from stoker.tensorboard._destination import Destination, LocalDestination
from stoker.tensorboard._process_hooks import track, untrack
from stoker.tensorboard._proto import file_version_event, frame, frame_many
from stoker.tensorboard._rotate import Rotation, create_event_file

__all__ = ["FileState"]

_BACKLOG_EVENTS_PER_SLOT = 256
_BACKLOG_BYTES = 64 << 20
_WAIT_SLICE = 0.1
_DEFAULT_TIMEOUT = 300.0


class FileState:
    """Everything the writer thread touches; kept apart so that the public object can be freed."""

    def __init__(
        self,
        dest: Destination,
        max_queue: int,
        flush_secs: float,
        filename_suffix: str,
        flush_interval: float,
        *,
        rotation: Rotation,
    ) -> None:
        self.dest = dest
        self.logdir = dest.logdir
        self.max_queue = max(1, max_queue)
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.flush_interval = flush_interval
        self.rotation = rotation
        self.backlog_events = self.max_queue * _BACKLOG_EVENTS_PER_SLOT
        self.path = ""
        self.fd: int | None = None
        self.stamp: int | None = None
        self.file_bytes = 0
        self.file_events = 0
        self.opened_at = 0.0
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.closed = True
        self.reopen_on_add = False
        self._reset_sync()

    def _reset_sync(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.added = 0
        self.written = 0
        self.flush_requested = False
        self.closing = False

    def _new_file(self) -> None:
        """Create the next event file and write its version record."""
        directory = self.dest.directory()
        os.makedirs(directory, exist_ok=True)
        fd, path, stamp = create_event_file(directory, self.filename_suffix, self.stamp)
        head = frame(file_version_event(time.time()))
        try:
            _write_all(fd, head)
        except OSError:
            os.close(fd)
            raise
        self.fd, self.path, self.stamp = fd, path, stamp
        self.file_bytes = len(head)
        self.file_events = 0
        self.opened_at = time.monotonic()

    def _end_file(self) -> None:
        """Sync and close the current file and hand it to the destination."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(OSError):
                os.fsync(fd)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.dest.file_closed(self.path, empty=self.file_events == 0)

    def open(self) -> None:
        """Create a new event file, write its version record, start the writer thread."""
        self._new_file()
        self._reset_sync()
        self.error = None
        self.closed = False
        self.pid = os.getpid()
        self.thread = threading.Thread(
            target=self._run, name=f"stoker-tensorboard-writer:{self.path}", daemon=True
        )
        self.thread.start()
        track(self, remote=not isinstance(self.dest, LocalDestination))

    def forget_parent(self) -> None:
        """In a forked child: drop the parent's thread, batch and file; reopen on next use."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd = None
        self.thread = None
        self._reset_sync()
        self.dest.forget_parent()
        self.closed = True
        self.reopen_on_add = True

    def add(self, data: bytes) -> None:
        """Queue one encoded event."""
        if self.closed:
            if self.reopen_on_add:
                self.reopen_on_add = False
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
        """Flush, stop the thread, close the file and hand it over; safe to call twice."""
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
        self.closed = True
        self.thread = None
        untrack(self)
        try:
            if self.pending and self.error is None:
                if self.fd is None:
                    self._new_file()
                if self.fd is not None:
                    _write_all(self.fd, frame_many(self.pending))
                    self.file_events += len(self.pending)
                    self.pending = []
        finally:
            try:
                self._end_file()
            finally:
                self.dest.finish(timeout)
        if self.error is not None:
            raise RuntimeError(f"event writer for {self.path!r} failed: {self.error!r}") from (
                self.error
            )

    def _wait_time(self) -> float:
        """How long the idle thread may sleep: the flush interval, or until rotation is due."""
        if self.fd is None or not self.file_events:
            return self.flush_interval
        left = self.rotation.seconds_left(time.monotonic() - self.opened_at)
        return self.flush_interval if left is None else min(self.flush_interval, left)

    def _end_file_if_due(self) -> None:
        """Rotation, first half: close a full or old file; the next batch starts a new one."""
        if (
            self.fd is not None
            and self.file_events
            and self.rotation.due(self.file_bytes, time.monotonic() - self.opened_at)
        ):
            self._end_file()

    def _run(self) -> None:
        cond = self.cond
        last_sync = time.monotonic()
        dirty = False
        while True:
            with cond:
                if not (
                    len(self.pending) >= self.max_queue or self.flush_requested or self.closing
                ):
                    cond.wait(self._wait_time())
                batch = self.pending
                self.pending = []
                self.pending_bytes = 0
                self.flush_requested = False
                closing = self.closing
            stored = not batch
            try:
                if batch:
                    if self.fd is None:
                        self._new_file()
                    fd = self.fd
                    if fd is not None:
                        data = frame_many(batch)
                        _write_all(fd, data)
                        stored = True
                        self.file_bytes += len(data)
                        self.file_events += len(batch)
                        dirty = True
                if not closing:
                    self._end_file_if_due()
                    dirty = dirty and self.fd is not None
            except OSError as err:
                with cond:
                    self.error = err
                    if not stored:
                        self.pending = batch + self.pending
                    cond.notify_all()
                return
            with cond:
                self.written += len(batch)
                cond.notify_all()
            if dirty and self.fd is not None and time.monotonic() - last_sync >= self.flush_secs:
                with contextlib.suppress(OSError):
                    os.fsync(self.fd)
                last_sync = time.monotonic()
                dirty = False
            if closing:
                with cond:
                    if not self.pending:
                        return


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        count = os.write(fd, view)
        view = view[count:]
