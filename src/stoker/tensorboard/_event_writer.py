"""EventFileWriter: the handle on one writer's event files, with its options and destination.

It validates the options, picks the destination (the log dir itself, or a staging directory
uploaded to a URL log dir), and closes the files when it is garbage-collected or at exit. The
work itself (queue, writer thread, rotation) is ``_event_file.FileState``'s.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from typing import Any

from stoker.tensorboard import _remote
from stoker.tensorboard._destination import Destination, make_destination
from stoker.tensorboard._event_file import FileState, close_quietly
from stoker.tensorboard._rotate import Rotation

__all__ = ["EventFileWriter"]


class EventFileWriter:
    """Writes encoded events to event files in a log directory, from a background thread.

    Args:
        logdir: Directory for the event file; created if missing. A URL (``s3://bucket/run``
            or any fsspec URL) writes files in a local staging directory and uploads each one
            once it is closed (needs fsspec).
        max_queue: Events batched before the writer thread is woken.
        flush_secs: Seconds between ``fsync`` calls of the event file.
        filename_suffix: Appended to the event file name.
        flush_interval: Longest time, in seconds, an event waits before it is written to the file.
        max_file_bytes: Start a new event file once the current one holds this many bytes.
            Default ``None``: no limit for a local log dir, 32 MiB for a URL; 0 means no limit.
        max_file_secs: Start a new event file once the current one (with at least one event)
            is this many seconds old. Default ``None``: no limit for a local log dir, 120 s for a
            URL, so events reach the store within about two minutes; 0 means no limit.
        storage_options: fsspec filesystem options for a URL log dir, e.g.
            ``{"endpoint_url": "http://127.0.0.1:9000"}``.
        staging_dir: Where a URL log dir's files are staged; default the temp directory.
    """

    def __init__(
        self,
        logdir: str,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        flush_interval: float = 1.0,
        *,
        max_file_bytes: int | None = None,
        max_file_secs: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        staging_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open a new event file in ``logdir``."""
        if not isinstance(max_queue, int) or isinstance(max_queue, bool):
            raise TypeError(f"max_queue must be an int, got {max_queue!r}; pass e.g. 10")
        if not isinstance(flush_secs, (int, float)) or flush_secs <= 0:
            raise ValueError(f"flush_secs must be a positive number, got {flush_secs!r}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {filename_suffix!r}")
        logdir = str(logdir)
        rotation = Rotation.from_options(
            max_file_bytes, max_file_secs, remote=_remote.is_url(logdir)
        )
        dest = make_destination(logdir, storage_options, staging_dir)
        interval = min(float(flush_interval), float(flush_secs))
        self._state = FileState(
            dest, max_queue, flush_secs, filename_suffix, interval, rotation=rotation
        )
        self._state.open()
        self._finalizer = weakref.finalize(self, close_quietly, self._state)

    @property
    def path(self) -> str:
        """The path of the current event file (in the staging directory for a URL log dir)."""
        return self._state.path

    @property
    def destination(self) -> Destination:
        """Where the files go: a local log dir, or a staged and uploaded URL log dir."""
        return self._state.dest

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
