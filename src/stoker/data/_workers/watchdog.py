"""Ends a worker process whose main process is gone, even while the worker is busy in a fetch.

A worker waiting for its next task notices a vanished main process by itself: its task wait
wakes every :data:`~stoker.data._workers.timeouts.PARENT_CHECK_INTERVAL` seconds and calls
:func:`parent_alive`. A worker stuck in a long ``dataset[i]`` or ``collate_fn`` does not wait on
its pipe, so without help it would live on, with its shared-memory names, until that call
returned. :func:`start_watchdog` covers that case: a thread in the worker makes the same
check as often, and once the main process is gone it unlinks the worker's segment names
(:func:`~stoker.data._workers.shm.unlink_segments`) and the names of the main process's shared
containers (:func:`~stoker.data._workers.shm.unlink_owned`) and ends the process at once with
``os._exit(PARENT_GONE_EXIT)``. The thread needs the GIL for a moment per check, so a call that
holds the GIL throughout (rare: ``time.sleep``, I/O and most NumPy work release it) delays it.
Before unlinking, it stops the process from creating names
(:func:`~stoker.data._workers.shm.stop_naming`): the worker's main thread may still be working
through tasks queued before the main process died, and a slab it created while the unlinking
had released the GIL would outlive both processes.

Linux's ``prctl(PR_SET_PDEATHSIG)`` is not used: it fires when the *thread* that started the
worker ends (an iterator created in a short-lived thread would lose its workers), a forkserver
worker's parent is the fork server rather than the main process, and a signal that kills at
once would leave the segment names behind.
"""

from __future__ import annotations

import _thread
import os
import time

from stoker.data._workers.shm import (
    SHM_DIR,
    process_alive,
    stop_naming,
    unlink_owned,
    unlink_segments,
)
from stoker.data._workers.timeouts import PARENT_CHECK_INTERVAL

__all__ = ["PARENT_GONE_EXIT", "parent_alive", "start_watchdog"]

PARENT_GONE_EXIT = 86
"""Exit code of a worker ended by its watchdog because the main process was gone."""


def parent_alive(main_pid: int, parent_pid: int) -> bool:
    """Tell whether the main process still exists.

    Args:
        main_pid: the main process's pid.
        parent_pid: the worker's parent pid when it started (the main process, or the fork
            server for forkserver workers, which can outlive the main process).

    Returns:
        False once the worker has been re-parented or the main process is gone or a zombie
        (a killed main process lingers as one until its own parent reaps it).
    """
    return os.getppid() == parent_pid and process_alive(main_pid)


def _watch(main_pid: int, parent_pid: int, interval: float, directory: str) -> None:
    while parent_alive(main_pid, parent_pid):
        time.sleep(interval)
    stop_naming()
    unlink_segments(main_pid, os.getpid(), directory)
    unlink_owned(main_pid, directory)  # the main process's shared containers: nobody's now
    os._exit(PARENT_GONE_EXIT)


def start_watchdog(
    main_pid: int,
    parent_pid: int,
    *,
    interval: float = PARENT_CHECK_INTERVAL,
    directory: str = SHM_DIR,
) -> int:
    """Start the thread that ends this worker process once the main process is gone.

    The thread is started with :func:`_thread.start_new_thread`, which does not wait for the
    new thread to run as :meth:`threading.Thread.start` does (0.5-1.3 ms of a fresh worker's
    start on a loaded 2-core machine, before its first task); like a daemon thread, it does
    not hold up the process's exit.

    Args:
        main_pid: the main process's pid (also part of the worker's segment names).
        parent_pid: the worker's parent pid when it started (see :func:`parent_alive`).
        interval: seconds between two checks.
        directory: where the worker's segments live.

    Returns:
        The thread's identifier.
    """
    return _thread.start_new_thread(_watch, (main_pid, parent_pid, interval, directory))
