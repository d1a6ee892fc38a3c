"""Where event files go: a local log dir, or a URL log dir staged locally and uploaded once.

A local log dir (:class:`LocalDestination`) keeps torch's behaviour: files are created in it
and stay there. Object stores have no append, so an event file for ``s3://bucket/run`` is
written in a local staging directory (``<tmp>/stoker-tb-XXXX``, see ``staging_dir``) like any
local event file (:class:`RemoteDestination`). When the writer closes a file (rotation,
``close()``, or interpreter exit), it hands the file over: a background thread uploads it to
``<url>/<file name>`` with fsspec's ``put_file`` (three tries, with a short backoff), then
deletes the staged copy. A file still being written is never uploaded and ``flush()`` uploads
nothing; the rotation limits (``max_file_bytes``, ``max_file_secs``) decide how soon events
appear in the store. ``close()`` waits for the uploads and removes the staging directory; a
file that could not be uploaded stays there and ``close()`` raises a ``RuntimeError`` naming
it, so nothing is lost silently.

Projector files (``add_embedding``) are small and written once; they go straight to the store.
``projector_config.pbtxt`` is read, extended and written back, since a store cannot append.

After ``os.fork()`` the child gets its own staging directory, upload thread and filesystem
object (fsspec's async filesystems are not fork-safe); the parent keeps uploading its own files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from stoker.tensorboard._names import unique_subdir
from stoker.tensorboard._remote import check_storage_options, filesystem, is_url, local_path
from stoker.tensorboard._rotate import Rotation

__all__ = [
    "Destination",
    "FileOptions",
    "LocalDestination",
    "RemoteDestination",
    "make_destination",
]

_TRIES = 3
_BACKOFF = 0.5
_log = logging.getLogger(__name__)


class Destination(Protocol):
    """Where a writer's event files are created and what happens to them once closed."""

    logdir: str
    remote: bool
    """Whether the log dir is a URL (files staged here, uploaded when closed)."""

    def directory(self) -> str:
        """The local directory to create event files in."""

    def subrun(self, name: str) -> str:
        """The path or URL of the sub-run ``name`` of this log dir (nothing created)."""

    def new_subrun(self, name: str) -> str:
        """Claim a sub-run named ``name`` (or ``name-1``...) that no other writer has."""

    def file_closed(self, path: str, *, empty: bool) -> None:
        """Take a closed event file; ``empty``: it holds only its version record."""

    def finish(self, timeout: float) -> None:
        """Finish with every closed file (upload it) before the writer reports closed."""

    def forget_parent(self) -> None:
        """In a forked child: drop what belongs to the parent."""


class LocalDestination:
    """A local log dir: files are created in it and stay there."""

    remote = False

    def __init__(self, logdir: str) -> None:
        """Remember the directory."""
        self.logdir = logdir

    def directory(self) -> str:
        """The log dir itself."""
        return self.logdir

    def subrun(self, name: str) -> str:
        """``logdir/name``."""
        return os.path.join(self.logdir, name)

    def new_subrun(self, name: str) -> str:
        """Create ``logdir/name`` (or the first free ``name-1``...) with an atomic ``mkdir``."""
        return unique_subdir(self.logdir, name)

    def file_closed(self, path: str, *, empty: bool) -> None:
        """Nothing to do: the file is already where it belongs."""

    def finish(self, timeout: float) -> None:
        """Nothing to do."""

    def forget_parent(self) -> None:
        """Nothing to do."""


class RemoteDestination:
    """Where the event files of one writer of a URL log dir go: staged, then uploaded.

    Args:
        url: The log dir URL, e.g. ``"s3://bucket/run"``.
        storage_options: Keyword arguments for the fsspec filesystem.
        staging_dir: Parent of the staging directory; default the system temp directory.

    Raises:
        ImportError: If fsspec or the protocol's package is missing.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        staging_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Resolve the filesystem; create nothing yet (the options are :class:`FileOptions`')."""
        self.logdir = url.rstrip("/")
        self._fs, self._root = filesystem(url, storage_options)
        self._options = dict(storage_options or {})
        self._staging_parent = None if staging_dir is None else os.fspath(staging_dir)
        self._staging: str | None = None
        self._sent_any = False
        self._reset_threads()

    def _reset_threads(self) -> None:
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed: list[tuple[str, BaseException]] = []
        self.uploaded: list[str] = []

    remote = True

    def subrun(self, name: str) -> str:
        """``url/name``."""
        return f"{self.logdir}/{name}"

    def new_subrun(self, name: str) -> str:
        """``url/name``: a store has no atomic mkdir, and event file names are unique anyway."""
        return self.subrun(name)

    def _filesystem(self) -> Any:
        if self._fs is None:
            self._fs, self._root = filesystem(self.logdir, self._options)
        return self._fs

    def directory(self) -> str:
        """The local staging directory, created on first use."""
        if self._staging is None:
            if self._staging_parent is not None:
                os.makedirs(self._staging_parent, exist_ok=True)
            self._staging = tempfile.mkdtemp(prefix="stoker-tb-", dir=self._staging_parent)
        return self._staging

    def file_closed(self, path: str, *, empty: bool) -> None:
        """Queue a closed event file for upload.

        A file holding nothing but its ``file_version`` record is dropped unless it is the
        first file of this writer, so a writer that logged nothing still leaves one file, as it
        does in a local log dir.
        """
        if empty and self._sent_any:
            with contextlib.suppress(OSError):
                os.remove(path)
            return
        self._sent_any = True
        self._queue.put(path)
        if self._thread is None:
            thread = threading.Thread(
                target=self._run, name=f"stoker-tensorboard-upload:{self.logdir}", daemon=True
            )
            try:
                thread.start()
            except RuntimeError:  # interpreter shutting down: finish() uploads in its thread
                return
            self._thread = thread

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            if path is None:
                return
            self._upload(path)

    def _upload(self, path: str) -> None:
        remote = f"{self._root}/{os.path.basename(path)}"
        error: BaseException = RuntimeError("no upload attempted")
        for attempt in range(_TRIES):
            if attempt:
                time.sleep(_BACKOFF * 2 ** (attempt - 1))
            try:
                self._filesystem().put_file(path, remote)
            except Exception as err:  # any backend error: kept, and raised by finish()
                error = err
                continue
            with contextlib.suppress(OSError):
                os.remove(path)
            with self._lock:
                self.uploaded.append(remote)
            return
        _log.warning("uploading %s to %s failed: %r", path, self.logdir, error)
        with self._lock:
            self._failed.append((path, error))

    def finish(self, timeout: float) -> None:
        """Wait until every closed file is uploaded, then remove the staging directory.

        Raises:
            RuntimeError: If the uploads do not finish within ``timeout`` seconds, or a file
                could not be uploaded (it is kept in the staging directory).
        """
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(
                    f"uploads to {self.logdir!r} did not finish within {timeout} s; the event "
                    f"files not yet uploaded are in {self._staging!r}"
                )
            self._thread = None
        while True:  # files queued when no thread could be started
            try:
                path = self._queue.get_nowait()
            except queue.Empty:
                break
            if path is not None:
                self._upload(path)
        with self._lock:
            failed, self._failed = self._failed, []
        staging, self._staging = self._staging, None
        if failed:
            names = ", ".join(path for path, _ in failed)
            raise RuntimeError(
                f"could not upload {len(failed)} event file(s) to {self.logdir!r}; they are kept "
                f"in {staging!r}: {names}; copy them there by hand"
            ) from failed[-1][1]
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)

    def forget_parent(self) -> None:
        """In a forked child: leave the parent's files and thread alone; start afresh on use."""
        self._fs = None
        self._staging = None
        self._sent_any = False
        self._reset_threads()

    # The store used by ``_summary.embedding.write_embedding`` for the projector files.

    def _path(self, relpath: str) -> str:
        return f"{self._root}/{relpath}"

    def is_dir(self, relpath: str) -> bool:
        """Tell whether ``relpath`` is a directory (prefix) in the store."""
        fs = self._filesystem()
        fs.invalidate_cache(self._path(relpath))
        return bool(fs.isdir(self._path(relpath)))

    def is_file(self, relpath: str) -> bool:
        """Tell whether ``relpath`` is a file in the store."""
        fs = self._filesystem()
        return bool(fs.isfile(self._path(relpath)))

    def describe(self, relpath: str) -> str:
        """The URL of ``relpath``, for messages."""
        return f"{self.logdir}/{relpath}"

    def write_bytes(self, relpath: str, data: bytes) -> None:
        """Write (or replace) the file ``relpath``."""
        self._filesystem().pipe_file(self._path(relpath), data)

    def append_bytes(self, relpath: str, data: bytes) -> None:
        """Append to ``relpath`` by reading it and writing it back (stores cannot append)."""
        fs = self._filesystem()
        path = self._path(relpath)
        fs.invalidate_cache(path)
        old = bytes(fs.cat_file(path)) if fs.isfile(path) else b""
        fs.pipe_file(path, old + data)


@dataclass(frozen=True)
class FileOptions:
    """The file options a writer passes to every writer of its run, checked when made.

    Attributes:
        max_file_bytes: rotate an event file at this size (None: the log dir's default, 0: no
            limit); see :class:`~stoker.tensorboard._rotate.Rotation`.
        max_file_secs: rotate an event file at this age, the same way.
        storage_options: fsspec filesystem options of a URL log dir (None for a path).
        staging_dir: the parent of a URL log dir's local staging directory (None: the
            temp directory).

    Raises:
        TypeError, ValueError: for a bad value, naming it and what would do.
    """

    max_file_bytes: float | None = None
    max_file_secs: float | None = None
    storage_options: Mapping[str, Any] | None = None
    staging_dir: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        """Check every option now, before any file or store is touched."""
        Rotation.from_options(self.max_file_bytes, self.max_file_secs, remote=False)
        check_storage_options(self.storage_options)
        if self.staging_dir is not None and not isinstance(self.staging_dir, (str, os.PathLike)):
            raise TypeError(
                f"staging_dir must be a directory path or None, got {self.staging_dir!r}; pass "
                "e.g. '/local/scratch'"
            )

    def keywords(self) -> dict[str, Any]:
        """The options as the writers' keyword arguments (``FileWriter(..., **keywords)``)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def destination(self, logdir: str) -> Destination:
        """Where ``logdir``'s files go: local, or staged and uploaded for a URL."""
        return make_destination(logdir, self.storage_options, self.staging_dir)

    def rotation(self, destination: Destination) -> Rotation:
        """When ``destination``'s files rotate: these limits, else its kind's defaults."""
        return Rotation.from_options(
            self.max_file_bytes, self.max_file_secs, remote=destination.remote
        )


def make_destination(
    logdir: str,
    storage_options: Mapping[str, Any] | None,
    staging_dir: str | os.PathLike[str] | None,
) -> Destination:
    """Return the destination of a log dir: local, or staged and uploaded for a URL."""
    if is_url(logdir):
        return RemoteDestination(logdir, storage_options, staging_dir)
    if storage_options is not None:
        raise ValueError(
            f"storage_options must be None for a local log dir, got {storage_options!r}; "
            f"they apply to URL log dirs such as 's3://bucket/run', and {logdir!r} is a path"
        )
    return LocalDestination(local_path(logdir))
