"""Event file names: unique and time-ordered, how to recognise one, and claimed sub-runs.

The one home of the naming rule, used by the writer (which creates files and sub-runs) and the
reader (which recognises event files in a local walk or an fsspec listing).

An event file is named ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``, as TensorBoard's
own writers name it; readers take any file whose name contains ``tfevents`` for an event file
(:func:`is_event_file`). ``<n>`` is a process-wide counter, so two writers of one process never
pick the same name, even within one second; ``<host>`` and ``<pid>`` keep processes and
machines apart. Files are created with ``O_EXCL``: should a name be taken anyway (two machines
with the same host name and pid sharing a directory), the next counter value is tried, so a
writer never appends to another writer's file.

TensorBoard reads the files of a run in name order and does not go back to an earlier file, so a
writer that starts another file (rotation, or ``reopen()`` after ``close()``) gives it a
``<time>`` strictly greater than that of its previous file. The files of one writer therefore
sort in the order they were written even when several start within one second (the counter
alone would not do: ``.10`` sorts before ``.9``). The time field may then run a few seconds
ahead of the clock, which nothing reads.
"""

from __future__ import annotations

import itertools
import os
import socket
import time

__all__ = ["create_event_file", "event_file_name", "is_event_file", "unique_subdir"]

# One process-wide counter, like TensorBoard's own writer: it keeps names unique when several
# writers open files in the same directory within the same second.
_file_counter = itertools.count()
_MAX_NAME_TRIES = 1000


def is_event_file(path: str) -> bool:
    """Tell whether a file is an event file by its name, TensorBoard's rule.

    The name must contain ``tfevents`` and not end with ``.profile-empty`` (the profiler's
    marker files). ``path`` may be a bare name, a local path or a URL.
    """
    base = os.path.basename(path.rstrip("/"))
    return "tfevents" in base and not base.endswith(".profile-empty")


def event_file_name(filename_suffix: str = "", stamp: int | None = None) -> str:
    """Return a new event file name, ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``.

    Args:
        filename_suffix: Appended to the name.
        stamp: The ``<time>`` field; default now, in whole seconds.
    """
    when = int(time.time()) if stamp is None else stamp
    return (
        f"events.out.tfevents.{when:010d}.{socket.gethostname()}."
        f"{os.getpid()}.{next(_file_counter)}{filename_suffix}"
    )


def create_event_file(
    directory: str, filename_suffix: str, previous_stamp: int | None
) -> tuple[int, str, int]:
    """Create a new, empty event file that no other writer has, and open it for appending.

    Args:
        directory: Existing directory for the file.
        filename_suffix: Appended to the file name.
        previous_stamp: The ``<time>`` field of the writer's previous file, if any; the new one
            is strictly greater.

    Returns:
        ``(fd, path, stamp)``: the open descriptor, the file's path and its ``<time>`` field.

    Raises:
        OSError: If the file cannot be created.
    """
    stamp = int(time.time())
    if previous_stamp is not None:
        stamp = max(stamp, previous_stamp + 1)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_MAX_NAME_TRIES):
        path = os.path.join(directory, event_file_name(filename_suffix, stamp))
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            continue
        return fd, path, stamp
    raise FileExistsError(
        f"could not find a free event file name in {directory!r} after {_MAX_NAME_TRIES} tries"
    )


def unique_subdir(logdir: str, name: str) -> str:
    """Claim the local sub-run directory ``logdir/name``, or ``name-1``, ``name-2``... if taken.

    The directory is created with ``os.mkdir``, which fails when another process created it
    first, so concurrent writers (DDP ranks calling ``add_hparams`` in the same microsecond)
    each get their own sub-run. (A URL log dir has no atomic mkdir: its destination names the
    sub-run as is, and its event files still have unique names.)

    Returns:
        The sub-run's path.
    """
    os.makedirs(logdir, exist_ok=True)
    for index in range(_MAX_NAME_TRIES):
        path = os.path.join(logdir, name if index == 0 else f"{name}-{index}")
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"could not create a new sub-run {name!r} in {logdir!r}")
