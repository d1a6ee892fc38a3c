"""Batch slabs: a worker collates into reusable shared memory; the main process maps views.

Each process worker owns a pool of *slabs*, one shared-memory segment each (see
:mod:`stoker.data._workers.shm`). How a batch travels is chosen per batch by the bytes of its
NumPy arrays and plain CPU torch tensors (see :func:`stoker._torch.slab_dtype`):

* **small** (under :data:`SLAB_THRESHOLD` bytes of arrays in all): the reply is pickled and
  its bytes go through the worker's result pipe, as with no slabs at all;
* **large**: the worker collates straight into a free slab (``default_collate`` stacks each
  array leaf into slab memory with :func:`~stoker.data._collate.stack_arrays`, and each tensor
  leaf with ``torch.stack(..., out=)`` on it; a custom ``collate_fn``'s arrays and tensors are
  copied in once), and the reply is pickled with every such leaf replaced by a *persistent id*
  ``(kind, slab, name, size, offset, dtype, shape)``, kind ``"a"`` for an array and ``"t"`` for
  a tensor. Only that small descriptor (plus the batch's other leaves) crosses the pipe.

In the main process :class:`SlabReader` unpickles the reply; each persistent id becomes a NumPy
view on the slab's mapping, or for ``"t"`` a tensor on that view (``torch.from_numpy``), with
no copy; other tensors travel by torch's own reductions, as in torch. All views of one batch
share one base buffer object, and a :func:`weakref.finalize` on it puts the slab id on a
release queue once the last view is freed; the next task sent to that worker carries the
released ids (``Task.released``), and the worker puts them back on its *free list*, a stack:
the slab freed last is reused first. A released slab of :data:`DROP_PAGES_FROM` bytes or more
leaves the main process's resident memory (``madvise(MADV_DONTNEED)`` on its mapping: the data
stays in the segment, and reading a batch in it later maps the pages back) at once when its
worker's batches come slowly enough that mapping the pages back costs little
(:data:`DROP_SHARE`), and otherwise once the worker has not filled it again after
:data:`IDLE_BATCHES` more of its batches. So in a fast pipeline the main process's RSS holds the
slabs it cycles through (pages it shares with the workers: one copy of memory, counted in both
processes' RSS), and never the ones left over once the user freed batches it had held.
Dropping every slab at its release cost more than its copy in a fast pipeline: the pages came
back, 16 at a time, when the next batch in it was read, and a consumer reading its batches got
them markedly slower (``benchmarks/loader_bench.py --copy-split``; the figures are in
docs/design/shared_memory.md).

When the user keeps batches alive, the free list is empty
and the worker creates another slab: the pool grows to what the user holds.

The slab size rule: all of a worker's slabs have one size. The first large batch sets it to its
array bytes plus an eighth plus 4 KiB, rounded up to 64 KiB. A batch whose arrays do not fit
sends its overflowing arrays inline this once, and the size becomes what that batch needed plus
an eighth, rounded up to 64 KiB; smaller slabs are then *retired* as they come back (the reply's
``Meta.retired`` tells the main process to drop its mapping). When batches shrink below a
quarter of the threshold, the worker goes back to sending them inline. Each new slab size also
sets how much freed heap the worker keeps for its next batch's samples
(:func:`~stoker.data._workers.heap.keep_heap`). The threshold comes from
``benchmarks/loader_bench.py --transport`` on a 2-core machine.
"""

from __future__ import annotations

import ctypes
import io
import mmap
import os
import pickle
import time
import weakref
from collections import deque
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from stoker import _torch
from stoker.data._collate import (
    TorchTensor,
    collate,
    collate_tensor_fn,
    default_collate_fn_map,
    stack_arrays,
)
from stoker.data._workers.heap import keep_heap
from stoker.data._workers.protocol import BATCH, Reply
from stoker.data._workers.shm import (
    SHM_DIR,
    create_segment,
    map_segment,
    next_serial,
    segment_name,
)

__all__ = [
    "DROP_PAGES_FROM",
    "DROP_SHARE",
    "IDLE_BATCHES",
    "REFAULT_SECONDS_PER_BYTE",
    "SLAB_THRESHOLD",
    "SlabReader",
    "SlabWriter",
    "array_bytes",
]

SLAB_THRESHOLD = 32 * 1024
"""Array bytes in a batch from which it travels in a slab instead of the pipe."""

DROP_PAGES_FROM = 2 << 20
"""Slab bytes from which the main process drops its pages of a freed slab (idle, or in a slow
pipeline at once)."""

REFAULT_SECONDS_PER_BYTE = 1e-10
"""What dropping a slab's pages here costs, per byte: the ``madvise`` and the page faults that
map them back when the next batch there is read (1.0 ms for 9.6 MB on the 2-core development
machine, ``benchmarks/loader_bench.py --copy-split``)."""

DROP_SHARE = 0.02
"""A freed large slab's pages are dropped at once when that costs under this share of the
time between two of its worker's batches (a slow pipeline: 38 MB batches of decoded JPEGs)."""

IDLE_BATCHES = 8
"""A freed slab the worker has not written again after this many of its batches is idle.

In a steady pipeline the worker fills the slab freed last with its next batch (its free list
is a stack), so a slab that sits out 8 batches is one the pipeline no longer needs.
"""

_SLAB_MARK = b"S"  # inline pickles start with the PROTO opcode, 0x80
_ALIGN = 64
_GRANULE = 1 << 16
_NUMERIC = frozenset("biufcmM")


def _round_up(size: int, granule: int) -> int:
    return -(-size // granule) * granule


def array_bytes(obj: Any, depth: int = 0) -> int:
    """Estimate the bytes of the NumPy arrays and plain CPU tensors in a batch.

    Containers are looked into up to 4 levels deep; a list longer than 64 is counted as if the
    rest were like its first 64.
    """
    if type(obj) is np.ndarray:
        return int(obj.nbytes)
    if depth > 4:
        return 0
    dtype = _torch.slab_dtype(obj)
    if dtype is not None:
        return int(obj.numel()) * dtype.itemsize
    if isinstance(obj, dict):
        return sum(array_bytes(value, depth + 1) for value in obj.values())
    if isinstance(obj, (list, tuple)) and obj and not isinstance(obj[0], (str, bytes)):
        seen = sum(array_bytes(value, depth + 1) for value in obj[:64])
        return seen if len(obj) <= 64 else seen * len(obj) // 64  # the rest like the first 64
    return 0


class _Slab:
    __slots__ = ("announced", "array", "id", "mapping", "name", "size")

    def __init__(self, slab_id: int, name: str, size: int, mapping: mmap.mmap) -> None:
        self.id = slab_id
        self.name = name
        self.size = size
        self.mapping = mapping
        self.array: np.ndarray[Any, np.dtype[np.uint8]] = np.frombuffer(mapping, dtype=np.uint8)
        self.announced = False


class SlabWriter:
    """The worker side: owns the slabs, places arrays in them, pickles replies."""

    def __init__(
        self, main_pid: int, threshold: int | None = None, directory: str = SHM_DIR
    ) -> None:
        """Create an empty pool for a worker of main process ``main_pid``.

        Args:
            main_pid: the main process's pid (part of every segment name).
            threshold: array bytes from which batches use slabs (default
                :data:`SLAB_THRESHOLD`).
            directory: where segments are created.
        """
        self.main_pid = main_pid
        self.threshold = SLAB_THRESHOLD if threshold is None else threshold
        self.directory = directory
        self.slabs: dict[int, _Slab] = {}
        self.free: list[int] = []
        self.slab_size = 0
        self.large = False
        self._serial = 0
        self._current: _Slab | None = None
        self._offset = 0
        self._placed: dict[int, tuple[int, np.ndarray[Any, Any]]] = {}
        self._needed = 0
        self._share = 1.0
        self._share_size = 0
        self._retired: list[int] = []
        self._fn_map = {
            **default_collate_fn_map,
            np.ndarray: self._stack,
            TorchTensor: self._stack_tensors,
        }

    # -- slab bookkeeping ------------------------------------------------------------------
    def release(self, slab_ids: Sequence[int]) -> None:
        """Take back slabs the main process no longer uses (retire those that are too small)."""
        for slab_id in slab_ids:
            slab = self.slabs.get(slab_id)
            if slab is None:
                continue
            if slab.size < self.slab_size:
                del self.slabs[slab_id]
                self._retired.append(slab_id)
            else:
                self.free.append(slab_id)

    def _acquire(self) -> _Slab:
        while self.free:
            slab = self.slabs[self.free.pop()]
            if slab.size >= self.slab_size:
                return slab
            del self.slabs[slab.id]
            self._retired.append(slab.id)
        size = self.slab_size
        if self._share > 1.0 and self._share_size:
            # A share of a split first batch: a segment just for it (retired when it comes
            # back, being smaller than the whole batch's slab size), so that the share does
            # not wait for a whole batch's worth of memory to be allocated and zeroed.
            size = min(size, self._share_size)
        self._serial += 1
        name = segment_name(self.main_pid, os.getpid(), next_serial())
        mapping = create_segment(name, size, self.directory)
        slab = _Slab(self._serial, name, size, mapping)
        self.slabs[slab.id] = slab
        return slab

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any] | None:
        """Return an uninitialised array in the current slab, or None (small batch, no room)."""
        if not self.large:
            return None
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        start = _round_up(self._offset, _ALIGN)
        self._needed = max(self._needed, start) + nbytes
        if nbytes == 0:
            return None
        if self._current is None:
            if self.slab_size == 0:
                return None
            self._current = self._acquire()
        if start + nbytes > self._current.size:
            return None
        view = self._current.array[start : start + nbytes].view(dtype).reshape(shape)
        self._offset = start + nbytes
        self._placed[id(view)] = (start, view)
        return view

    def _stack(self, batch: Sequence[Any], *, collate_fn_map: Any = None) -> Any:
        first = batch[0]
        dtype = first.dtype
        if self.large and dtype.kind in _NUMERIC and dtype.isbuiltin:
            shape = first.shape
            if all(type(item) is np.ndarray and item.dtype is dtype for item in batch):
                out = self.alloc((len(batch), *shape), dtype)
                if out is not None:
                    return stack_arrays(batch, out=out)
        return stack_arrays(batch)

    def _stack_tensors(self, batch: Sequence[Any], *, collate_fn_map: Any = None) -> Any:
        """Stack plain CPU tensors of one dtype and shape into the slab (else as torch does)."""
        first = batch[0]
        dtype = _torch.slab_dtype(first) if self.large else None
        if dtype is not None:
            shape = tuple(first.shape)
            if all(
                _torch.slab_dtype(item) is dtype and tuple(item.shape) == shape for item in batch
            ):
                out = self.alloc((len(batch), *shape), dtype)
                if out is not None:
                    stacked = _torch.stack_into(batch, out)
                    self._placed[id(stacked)] = (self._placed.pop(id(out))[0], stacked)
                    return stacked
        return collate_tensor_fn(batch)

    def expect_share(self, samples: int, whole: int) -> None:
        """Size slabs for the next reply as if it held ``whole`` samples, not ``samples``.

        A share of a split batch (``Task.whole``) must not set the slab size to a fraction of
        what the worker's later full batches need (they would overflow and resize once).
        """
        self._share = whole / max(samples, 1)

    def collate(self, batch: Sequence[Any]) -> Any:
        """``default_collate`` that stacks array leaves straight into the current slab.

        Until batches are known to be large, the first sample's arrays times the batch's length
        decide it before collating: a worker's first large batch is stacked into its slab once,
        rather than into private memory and then copied into a new slab.
        """
        if not self.large and batch:
            self._turns_large(array_bytes(batch[0], 1) * len(batch))
        return collate(batch, collate_fn_map=self._fn_map)

    # -- pickling -----------------------------------------------------------------------------
    def _persistent_id(self, obj: Any) -> Any:
        if type(obj) is np.ndarray:
            kind, dtype = "a", obj.dtype
            if dtype.kind not in _NUMERIC or not dtype.isbuiltin:
                return None
        else:
            tensor_dtype = _torch.slab_dtype(obj)
            if tensor_dtype is None:
                return None
            kind, dtype = "t", tensor_dtype
        shape = tuple(obj.shape)
        entry = self._placed.get(id(obj))
        if entry is not None and entry[1] is obj:
            offset = entry[0]
        else:
            view = self.alloc(shape, dtype)
            if view is None:
                return None
            if kind == "a":
                np.copyto(view, obj)
            else:
                _torch.copy_into(obj, view)
            offset = self._placed[id(view)][0]
        slab = self._current
        if slab is None:  # pragma: no cover - alloc always sets it
            return None
        name = None if slab.announced else slab.name
        return (kind, slab.id, name, slab.size, offset, dtype.str, shape)

    def encode(self, reply: Reply) -> bytes | memoryview:
        """Pickle ``reply`` for the pipe, moving a large batch's arrays into a slab.

        Slabs retired since the last reply ride along in ``Meta.retired``; a reply that fails
        to pickle leaves them for the next one.
        """
        retired = self._retired
        if retired:
            self._retired = []
            reply = reply._replace(meta=reply.meta._replace(retired=tuple(retired)))
        try:
            if reply.status is not BATCH:
                return ForkingPickler.dumps(reply)
            if self.large or self._turns_large(array_bytes(reply.payload, 0)):
                return self._encode_large(reply)
            return ForkingPickler.dumps(reply)
        except BaseException:
            self._retired = retired + self._retired  # not sent: the next reply carries them
            raise
        finally:
            self._finish_batch()

    def _turns_large(self, own: int) -> bool:
        """Switch to slab mode when a batch of ``own`` array bytes reaches the threshold.

        Say whether it did.
        """
        size = int(own * self._share)
        if size < self.threshold:
            return False
        self._share_size = _round_up(own * 9 // 8 + 4096, _GRANULE)
        self.large = True
        self.slab_size = max(self.slab_size, _round_up(size * 9 // 8 + 4096, _GRANULE))
        keep_heap(self.slab_size)
        return True

    def _encode_large(self, reply: Reply) -> bytes | memoryview:
        buffer = io.BytesIO()
        buffer.write(_SLAB_MARK)
        pickler = ForkingPickler(buffer, pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = self._persistent_id  # type: ignore[method-assign]
        pickler.dump(reply)
        slab = self._current
        if slab is not None:
            slab.announced = True
            self._current = None  # in use until the main process releases it
        needed = int(self._needed * self._share)
        if needed > self.slab_size:
            self.slab_size = _round_up(needed * 9 // 8, _GRANULE)
            keep_heap(self.slab_size)
        elif needed * 4 < self.threshold:
            self.large = False
        return buffer.getbuffer()

    def _finish_batch(self) -> None:
        if self._current is not None:  # a failed fetch or send: the slab was never handed out
            self.free.append(self._current.id)
            self._current = None
        self._placed.clear()
        self._offset = 0
        self._needed = 0
        self._share = 1.0

    def close(self) -> None:
        """Drop this worker's mappings (the memory goes once the main process drops its own)."""
        self.slabs.clear()
        self.free.clear()


class SlabReader:
    """The main side for one worker: maps its slabs, unpickles replies into views."""

    def __init__(self) -> None:
        """Start with no slab mapped."""
        self.released: deque[int] = deque()
        self.in_use: set[int] = set()
        self.bytes_in_slabs = 0
        self._mappings: dict[int, tuple[mmap.mmap, type[ctypes.Array[ctypes.c_char]]]] = {}
        self._bases: dict[int, Any] = {}
        self._batches = 0  # replies decoded that carried a slab
        self._resident: dict[int, int] = {}  # freed large slab -> self._batches at its release
        self._last_batch: float | None = None  # time.monotonic() of the last such reply
        self._interval: float | None = None  # their smoothed interval, seconds

    def _release(self, slab_id: int) -> None:
        self.in_use.discard(slab_id)
        self.released.append(slab_id)
        known = self._mappings.get(slab_id)
        if known is None or len(known[0]) < DROP_PAGES_FROM:
            return
        interval = self._interval
        if interval is not None and len(known[0]) * REFAULT_SECONDS_PER_BYTE < (
            DROP_SHARE * interval
        ):
            known[0].madvise(mmap.MADV_DONTNEED)  # a slow pipeline: the pages can go now
        else:
            self._resident[slab_id] = self._batches

    def _drop_idle(self) -> None:
        """Drop this process's pages of the freed slabs left idle (see the module docstring)."""
        oldest = self._batches - IDLE_BATCHES
        for slab_id, released_at in list(self._resident.items()):
            if released_at < oldest:
                del self._resident[slab_id]
                known = self._mappings.get(slab_id)
                if known is not None:  # the data stays in the segment; a read maps it back
                    known[0].madvise(mmap.MADV_DONTNEED)

    def batch_memory(self) -> int:
        """Bytes of the worker's private memory that may serve its batches, not copies.

        Its slabs but those holding a batch alive in this process (every slab it has sent is
        mapped here; a freed slab's pages are the worker's alone once this process has
        dropped them or never read them, and counted as such while this process may still
        hold them, so that the figure is an upper bound), plus twice the largest slab: one
        being written and not yet announced, and the free heap the worker keeps beyond its
        first batch's
        (:func:`~stoker.data._workers.heap.keep_heap`). 0 before any slab.
        """
        sizes = [len(mapping) for mapping, _ in self._mappings.values()]
        if not sizes:
            return 0
        private = sum(
            len(mapping)
            for slab_id, (mapping, _) in self._mappings.items()
            if slab_id not in self.in_use
        )
        return private + 2 * max(sizes)

    def take_released(self) -> tuple[int, ...]:
        """Return and forget the ids of slabs freed since the last call."""
        released = self.released
        return tuple(released.popleft() for _ in range(len(released)))

    def _persistent_load(self, pid: Any) -> Any:
        kind, slab_id, name, size, offset, dtype_str, shape = pid
        base = self._bases.get(slab_id)
        if base is None:
            known = self._mappings.get(slab_id)
            if known is None:
                if name is None:
                    raise RuntimeError(f"worker sent slab {slab_id} before announcing it")
                mapping = map_segment(name, size)
                buffer_type = type("SlabBuffer", (ctypes.c_char * size,), {})
                known = (mapping, buffer_type)
                self._mappings[slab_id] = known
            base = known[1].from_buffer(known[0])
            self._bases[slab_id] = base
            finalizer = weakref.finalize(base, self._release, slab_id)
            finalizer.atexit = False
            self.in_use.add(slab_id)
            self._resident.pop(slab_id, None)
        dtype = np.dtype(dtype_str)
        count = 1
        for extent in shape:
            count *= extent
        self.bytes_in_slabs += count * dtype.itemsize
        view = np.frombuffer(base, dtype=dtype, count=count, offset=offset)  # type: ignore[arg-type]
        if kind == "t":  # a tensor on the slab's memory; it keeps the view, the view the slab
            return _torch.from_numpy(view.reshape(shape))
        return view.reshape(shape)

    def decode(self, data: bytes | memoryview) -> Reply:
        """Unpickle one reply from the worker, mapping slab arrays as views."""
        if data[0] != _SLAB_MARK[0]:
            reply: Reply = pickle.loads(data)
        else:
            stream = io.BytesIO(data)
            stream.seek(1)
            unpickler = pickle.Unpickler(stream)
            unpickler.persistent_load = self._persistent_load  # type: ignore[method-assign]
            try:
                reply = unpickler.load()
            finally:
                self._bases.clear()
            self._batches += 1
            now = time.monotonic()
            if self._last_batch is not None:
                gap = now - self._last_batch
                self._interval = gap if self._interval is None else 0.8 * self._interval + 0.2 * gap
            self._last_batch = now
            if self._resident:
                self._drop_idle()
        retired = reply.meta.retired
        if retired:
            for slab_id in retired:
                self._mappings.pop(slab_id, None)
                self._resident.pop(slab_id, None)
        return reply

    def close(self) -> None:
        """Forget every mapping (live batches keep theirs until freed)."""
        self._mappings.clear()
