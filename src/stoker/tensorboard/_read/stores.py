"""Where a log dir's event files live, asked one way: a local directory or an fsspec store.

The reader's questions of a root (is it a log dir or an event file; which runs and files are
under it; open one file; what an error of the store means) have one answer per kind of store:
:class:`LocalStore` (``os.walk``, regular files only, opened without ever blocking on a FIFO)
and :class:`RemoteStore` (fsspec, through ``stoker.tensorboard._remote``). :func:`store_of` is
the one place that tells them apart; the rest of the reader asks the store it gets. It is the
twin of the writer's ``_destination`` (a local log dir, or one staged and uploaded).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO, Protocol

from stoker._warn import warn_at_caller
from stoker.tensorboard._names import is_event_file
from stoker.tensorboard._proto import HEADER_SIZE, masked_crc32c
from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._remote import find_runs, is_url, open_binary
from stoker.tensorboard._remote import stat as url_stat

__all__ = ["LocalStore", "RemoteStore", "Store", "store_error", "store_of"]

_KINDS = {
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFDIR: "directory",
}
_NOT_REGULAR = "event files are regular files"


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "special file")


def _warn(message: str) -> None:
    warn_at_caller(message, CorruptRecordWarning)


def store_error(url: str, err: BaseException) -> EventFileError:
    """The reader's error for a store that cannot be used: the URL, the cause, the fix.

    fsspec and its backends raise their own exception types (botocore's ``NoCredentialsError``,
    aiohttp's connection errors, ``ValueError`` for an unknown protocol), so the cause is told
    by type and name.
    """
    name = type(err).__name__
    if isinstance(err, ImportError):
        return EventFileError(str(err))
    if isinstance(err, ValueError) and "protocol" in str(err).lower():
        protocol = url.split("://", 1)[0]
        fix = (
            f"fsspec knows no {protocol}:// protocol; check the URL, or install the package that "
            "provides it"
        )
    elif "credential" in name.lower() or "credential" in str(err).lower():
        fix = (
            "the store needs credentials: configure them (for s3://, AWS_PROFILE or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )
    elif isinstance(err, PermissionError):
        fix = "access was denied: check the credentials and the permissions on that path"
    elif isinstance(err, FileNotFoundError):
        fix = "check the spelling, or pass the directory given to SummaryWriter"
    else:
        fix = "check the URL and that the store is reachable from here"
    return EventFileError(f"cannot read log dir {url!r}: {name}: {err}; {fix}")


def _not_a_log(root: str, what: str) -> EventFileError:
    return EventFileError(f"path must be an event file or a log directory, got {root!r}, {what}")


def _missing(root: str, hint: str = "") -> EventFileError:
    return _not_a_log(
        root,
        f"which does not exist{hint}; check the spelling or pass the directory given to "
        "SummaryWriter",
    )


def _check_head(root: str, head: bytes) -> None:
    """A file named without ``tfevents`` is an event file only if it starts with a header."""
    if len(head) == HEADER_SIZE and masked_crc32c(head[:8]) == int.from_bytes(head[8:], "little"):
        return
    what = (
        "a file that is not an event file (its name has no 'tfevents' and it does not start "
        "with a TFRecord header); pass the log directory given to SummaryWriter, or one of its "
        "event files"
    )
    if root.startswith(("http://", "https://")):
        what += " (over http(s):// a directory is its index page: pass an event file's URL)"
    raise _not_a_log(root, what)


def _not_regular(path: str) -> str | None:
    """Why ``path`` cannot be read as an event file, or None for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        return f"it cannot be read ({err.strerror})"
    if stat.S_ISREG(mode):
        return None
    return f"it is a {_kind(mode)}, not a regular file; {_NOT_REGULAR}"


def _open_local(path: str) -> BinaryIO:
    """Open a regular file for reading bytes, without ever blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise EventFileError(f"{path!r} is a {_kind(mode)}, not a regular file; {_NOT_REGULAR}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class Store(Protocol):
    """The reader's questions of a root, answered by one kind of store."""

    forkable: bool
    """Whether a forked process may read its files (a store's client may hold threads)."""

    def check_root(self, root: str) -> None:
        """Raise :class:`EventFileError` unless ``root`` is a log dir or an event file."""

    def find_runs(self, root: str, warned: set[str] | None) -> dict[str, list[str]]:
        """Map each run under ``root`` to its event files (see ``files.find_event_files``)."""

    def open(self, path: str) -> BinaryIO:
        """Open one event file for reading bytes (seekable)."""

    def error(self, path: str, err: Exception) -> EventFileError | None:
        """The reader's error for ``err``, one of the store's own; None: not the store's."""


class LocalStore:
    """A log dir on a local file system."""

    forkable = True

    def check_root(self, root: str) -> None:
        """Raise unless ``root`` is a directory, or a regular file that is an event file."""
        head = None
        try:
            mode = os.stat(root).st_mode
            if stat.S_ISREG(mode) and not is_event_file(root):
                with _open_local(root) as stream:
                    head = stream.read(HEADER_SIZE)
        except FileNotFoundError as err:
            raise _missing(root) from err
        except OSError as err:
            raise EventFileError(
                f"cannot read {root!r}: {err.strerror}; check its permissions"
            ) from err
        if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
            raise _not_a_log(root, f"a {_kind(mode)}; {_NOT_REGULAR}")
        if head is not None:
            _check_head(root, head)

    def find_runs(self, root: str, warned: set[str] | None) -> dict[str, list[str]]:
        """Walk ``root``; skip, with a warning, what cannot be listed or is not a regular file."""
        if os.path.isfile(root):
            return {".": [root]}
        seen = set() if warned is None else warned

        def unlistable(err: OSError) -> None:
            if err.filename is None or os.path.abspath(err.filename) == os.path.abspath(root):
                raise EventFileError(
                    f"cannot list log directory {root!r}: {err.strerror}; check its permissions"
                ) from err
            if err.filename not in seen:
                seen.add(err.filename)
                _warn(
                    f"{err.filename!r}: cannot list this directory ({err.strerror}); its "
                    "event files are skipped"
                )

        runs: dict[str, list[str]] = {}
        for directory, subdirs, names in os.walk(root, onerror=unlistable):
            subdirs.sort()
            files = []
            for name in sorted(names):
                if not is_event_file(name):
                    continue
                path = os.path.join(directory, name)
                problem = _not_regular(path)
                if problem is None:
                    files.append(path)
                elif path not in seen:
                    seen.add(path)
                    _warn(f"{path!r}: skipped, {problem}")
            if files:
                run = os.path.relpath(directory, root).replace(os.sep, "/")
                runs[run] = files
        return runs

    def open(self, path: str) -> BinaryIO:
        """Open a regular file, never blocking on a FIFO."""
        return _open_local(path)

    def error(self, path: str, err: Exception) -> EventFileError | None:
        """A local file's errors are the system's own, reported where they are caught."""
        return None


class RemoteStore:
    """A log dir behind an fsspec URL (``s3://bucket/sweep``)."""

    forkable = False

    def check_root(self, root: str) -> None:
        """Raise unless ``root`` names an event file or a prefix of the store."""
        head = None
        try:
            if url_stat(root).get("type") != "file" or is_event_file(root):
                return
            with open_binary(root) as stream:
                head = stream.read(HEADER_SIZE)
        except FileNotFoundError as err:
            raise _missing(root, " or cannot be reached") from err
        except Exception as err:  # any backend's error: reported with its cause
            raise store_error(root, err) from err
        _check_head(root, head)

    def find_runs(self, root: str, warned: set[str] | None) -> dict[str, list[str]]:
        """List the store under ``root`` through fsspec."""
        try:
            return find_runs(root)
        except Exception as err:  # any backend's error: reported with its cause
            raise store_error(root, err) from err

    def open(self, path: str) -> BinaryIO:
        """Open the file through fsspec."""
        return open_binary(path)

    def error(self, path: str, err: Exception) -> EventFileError | None:
        """A backend's own error type, told by type and name (:func:`store_error`)."""
        return store_error(path, err)


_LOCAL = LocalStore()
_REMOTE = RemoteStore()


def store_of(root: str) -> Store:
    """The store of a root, a path or a URL (the one place that tells them apart)."""
    return _REMOTE if is_url(root) else _LOCAL
