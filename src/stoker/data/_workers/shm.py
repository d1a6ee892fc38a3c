"""Shared-memory segments for batch slabs: create, map, unlink, and sweep up orphans.

A *segment* is one file in ``/dev/shm`` named ``stoker-data-<main pid>-<worker pid>-<serial>``
(the serial from :func:`next_serial`, one count per process for every name it makes).
A worker creates it (:func:`create_segment`), reserving every page up front with
``posix_fallocate`` so that a full ``/dev/shm`` raises :class:`SharedMemoryFullError` at once
instead of a bus error on first touch, and maps it. The main process maps it once
(:func:`map_segment`) and unlinks the name right away: from then on the memory lives only as
long as the two mappings, and nothing is left behind whichever process dies.

The name exists only between the worker's create and the main process's map. Three clean-ups
cover that window: the worker unlinks its own names when it exits (:func:`unlink_segments`),
the main process unlinks a dead or stopped worker's names, and every new pool removes names
whose main and worker processes are both gone (:func:`sweep_orphans`), which covers both being
killed at once.

A process may also *own* segments that outlive a single map: the shared buffers of
``stoker.data``'s compact containers (:mod:`stoker.data._workers.shared_arrays`), named
``stoker-data-<owner pid>-<owner pid>-<serial>`` (the owner in both places, so the sweep's rule
applies as it is), and the *tickets* of their multiprocessing pickles, more names for the same
memory, named after the process that pickled and its multiprocessing parent like a worker's
slab (``stoker-data-<parent pid>-<pid>-<serial>``; a main process's as its owned names). Every
process that receives one maps it read-only without unlinking the owned name
(:func:`map_read_only`); the owner unlinks that name when the container is freed
or the owner exits, a worker that finds its main process gone unlinks the main process's owned
names too (:func:`unlink_owned`), and the sweep removes the names of processes that ended,
also when a process that used shared containers exits (``sweep_orphans(gone=os.getpid())``).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import mmap
import os
import re
import stat
import threading

__all__ = [
    "SEGMENT_PREFIX",
    "SHM_DIR",
    "SharedMemoryFullError",
    "create_segment",
    "map_read_only",
    "map_segment",
    "next_serial",
    "process_alive",
    "segment_name",
    "segment_pids",
    "shm_free_bytes",
    "stop_naming",
    "sweep_orphans",
    "unlink_owned",
    "unlink_segments",
]

SHM_DIR = "/dev/shm"
"""Where POSIX shared memory lives on Linux."""

SEGMENT_PREFIX = "stoker-data-"
"""The start of every segment name this module creates."""

_NAME = re.compile(re.escape(SEGMENT_PREFIX) + r"([0-9]{1,10})-([0-9]{1,10})-[0-9]{1,20}")
_serials = itertools.count(1)


class SharedMemoryFullError(RuntimeError):
    """``/dev/shm`` has no room for a shared-memory slab; raised instead of a bus error.

    Process workers (the default ``worker_type="process"``) send large batches through
    shared-memory slabs in ``/dev/shm``. A worker reserves every page of a new slab before it
    writes into it, so a full ``/dev/shm`` raises this error instead of killing the worker with
    SIGBUS on first touch. It is raised in the worker while it collates or sends the batch that
    needed the slab, and re-raised in the main process in place of that batch, like any worker
    error (with the worker id and the worker's traceback); the message names the size asked and
    the space free. It is a ``RuntimeError``.

    To fix it, give ``/dev/shm`` more room (``docker run --shm-size=2g``, or
    ``mount -o remount,size=4G /dev/shm``), load smaller batches or run fewer workers, or pass
    ``worker_type="thread"``, whose batches never leave the process.
    """


def segment_name(main_pid: int, worker_pid: int, serial: int) -> str:
    """Return the name of a worker's ``serial``-th segment (a file name in :data:`SHM_DIR`)."""
    return f"{SEGMENT_PREFIX}{main_pid}-{worker_pid}-{serial}"


def next_serial() -> int:
    """Return a serial no other name of this process has (slabs and shared buffers share it)."""
    return next(_serials)


def segment_pids(name: str) -> tuple[int, int] | None:
    """Return the two pids in a segment name :func:`segment_name` made, or None.

    None for any other string (another file, a path with ``/``).
    """
    match = _NAME.fullmatch(name)
    return None if match is None else (int(match[1]), int(match[2]))


def shm_free_bytes(directory: str = SHM_DIR) -> int:
    """Return the bytes an unprivileged process may still allocate in ``directory``."""
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def _full_error(size: int, free: int, directory: str) -> SharedMemoryFullError:
    return SharedMemoryFullError(
        f"shared memory slab size must fit in {directory}, got a request for {size} bytes with "
        f"{free} bytes free; enlarge {directory} (docker: --shm-size=2g; or mount -o "
        "remount,size=4G /dev/shm), use smaller batches or fewer workers, or pass "
        "worker_type='thread'"
    )


_naming = threading.Lock()
"""Held while a segment name is created; taken for good by :func:`stop_naming`."""


def _new_naming_lock() -> None:
    global _naming
    _naming = threading.Lock()  # a child forked while another thread held it


os.register_at_fork(after_in_child=_new_naming_lock)


def stop_naming(timeout: float = 1.0) -> None:
    """Let no thread of this process create a segment name from now on.

    A worker's watchdog calls it before it unlinks the worker's names and ends the process:
    without it, the worker's main thread, still working through its queued tasks, could
    create a slab while the watchdog's unlinking had released the GIL (listing the directory),
    and that name outlived both processes. Waits up to ``timeout`` seconds for a creation in
    progress.
    """
    _naming.acquire(timeout=timeout)


def create_segment(name: str, size: int, directory: str = SHM_DIR) -> mmap.mmap:
    """Create segment ``name`` of ``size`` bytes with every page reserved, and map it.

    Raises:
        SharedMemoryFullError: when ``directory`` has less than ``size`` bytes free (checked
            before touching memory, then again by ``posix_fallocate``).
        OSError: for any other failure to create or map the file.
    """
    free = shm_free_bytes(directory)
    if size > free:
        raise _full_error(size, free, directory)
    path = os.path.join(directory, name)
    with _naming:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, size)
            return mmap.mmap(fd, size)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(path)
            if err.errno in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG):
                raise _full_error(size, shm_free_bytes(directory), directory) from err
            raise
    finally:
        os.close(fd)


def map_segment(name: str, size: int, directory: str = SHM_DIR) -> mmap.mmap:
    """Map the existing segment ``name`` and unlink its name (the mapping keeps the memory)."""
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_RDWR)
    try:
        mapping = mmap.mmap(fd, size)
    finally:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return mapping


def map_read_only(
    name: str, size: int, directory: str = SHM_DIR
) -> tuple[mmap.mmap, os.stat_result]:
    """Map the first ``size`` bytes of the existing segment ``name`` read-only, keeping its name.

    Returns:
        The mapping and the file's status (its inode tells whether a name still points to it).

    Raises:
        ValueError: when ``name`` is not a name :func:`segment_name` makes (another file, a
            path with ``/``).
        FileNotFoundError: when there is no segment of that name.
        RuntimeError: when the file is not a plain file of at least ``size`` bytes (truncated,
            or some other file), so that no read past its end can raise a bus error.
    """
    if not isinstance(name, str) or segment_pids(name) is None:
        raise ValueError(
            f"segment name must be {SEGMENT_PREFIX}<pid>-<pid>-<serial>, got {name!r}; the "
            "pickle that named it was changed or is not stoker's"
        )
    path = os.path.join(directory, name)
    try:  # no symlink followed, no wait on a FIFO
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise RuntimeError(f"segment {path} must be a shared-memory file, got {err}") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size < size:
            raise RuntimeError(
                f"segment {path} must hold at least {size} bytes, got {info.st_size} "
                f"({'a plain file' if stat.S_ISREG(info.st_mode) else 'not a plain file'}): it "
                "was truncated or replaced, or the pickle naming it was changed"
            )
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), info
    finally:
        os.close(fd)


def unlink_segments(main_pid: int, worker_pid: int | None = None, directory: str = SHM_DIR) -> int:
    """Unlink the names of ``main_pid``'s segments (only ``worker_pid``'s when given).

    Returns:
        How many names were removed.
    """
    prefix = f"{SEGMENT_PREFIX}{main_pid}-"
    if worker_pid is not None:
        prefix += f"{worker_pid}-"
    removed = 0
    try:
        entries = os.listdir(directory)
    except OSError:
        return 0
    for entry in entries:
        if entry.startswith(prefix):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, entry))
                removed += 1
    return removed


def unlink_owned(owner_pid: int, directory: str = SHM_DIR) -> int:
    """Unlink the names of the segments ``owner_pid`` owns (see the module docstring).

    Returns:
        How many names were removed.
    """
    return unlink_segments(owner_pid, owner_pid, directory)


def process_alive(pid: int) -> bool:
    """Tell from ``/proc`` whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        return True  # cannot tell: assume alive, never remove a live process's memory
    return state not in (b"Z", b"X")


def sweep_orphans(directory: str = SHM_DIR, *, gone: int | None = None) -> int:
    """Unlink this user's segment names whose main and worker processes have both ended.

    Args:
        directory: where the segments live.
        gone: a pid to count as ended (a process sweeping as it exits passes its own).

    Returns:
        How many names were removed.
    """
    removed = 0
    uid = os.getuid()
    try:
        entries = os.listdir(directory)
    except OSError:
        return 0
    for entry in entries:
        pids = segment_pids(entry)
        if pids is None:
            continue
        path = os.path.join(directory, entry)
        try:
            if os.stat(path).st_uid != uid:
                continue
        except OSError:
            continue
        if all(pid == gone or not process_alive(pid) for pid in pids):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed += 1
    return removed
