"""NumPy buffers that reach other processes as the name of one shared-memory segment.

:class:`SharedArrays` is the storage of ``stoker.data``'s compact containers: a fixed tuple of
one-dimensional, read-only NumPy arrays. It travels three ways:

* to a **forked** worker, by inheritance: the arrays are a handful of Python objects over large
  buffers the worker only reads, so no page is copied;
* through **multiprocessing** (spawn and forkserver workers, ``multiprocessing`` queues, torch's
  loader): the first time a container is pickled by ``ForkingPickler``, its arrays move into one
  owned segment (:mod:`stoker.data._workers.shm`), the owner's arrays become read-only views on
  it, and the pickle carries only the segment's name, size and layout; the receiving process
  maps it read-only, without a copy, and pickling it on sends the same name;
* through a **plain** ``pickle.dumps`` (a file, a cache): as the arrays' bytes, which outlive
  any process.

A container type that holds a :class:`SharedArrays` registers its multiprocessing reduction
with :func:`register_shared`, which also tells the process pool that such a pickle serves every
worker (:func:`serves_every_process`), so a spawn pool still pickles its setup once.

The segment's name lives as long as the owner's :class:`SharedArrays`: it is unlinked when that
object is freed or the owner exits (a :func:`weakref.finalize`), by the owner only (a forked
child freeing its inherited copy leaves it alone). If the owner is killed, a worker of its
finds it gone and unlinks its owned names, and otherwise the next pool's sweep does.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any, NamedTuple

import numpy as np

from stoker.data._workers.shm import (
    SHM_DIR,
    create_segment,
    map_segment,
    segment_name,
    sweep_orphans,
)

__all__ = ["Handle", "SharedArrays", "register_shared", "serves_every_process"]

_ALIGN = 64
_serials = itertools.count()
_every_process: set[type] = set()


class Handle(NamedTuple):
    """What a multiprocessing pickle of :class:`SharedArrays` carries: a segment and a layout."""

    name: str
    size: int
    layout: tuple[tuple[int, str, int], ...]
    """``(offset, dtype, length)`` per array."""


def _unlink_if_owner(path: str, owner: int) -> None:
    if os.getpid() == owner:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


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
        """Move the arrays into an owned segment (once) and return its handle.

        Raises:
            SharedMemoryFullError: when ``/dev/shm`` has no room for the arrays.
        """
        with self._lock:
            if self._handle is not None:
                return self._handle
            layout = []
            offset = 0
            for array in self._arrays:
                layout.append((offset, array.dtype.str, int(array.size)))
                offset += -(-int(array.nbytes) // _ALIGN) * _ALIGN
            size = max(offset, _ALIGN)
            sweep_orphans()
            pid = os.getpid()
            name = segment_name(pid, pid, next(_serials))
            mapping = create_segment(name, size)
            weakref.finalize(self, _unlink_if_owner, os.path.join(SHM_DIR, name), pid)
            views = _views(mapping, layout)
            for view, array in zip(views, self._arrays, strict=True):
                view[...] = array
            self._arrays = tuple(_read_only(view) for view in views)
            self._handle = Handle(name, size, tuple(layout))
            return self._handle

    @classmethod
    def attach(cls, handle: Handle) -> SharedArrays:
        """Map the segment of ``handle`` (read-only, no copy) as a :class:`SharedArrays`."""
        mapping = map_segment(handle.name, handle.size, keep_name=True)
        shared = cls.__new__(cls)
        shared._arrays = tuple(_views(mapping, handle.layout))
        shared._handle = handle
        shared._lock = threading.Lock()
        return shared

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the arrays' bytes (multiprocessing pickles a handle instead)."""
        return (SharedArrays, (self._arrays,))


def _views(buffer: Any, layout: Sequence[tuple[int, str, int]]) -> list[np.ndarray]:
    return [
        np.frombuffer(buffer, dtype=np.dtype(dtype), count=length, offset=offset)
        for offset, dtype, length in layout
    ]


def _reduce_shared(shared: SharedArrays) -> tuple[Any, ...]:
    return (SharedArrays.attach, (shared.share(),))


def register_shared(cls: type, reduce: Callable[[Any], tuple[Any, ...]]) -> None:
    """Make multiprocessing pickle ``cls`` with ``reduce``, a pickle that serves every process."""
    ForkingPickler.register(cls, reduce)
    _every_process.add(cls)


def serves_every_process(cls: type) -> bool:
    """Tell whether ``cls``'s multiprocessing pickle may go to any number of processes."""
    return cls in _every_process


register_shared(SharedArrays, _reduce_shared)
