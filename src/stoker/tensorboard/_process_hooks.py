"""Process-wide hooks for open event files: at exit, in multiprocessing children, after fork.

Every event file a writer opens is registered here (:func:`track`) until it is closed
(:func:`untrack`); the hooks act on the files still open:

* **exit** (normal, or through an uncaught exception): ``weakref.finalize`` in the writer closes
  its files from ``atexit``. Writers of URL log dirs are closed a little earlier, from
  threading's own exit list (``threading._register_atexit``), because their last upload may
  need ``concurrent.futures`` thread pools, which are shut down before ``atexit`` runs; a
  non-daemon thread that logs after that gets a new file.
* **multiprocessing children**: a forked ``multiprocessing`` child leaves through
  ``os._exit`` without running ``atexit``; it runs ``multiprocessing.util`` finalizers
  instead, so one is registered in each child that writes.
* **fork**: ``os.register_at_fork`` makes each tracked file forget the parent's thread, batch,
  locks and descriptor in the child (the parent still writes its batch); the child opens its
  own file on its first event.

Each hook is installed once per process, the first time a file needs it. After ``SIGKILL``
nothing runs: what the writer thread had not written yet (at most the last flush interval) is
lost. A file whose writes failed (a full disk, a removed log dir) and that the program never
closed itself is reported when the hooks close it: a ``RuntimeWarning`` on stderr naming the
file, the error and the events lost, since there is no caller left to raise to.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Protocol

__all__ = ["OpenFile", "close_quietly", "track", "untrack"]

_open_files: weakref.WeakSet[OpenFile] = weakref.WeakSet()
_remote_files: weakref.WeakSet[OpenFile] = weakref.WeakSet()
_fork_hook_installed = False
_exit_hook_installed = False
_multiprocessing_hook_pid = 0


class OpenFile(Protocol):
    """What the hooks need of an open event file (``_event_file.EventFiles``)."""

    path: str
    reopen_on_add: bool

    def close(self) -> None:
        """Flush, stop the writer thread and close the file."""

    def forget_parent(self) -> None:
        """In a forked child: drop the parent's thread, batch and file."""


def track(state: OpenFile, *, remote: bool) -> None:
    """Register an open file with the hooks, installing those not installed yet.

    Args:
        state: The open file.
        remote: Whether it belongs to a URL log dir (closed early at exit, see above).
    """
    _install_fork_hook()
    _install_multiprocessing_hook()
    if remote:
        _install_exit_hook()
        _remote_files.add(state)
    _open_files.add(state)


def untrack(state: OpenFile) -> None:
    """Forget a file that was closed."""
    _open_files.discard(state)
    _remote_files.discard(state)


def close_quietly(state: OpenFile) -> None:
    """Close at garbage collection or interpreter exit; a failure becomes a RuntimeWarning."""
    try:
        state.close()
    except (OSError, RuntimeError) as err:
        warnings.warn(
            f"stoker.tensorboard: closing event file {state.path} at exit or garbage "
            f"collection: {err}",
            RuntimeWarning,
            stacklevel=2,
        )


def _reset_after_fork() -> None:
    for state in list(_open_files):
        state.forget_parent()


def _install_fork_hook() -> None:
    global _fork_hook_installed
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_after_fork)
        _fork_hook_installed = True


def _close_all_files() -> None:
    for state in list(_open_files):
        close_quietly(state)


def _install_multiprocessing_hook() -> None:
    """In a ``multiprocessing`` child, close the files when the child ends.

    The child clears the finalizer registry it inherits, so the finalizer is registered anew
    in each child (by pid).
    """
    global _multiprocessing_hook_pid
    util = sys.modules.get("multiprocessing.util")
    if util is None or _multiprocessing_hook_pid == os.getpid():
        return
    util.Finalize(None, _close_all_files, exitpriority=0)
    _multiprocessing_hook_pid = os.getpid()


def _close_remote_files() -> None:
    for state in list(_remote_files):
        close_quietly(state)
        state.reopen_on_add = True  # a non-daemon thread may still log: take a new file


def _install_exit_hook() -> None:
    """Close URL log dir writers early at exit, while uploads can still use thread pools.

    ``atexit`` handlers (where ``weakref.finalize`` closes writers) run after the threading
    module has shut ``concurrent.futures`` down, and async fsspec backends (s3fs through
    aiohttp's resolver) need an executor to upload. Hooks registered with threading's own
    exit list run first, in reverse order, so ``concurrent.futures.thread`` is imported (and
    registers its hook) before ours.
    """
    global _exit_hook_installed
    register = getattr(threading, "_register_atexit", None)
    if _exit_hook_installed or register is None:
        return
    import concurrent.futures.thread  # noqa: F401, PLC0415 - registers its exit hook before ours

    register(_close_remote_files)
    _exit_hook_installed = True
