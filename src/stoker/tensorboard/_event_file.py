"""One writer's event files: a bounded batch, a writer thread, framing, rotation, flushing.

Callers hand in encoded ``Event`` payloads. They are appended to an in-memory batch under a lock
(cheap); a background thread takes the whole batch, frames every record (``_proto``'s
``frame_many``) and appends it to the one open file with a single ``os.write``. The thread
wakes when the batch reaches ``max_queue`` events, on ``flush()``/``close()``, and at least
every ``flush_interval`` seconds (1 s by default), so data reaches the file quickly even when
little is logged; every ``flush_secs`` seconds it also ``fsync``s the file. The batch is
bounded: when the thread falls behind by ``max_queue * 256`` events or 64 MiB, callers wait for
it, with a deadline.

A write that fails stops the thread, and every later ``add``, ``flush`` and ``close`` raises an
``OSError`` of the same kind (``FileNotFoundError``, ``OSError`` with ``ENOSPC`` for a full
disk...) naming the file and how many events were lost; until ``close()`` and a reopen, nothing
more is accepted. A file removed while it is open (its log dir deleted) takes writes without
error on POSIX, into a file nobody can read again: the thread checks after every write, on
every ``flush()`` and at every idle wake-up (at least every ``flush_interval``), that the file
still has a name (``st_nlink``), and treats a nameless file as a failed write,
``FileNotFoundError`` as torch raises, naming the removed directory. ``add`` itself does not
check (an ``fstat`` would cost a third of an ``add_scalar``): an event added between the
removal and the thread's next check is accepted and counted among the lost. ``fsync`` errors
count as failed writes too (a network file system or a full disk may report them only there).

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
import errno
import os
import threading
import time
from collections.abc import Callable

from stoker.tensorboard._destination import Destination, LocalDestination
from stoker.tensorboard._names import create_event_file
from stoker.tensorboard._process_hooks import track, untrack
from stoker.tensorboard._proto import file_version_event, frame, frame_many
from stoker.tensorboard._rotate import Rotation

__all__ = ["EventFiles"]

_BACKLOG_EVENTS_PER_SLOT = 256
_BACKLOG_BYTES = 64 << 20
_WAIT_SLICE = 0.1
_DEFAULT_TIMEOUT = 300.0
# fsync of a file that cannot be synced (a pipe, /dev/full): nothing was lost.
_SYNC_UNSUPPORTED = frozenset({errno.EINVAL, errno.EROFS, errno.ENOTSUP, errno.EOPNOTSUPP})


class _Removed(FileNotFoundError):
    """The open event file lost its name: everything written to it since is lost."""


class EventFiles:
    """A writer's event files: the open one, its queue, its thread, and when to rotate.

    Everything the writer thread touches, kept apart from the public writer object so that
    the public object can be freed (its finalizer then closes these).
    """

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
        self.flush_requested = 0
        self.flush_done = 0
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
            self._check_named(fd)
            _sync(fd)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.dest.file_closed(self.path, empty=self.file_events == 0)

    def _check_named(self, fd: int) -> None:
        """Raise ``FileNotFoundError`` if the open file was removed: what it holds is lost."""
        if os.fstat(fd).st_nlink == 0:
            raise _Removed(errno.ENOENT, self._removed_text(), self.path)

    def _removed_text(self) -> str:
        """What was removed, named when asked: the log dir if it is gone (``rm -rf`` of it).

        Asked again when the error reaches the caller: the thread may notice the nameless file
        in the middle of an ``rm -rf``, after the file went and before its directory did.
        """
        directory = os.path.dirname(self.path)
        if os.path.isdir(directory):
            what = "event file"
        elif isinstance(self.dest, LocalDestination):
            what = f"log directory {directory!r}"
        else:
            what = f"staging directory {directory!r} of {self.logdir!r}"
        return f"{what} was removed while the writer had it open"

    def failure(self) -> OSError | RuntimeError:
        """The error to raise for the failed write, of the same kind, naming what was lost."""
        err = self.error
        lost = self.added - self.written
        if isinstance(err, FileNotFoundError):
            hint = "recreate the log directory if it was deleted by mistake"
        elif isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            hint = "the disk is full: free space"
        else:
            hint = "check the log directory"
        if isinstance(err, _Removed):
            reason = self._removed_text()
        elif isinstance(err, OSError) and err.strerror:
            reason = err.strerror
        else:
            reason = repr(err)
        lost_text = f"{lost} event(s) were not written; " if lost else ""
        text = (
            f"event writer failed: {reason}; {lost_text}{hint}, then close() the writer and "
            "log again to a new file"
        )
        if isinstance(err, OSError) and err.errno is not None:
            return OSError(err.errno, text, self.path)
        return RuntimeError(f"{text} ({self.path!r})")

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
        self.error = None
        self._reset_sync()
        self.dest.forget_parent()
        self.closed = True
        self.reopen_on_add = True

    def add(self, data: bytes) -> None:
        """Queue one encoded event.

        Raises:
            OSError: If an earlier write failed (see the module docstring).
            RuntimeError: If the file is closed.
        """
        if self.error is not None:
            raise self.failure() from self.error
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
        """Return once every event added so far is in the file, and the file is still there.

        Raises:
            OSError: If a write failed, now or earlier.
        """
        if self.closed:
            return
        with self.cond:
            self.flush_requested += 1
            ticket = self.flush_requested
            self.cond.notify_all()
            self._wait_locked(lambda: self.flush_done >= ticket, "flush", timeout)

    def _wait_locked(
        self, done: Callable[[], bool], what: str, timeout: float = _DEFAULT_TIMEOUT
    ) -> None:
        """Wait (holding the condition) until ``done()``, the thread dies, or the deadline."""
        deadline = time.monotonic() + timeout
        while self.error is not None or not done():
            if self.error is not None:
                raise self.failure() from self.error
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
        """Flush, stop the thread, close the file and hand it over; safe to call twice.

        Raises:
            OSError: If a write failed (the file is closed all the same).
            RuntimeError: If the thread does not stop, or the destination fails.
        """
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
                    self.written += len(self.pending)
                    self.pending = []
            self._end_file()
        except OSError as err:
            if self.error is None:
                self.error = err
            with contextlib.suppress(OSError):
                self._end_file()
        finally:
            self.dest.finish(timeout)
        if self.error is not None:
            raise self.failure() from self.error

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
                    len(self.pending) >= self.max_queue
                    or self.flush_requested > self.flush_done
                    or self.closing
                ):
                    cond.wait(self._wait_time())
                batch = self.pending
                self.pending = []
                self.pending_bytes = 0
                flush_ticket = self.flush_requested
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
                        self._check_named(fd)
                        stored = True
                        self.file_bytes += len(data)
                        self.file_events += len(batch)
                        dirty = True
                elif self.fd is not None:  # a flush, or the wake-up every flush_interval
                    self._check_named(self.fd)
                if not closing:
                    self._end_file_if_due()
                    dirty = dirty and self.fd is not None
                due = time.monotonic() - last_sync >= self.flush_secs
                if dirty and due and self.fd is not None:
                    _sync(self.fd)
                    last_sync = time.monotonic()
                    dirty = False
            except OSError as err:
                with cond:
                    self.error = err
                    if not stored:
                        self.pending = batch + self.pending
                    cond.notify_all()
                return
            with cond:
                self.written += len(batch)
                self.flush_done = max(self.flush_done, flush_ticket)
                cond.notify_all()
            if closing:
                with cond:
                    if not self.pending:
                        return


def _sync(fd: int) -> None:
    """``fsync`` the file; an error means data may not be on disk (except where unsupported)."""
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _SYNC_UNSUPPORTED:
            raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        count = os.write(fd, view)
        view = view[count:]
