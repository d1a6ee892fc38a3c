"""NumPy buffers that reach other processes as the name of one shared-memory segment.

:class:`SharedArrays` is the storage of ``stoker.data``'s compact containers: a fixed tuple of
one-dimensional, read-only NumPy arrays. It travels three ways:

* to a **forked** worker, by inheritance: the arrays are a handful of Python objects over large
  buffers the worker only reads, so no page is copied and nothing is pickled;
* through **multiprocessing** (spawn and forkserver workers, ``multiprocessing`` queues, pipes
  and pools, torch's loader): the first time a container is pickled by ``ForkingPickler``, its
  arrays move into one owned segment (:mod:`stoker.data._workers.shm`) and the owner's arrays
  become read-only views on it; every such pickle carries a *ticket* for the segment (below),
  its size, its layout and a random token, and the receiving process maps it read-only,
  without a copy;
* through a **plain** ``pickle.dumps`` (a file, a cache): as the arrays' bytes, which outlive
  any process.

The lifetime rule. A segment's memory lasts as long as one of its names or mappings does, and
it has two kinds of names:

* the *owned name* ``stoker-data-<owner pid>-<owner pid>-<n>`` lives as long as the owner's
  :class:`SharedArrays`: the owner unlinks it when that object is freed (a
  :func:`weakref.finalize`, in the owner only: a forked child freeing its inherited copy
  leaves it) or when the owner exits;
* each multiprocessing pickle makes its own *ticket*, a hard link to the same file, named after
  the pickling process and its multiprocessing parent (``stoker-data-<parent pid>-<pid>-<n>``;
  a main process's is ``stoker-data-<pid>-<pid>-<n>``, like its owned names). The first
  process that reads the pickle maps the segment and unlinks the ticket: from then on its
  mapping keeps the memory. A ticket nobody reads is unlinked once the process that made it
  and that parent have both ended (by the exit sweep below, or the next sweep).

So a multiprocessing pickle can be read once at any time until the process that made it and
its parent have both ended, whatever the sender did with the container meanwhile: a temporary
put on a queue (pickled later, by the feeder thread), a pool task's argument, the result of a
pool worker that then exits. Reading the same pickle again (the pool's one setup pickle serves
every worker) maps the owned name, which needs the container alive in its owner, as the
loader's dataset is. A process that sends on a container it received makes its ticket from the
owned name, or, once that is gone, first copies the arrays into a segment of its own.

After a kill: every process that shares or reads a segment sweeps as it exits
(``sweep_orphans(gone=os.getpid())``: names whose processes have all ended, itself counted),
a stoker worker that finds its main process gone unlinks that process's owned names, and the
sweep of the next pool or shared container removes whatever is left of processes that were
all killed.

Reading a pickle checks it before it maps anything as arrays or unlinks a name: a name that is
not a segment's (a path with ``/``) and a layout that does not fit raise ``ValueError``; a
segment shorter than the layout (truncated), one whose token differs (another process's
segment, or a name reused since) and a segment gone with its ticket raise ``RuntimeError``.

A container type that holds a :class:`SharedArrays` registers its multiprocessing reduction
with :func:`register_shared`, which also tells the process pool that such a pickle serves every
worker (:func:`serves_every_process`), so a spawn pool still pickles its setup once;
:func:`tickets_dropped_on_error` unlinks the tickets of a pickle that is abandoned half-way.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import operator
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from multiprocessing import util
from multiprocessing.reduction import ForkingPickler
from typing import Any, NamedTuple

import numpy as np

from stoker.data._workers.shm import (
    SHM_DIR,
    create_segment,
    map_read_only,
    next_serial,
    segment_name,
    segment_pids,
    sweep_orphans,
)

__all__ = [
    "Handle",
    "SharedArrays",
    "register_shared",
    "serves_every_process",
    "tickets_dropped_on_error",
]

_ALIGN = 64
_TOKEN = 16
_HEADER = 64
"""Bytes before the first array: the random token, then padding to the alignment."""
_EXIT_PRIORITY = -100
"""After multiprocessing's own exit work (a queue's feeder flushes at -5, children are joined)."""
_every_process: set[type] = set()
_journal = threading.local()
_exit_hook_pid = 0
_fork_hook = False


class Handle(NamedTuple):
    """What a multiprocessing pickle of :class:`SharedArrays` carries: a segment and a layout."""

    name: str
    """The owned name."""
    size: int
    layout: tuple[tuple[int, str, int], ...]
    """``(offset, dtype, length)`` per array."""
    token: bytes
    """Random bytes at the start of the segment, telling it from any other."""
    ticket: str = ""
    """This pickle's own name for the segment ("" in the handle a process keeps)."""


def _unlink_if_owner(path: str, owner: int) -> None:
    if os.getpid() == owner:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _sweep_at_exit() -> None:
    sweep_orphans(gone=os.getpid())


def _ensure_exit_hook() -> None:
    """Sweep as this process exits (once per process; forked children get their own)."""
    global _exit_hook_pid, _fork_hook
    pid = os.getpid()
    if _exit_hook_pid == pid:
        return
    _exit_hook_pid = pid
    # multiprocessing's exit hook runs in its children too, which leave by os._exit
    util.Finalize(None, _sweep_at_exit, exitpriority=_EXIT_PRIORITY)
    if not _fork_hook:
        _fork_hook = True
        os.register_at_fork(after_in_child=_ensure_exit_hook)


def _parent_pid() -> int:
    """The pid a ticket is named after with this process's: its multiprocessing parent's."""
    parent = multiprocessing.parent_process()
    pid = None if parent is None else parent.pid
    return os.getpid() if pid is None else pid


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@contextlib.contextmanager
def tickets_dropped_on_error() -> Iterator[None]:
    """Unlink the tickets this thread makes inside the block if the block raises.

    A pickler that gives up half-way (the process pool's once-only pickler meeting an object
    made for one process) leaves pickles nobody will read; their tickets go at once instead of
    when the process exits.
    """
    made: list[str] = []
    outer = getattr(_journal, "made", None)
    _journal.made = made
    try:
        yield
    except BaseException:
        for name in made:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(SHM_DIR, name))
        made.clear()
        raise
    finally:
        _journal.made = outer
        if outer is not None:
            outer.extend(made)


class SharedArrays:
    """A fixed tuple of one-dimensional, read-only NumPy arrays, shareable between processes.

    Args:
        arrays: the arrays; each is made C-contiguous (copied only when it is not).
    """

    __slots__ = ("__weakref__", "_arrays", "_handle", "_lock")

    def __init__(self, arrays: Sequence[np.ndarray]) -> None:
        """Hold ``arrays`` (see the class docstring)."""
        self._arrays = tuple(_read_only(np.ascontiguousarray(a).reshape(-1)) for a in arrays)
        self._handle: Handle | None = None
        self._lock = threading.Lock()

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays (read-only; views on the segment once shared)."""
        return self._arrays

    @property
    def nbytes(self) -> int:
        """The arrays' bytes."""
        return sum(int(a.nbytes) for a in self._arrays)

    def share(self) -> Handle:
        """Return the handle of a segment holding the arrays, moving them into one if needed.

        The first call makes an owned segment; later calls return the same handle while its
        owned name exists (in a receiving process, while the owner keeps the container), and
        otherwise copy the arrays into a new segment this process owns.

        Raises:
            SharedMemoryFullError: when ``/dev/shm`` has no room for the arrays.
        """
        with self._lock:
            handle = self._handle
            if handle is not None and os.path.exists(os.path.join(SHM_DIR, handle.name)):
                return handle
            return self._move()

    def _move(self) -> Handle:
        """Copy the arrays into a new owned segment and view them there (the lock is held)."""
        layout = []
        offset = _HEADER
        for array in self._arrays:
            layout.append((offset, array.dtype.str, int(array.size)))
            offset += -(-int(array.nbytes) // _ALIGN) * _ALIGN
        sweep_orphans()
        _ensure_exit_hook()
        pid = os.getpid()
        while True:
            name = segment_name(pid, pid, next_serial())
            try:
                mapping = create_segment(name, offset)
                break
            except FileExistsError:
                continue  # left by an earlier process with this pid that was killed
        token = os.urandom(_TOKEN)
        mapping[:_TOKEN] = token
        finalizer = weakref.finalize(self, _unlink_if_owner, os.path.join(SHM_DIR, name), pid)
        finalizer.atexit = False  # at exit, the exit sweep does it after queues have flushed
        views = _views(mapping, layout)
        for view, array in zip(views, self._arrays, strict=True):
            view[...] = array
        self._arrays = tuple(_read_only(view) for view in views)
        self._handle = Handle(name, offset, tuple(layout), token)
        return self._handle

    def ticket(self) -> Handle:
        """Share the arrays and make a ticket: the handle one multiprocessing pickle carries.

        Raises:
            SharedMemoryFullError: when ``/dev/shm`` has no room for the arrays.
        """
        _ensure_exit_hook()
        handle = self.share()
        names = (_parent_pid(), os.getpid())
        moved = False
        while True:
            name = segment_name(*names, next_serial())
            try:
                os.link(os.path.join(SHM_DIR, handle.name), os.path.join(SHM_DIR, name))
            except FileExistsError:
                continue  # left by an earlier process with these pids that was killed
            except FileNotFoundError:
                if moved:
                    raise
                with self._lock:  # the owned name went since share() looked
                    handle = self._move()
                moved = True
                continue
            made = getattr(_journal, "made", None)
            if made is not None:
                made.append(name)
            return handle._replace(ticket=name)

    @classmethod
    def attach(cls, handle: Handle) -> SharedArrays:
        """Map the segment of ``handle`` (read-only, no copy) as a :class:`SharedArrays`.

        Takes the handle's ticket when it is there (unlinking it), else maps the owned name.

        Raises:
            ValueError: when ``handle`` is malformed (a name that is not a segment's, a
                layout outside the segment).
            RuntimeError: when the segment is gone with the ticket, is shorter than the
                layout, or is not the one the handle was made for.
        """
        handle = _checked(handle)
        _ensure_exit_hook()
        mapping = _map(handle.ticket, handle, take=True) if handle.ticket else None
        if mapping is None:
            mapping = _map(handle.name, handle, take=False)
        if mapping is None:
            raise RuntimeError(
                f"shared-memory segment {handle.name!r} must exist to read this pickle, got "
                f"neither it nor the pickle's ticket {handle.ticket!r} in {SHM_DIR}: a "
                "multiprocessing pickle of a compact container can be read once until the "
                "process that made it and that process's parent have both exited, and again "
                "only while the sender still holds the container; send it again, or use "
                "pickle.dumps (which carries the bytes) for a pickle that must last"
            )
        shared = cls.__new__(cls)
        shared._arrays = tuple(_read_only(view) for view in _views(mapping, handle.layout))
        shared._handle = handle._replace(ticket="")
        shared._lock = threading.Lock()
        return shared

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the arrays' bytes (multiprocessing pickles a handle instead)."""
        return (SharedArrays, (self._arrays,))


def _bad(field: str, expected: str, value: object) -> ValueError:
    return ValueError(
        f"shared arrays handle {field} must be {expected}, got {value!r}; the pickle was "
        "changed or made by another version of stoker"
    )


def _checked(value: Any) -> Handle:
    """``value`` as a :class:`Handle` whose fields all make sense; ValueError otherwise."""
    if not isinstance(value, tuple) or len(value) != len(Handle._fields):
        raise _bad("", f"a tuple of {len(Handle._fields)} fields", value)
    handle = Handle(*value)
    for field, name in (("name", handle.name), ("ticket", handle.ticket)):
        if field == "ticket" and name == "":
            continue  # a handle with no ticket: the owned name alone
        if not isinstance(name, str) or segment_pids(name) is None:
            raise _bad(field, "a segment name (stoker-data-<pid>-<pid>-<serial>)", name)
    size = handle.size
    if type(size) is not int or size < _HEADER:
        raise _bad("size", f"an int of at least {_HEADER}", size)
    if not isinstance(handle.token, bytes) or len(handle.token) != _TOKEN:
        raise _bad("token", f"{_TOKEN} bytes", handle.token)
    if not isinstance(handle.layout, tuple):
        raise _bad("layout", "a tuple of (offset, dtype, length)", handle.layout)
    for entry in handle.layout:
        try:
            offset, dtype_str, length = entry
            dtype = np.dtype(dtype_str)
            fits = (
                operator.index(offset) >= _HEADER
                and operator.index(length) >= 0
                and offset + length * dtype.itemsize <= size
                and not dtype.hasobject
            )
        except (TypeError, ValueError):
            fits = False
        if not fits:
            expected = f"(offset, numeric dtype, length) within {size} bytes"
            raise _bad("layout entry", expected, entry)
    return handle


def _map(name: str, handle: Handle, *, take: bool) -> mmap.mmap | None:
    """Map segment ``name`` if it exists and is the handle's; unlink the name when ``take``."""
    try:
        mapping, info = map_read_only(name, handle.size)
    except FileNotFoundError:
        return None
    if mapping[:_TOKEN] != handle.token:
        mapping.close()
        raise RuntimeError(
            f"shared-memory segment {name!r} must be the one this pickle was made for, got "
            "another segment (its token differs): the pickle was changed, or the name was "
            "reused after its process ended; send the container again"
        )
    if take:
        path = os.path.join(SHM_DIR, name)
        with contextlib.suppress(OSError):
            now = os.stat(path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                os.unlink(path)
    return mapping


def _views(buffer: Any, layout: Sequence[tuple[int, str, int]]) -> list[np.ndarray]:
    return [
        np.frombuffer(buffer, dtype=np.dtype(dtype), count=length, offset=offset)
        for offset, dtype, length in layout
    ]


def _reduce_shared(shared: SharedArrays) -> tuple[Any, ...]:
    return (SharedArrays.attach, (shared.ticket(),))


def register_shared(cls: type, reduce: Callable[[Any], tuple[Any, ...]]) -> None:
    """Make multiprocessing pickle ``cls`` with ``reduce``, a pickle that serves every process."""
    ForkingPickler.register(cls, reduce)
    _every_process.add(cls)


def serves_every_process(cls: type) -> bool:
    """Tell whether ``cls``'s multiprocessing pickle may go to any number of processes.

    It may go to them while its sender holds it: see the lifetime rule in the module docstring.
    """
    return cls in _every_process


register_shared(SharedArrays, _reduce_shared)
