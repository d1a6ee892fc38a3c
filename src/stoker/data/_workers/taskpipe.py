"""The main process's task channel to one worker process: a pipe written without blocking.

Tasks used to go through a :class:`multiprocessing.Queue`, whose feeder thread needs the GIL
and a wake-up for every message: with small batches that latency, not the work, set the pace.
:class:`TaskPipe` writes each message, already pickled by the pool, straight into the worker's
pipe from the calling thread, and still never blocks, so the main process can never deadlock
against a worker that is itself blocked writing a large reply:

* Every message but the first (the worker setup) and ``STOP`` is answered exactly once, in
  order, so the bytes still sitting unread in the pipe are at most the sizes of the unanswered
  messages. A message is written only when those plus its own size fit in the pipe's capacity
  (raised to 1 MiB when the system allows); otherwise it waits in a local queue and goes out
  when replies free room (:meth:`TaskPipe.acknowledge`).
* A message larger than the whole capacity (a huge list of indices, a large pickled dataset)
  is written by a short-lived helper thread once the pipe is empty, and later messages wait
  for it, so order is kept.
* A write that fails (``BrokenPipeError``: the worker closed its end, which it does only when
  it is ending) never raises to the caller: the pipe is marked :attr:`TaskPipe.broken`, drops
  what waits, and the pool reports that worker as dead, with how it ended and the indices it
  held, as for any other death.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections import deque
from multiprocessing import connection

__all__ = ["TaskPipe", "grow_pipe"]

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)
_WANTED_CAPACITY = 1 << 20
_PAGE = 4096


def _cost(payload: bytes) -> int:
    """Pipe space a message may take.

    A pipe holds whole pages, and a large message's header is written on its own, so count its
    bytes and header rounded up to pages, plus a page.
    """
    return (len(payload) + 16 + _PAGE - 1) // _PAGE * _PAGE + _PAGE


def grow_pipe(conn: connection.Connection) -> int:
    """Try to enlarge the pipe behind ``conn``; return its capacity in bytes."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(conn.fileno(), _F_SETPIPE_SZ, _WANTED_CAPACITY)
    try:
        return int(fcntl.fcntl(conn.fileno(), _F_GETPIPE_SZ))
    except OSError:
        return 1 << 16  # the Linux default


class TaskPipe:
    """Writes task messages to one worker without blocking (see the module docstring)."""

    def __init__(self, writer: connection.Connection) -> None:
        """Wrap the writing end of the worker's task pipe."""
        self._writer = writer
        self.capacity = grow_pipe(writer)
        self._pending: deque[tuple[bytes, bool]] = deque()
        self._unanswered: deque[int] = deque()
        self._unanswered_bytes = 0
        self._helper: threading.Thread | None = None
        self.closed = False
        self.broken = False

    def fileno(self) -> int:
        """The writing end's file descriptor."""
        return self._writer.fileno()

    @property
    def busy(self) -> bool:
        """Whether messages wait to be written (the caller should call :meth:`flush` soon)."""
        if self.broken:
            return False
        return bool(self._pending) or (self._helper is not None and self._helper.is_alive())

    def send(self, payload: bytes, *, answered: bool = True) -> None:
        """Queue ``payload`` (pickled) and write what fits; ``answered``: a reply will come.

        Never raises for a closed worker end: see :attr:`broken`.
        """
        if self.broken:
            return
        self._pending.append((payload, answered))
        self.flush()

    def acknowledge(self) -> None:
        """Note that the worker answered its oldest unanswered message; write what now fits."""
        if self._unanswered:
            self._unanswered_bytes -= self._unanswered.popleft()
        if self._pending:
            self.flush()

    def flush(self) -> None:
        """Write queued messages in order while they fit; hand an oversized one to a helper."""
        if self.closed or self.broken or (self._helper is not None and self._helper.is_alive()):
            return
        self._helper = None
        while self._pending:
            payload, answered = self._pending[0]
            size = _cost(payload)
            if self._unanswered_bytes + size <= self.capacity:
                self._pending.popleft()
                if not self._write(payload):
                    return
            elif self._unanswered_bytes == 0:
                self._pending.popleft()
                self._helper = threading.Thread(
                    target=self._write_quietly, args=(payload,), daemon=True
                )
                self._helper.start()
            else:
                return
            if answered:
                self._unanswered.append(size)
                self._unanswered_bytes += size
            if self._helper is not None:
                return

    def _write(self, payload: bytes) -> bool:
        """Write ``payload``; on failure mark the pipe broken, drop what waits, return False."""
        try:
            self._writer.send_bytes(payload)
        except (OSError, ValueError):  # the worker's end is closed: it is ending
            self.broken = True
            self._pending.clear()
            return False
        return True

    def _write_quietly(self, payload: bytes) -> None:
        self._write(payload)

    def try_send_now(self, payload: bytes) -> bool:
        """Write ``payload`` at once if it fits without waiting (used for STOP); say if sent."""
        if self.broken or self.busy or self._unanswered_bytes + _cost(payload) > self.capacity:
            return False
        return self._write(payload)

    def close(self) -> None:
        """Close the writing end (the worker then reads end-of-file and stops)."""
        self.closed = True
        self._pending.clear()
        self._writer.close()
