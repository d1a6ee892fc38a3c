"""Compact sequences of str and bytes: one NumPy byte buffer and int64 offsets, shareable.

A list of three million strings is three million Python objects, and a forked worker that reads
them writes each one's reference count, so the operating system copies every page holding them
into the worker: each process worker ends up with its own copy of the dataset (copy-on-write
turns into copy-on-read). :class:`StringSequence` and :class:`BytesSequence` hold the same items
in a few Python objects (two NumPy arrays and their memoryviews): item ``i`` is the bytes
``data[offsets[i]:offsets[i + 1]]``, decoded on access. Reading them writes no page of the
buffers, so forked workers share them with no copy, and spawn or forkserver workers get them
through one shared-memory segment (:mod:`stoker.data._workers`).

Both are drop-in read-only sequences (``collections.abc.Sequence``): ``len``, O(1) random
access with negative indices, iteration, slicing (a new container of the same type), ``in``,
``index`` and ``count``. :class:`CompactSequence` is what they share with
:class:`~stoker.data.RecordSequence`: indexing rules, slicing through :meth:`take`, equality,
repr and pickling.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, NoReturn, TypeVar, overload

import numpy as np

from stoker.data._workers import SharedArrays, register_shared

__all__ = ["BytesSequence", "CompactSequence", "StringSequence", "describe"]

_T = TypeVar("_T")
_C = TypeVar("_C", bound="CompactSequence[Any]")


def describe(value: object) -> str:
    """Spell ``value`` for an error message: its repr (shortened) and its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


class CompactSequence(Sequence[_T]):
    """What the compact containers share: indexing, slicing, equality, repr and pickling.

    A subclass keeps its arrays in one :class:`~stoker.data._workers.SharedArrays`
    (``self._shared``), builds its fast access paths from them in :meth:`_bind`, and
    implements :meth:`_item` (one item, ``index`` already an int) and :meth:`take`.
    """

    __slots__ = ("_len", "_shared")
    _kind: ClassVar[str] = "item"

    _shared: SharedArrays
    _len: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register_shared(cls, _share_and_reduce)

    def _bind(self) -> None:
        """Build the fast access paths from ``self._shared.arrays``."""
        raise NotImplementedError

    def _item(self, index: int) -> _T:
        raise NotImplementedError

    def take(self: _C, indices: Iterable[int]) -> _C:
        """Return a new container of the items at ``indices`` (ints, negative ones allowed).

        Raises:
            IndexError: naming the first index out of range.
        """
        raise NotImplementedError

    def _checked(self, indices: Iterable[int]) -> np.ndarray:
        """``indices`` as an int64 array of non-negative positions; IndexError if out of range."""
        positions = np.asarray(
            indices if isinstance(indices, (np.ndarray, range)) else list(indices)
        )
        if positions.size and not np.issubdtype(positions.dtype, np.integer):
            raise TypeError(
                f"{type(self).__name__}.take indices must be ints, got an array of "
                f"{positions.dtype}; pass ints (positions of {self._kind}s)"
            )
        positions = positions.astype(np.int64, copy=False).reshape(-1)
        bad = (positions < -self._len) | (positions >= self._len)
        if bad.any():
            self._out_of_range(int(positions[np.argmax(bad)]))
        return np.where(positions < 0, positions + self._len, positions)

    def _out_of_range(self, index: int) -> None:
        raise IndexError(
            f"{type(self).__name__} index out of range: index must be in "
            f"[-{self._len}, {self._len}) for {self._len} {self._kind}s, got {index!r}"
        )

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self: _C, index: slice) -> _C: ...

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.take(range(self._len)[index])
        try:
            position = operator.index(index)
        except TypeError:
            raise TypeError(
                f"{type(self).__name__} indices must be integers or slices, got {describe(index)}"
            ) from None
        if position < 0:
            position += self._len
        if not 0 <= position < self._len:
            self._out_of_range(operator.index(index))
        return self._item(position)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = self._shared.arrays, other._shared.arrays
        return self._len == len(other) and all(
            a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        """Bytes of the NumPy buffers behind the container."""
        return self._shared.nbytes

    def __repr__(self) -> str:
        shown = ", ".join(repr(self._item(i)) for i in range(min(self._len, 3)))
        more = ", ..." if self._len > 3 else ""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}([{shown}{more}]; "
            f"{self._len} {self._kind}s in {self.nbytes} bytes)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._shared, self._len, self._state()))

    def _state(self) -> Any:
        """What besides the arrays a pickle needs (the record keys and kinds)."""
        return None

    def _restore(self, state: Any) -> None:
        """Set what :meth:`_state` returned."""

    def _share(self) -> None:
        """Move the arrays into shared memory (once) and rebind the access paths to it."""
        self._shared.share()
        self._bind()


def _rebuild(cls: type[_C], shared: SharedArrays, length: int, state: Any) -> _C:
    obj = cls.__new__(cls)
    obj._shared = shared
    obj._len = length
    obj._restore(state)
    obj._bind()
    return obj


def _share_and_reduce(obj: CompactSequence[Any]) -> tuple[Any, ...]:
    obj._share()
    return obj.__reduce__()


class _Buffers(CompactSequence[_T]):
    """One byte buffer and ``len + 1`` int64 offsets; subclasses decode one item."""

    __slots__ = ("_data", "_ends", "_starts")
    _item_types: ClassVar[tuple[type, ...]]
    _fix: ClassVar[str]

    def __init__(self, items: Iterable[_T] = ()) -> None:
        """Copy ``items`` into one buffer (see the class docstring)."""
        raw = items if isinstance(items, (list, tuple)) else list(items)
        try:
            encoded = self._encode_all(raw)
        except TypeError:
            self._reject(raw)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        self._init_arrays(data, offsets)

    def _init_arrays(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self._shared = SharedArrays([data, offsets])
        self._len = len(offsets) - 1
        self._bind()

    @classmethod
    def from_arrays(cls: type[_C], data: np.ndarray, offsets: np.ndarray) -> _C:
        """Make a container from its buffers: item ``i`` is ``data[offsets[i]:offsets[i+1]]``.

        Args:
            data: a one-dimensional uint8 array.
            offsets: ``len + 1`` non-decreasing int64 positions in ``data``, the first 0 and
                the last ``len(data)``.

        Raises:
            ValueError: naming the first offset that breaks these rules.
        """
        data = np.asarray(data)
        offsets = np.asarray(offsets)
        if data.ndim != 1 or data.dtype != np.uint8:
            raise ValueError(
                f"data must be a one-dimensional uint8 array, got shape {data.shape} and dtype "
                f"{data.dtype}"
            )
        if offsets.ndim != 1 or not offsets.size or not np.issubdtype(offsets.dtype, np.integer):
            raise ValueError(
                f"offsets must be a non-empty one-dimensional int array, got shape "
                f"{offsets.shape} and dtype {offsets.dtype}"
            )
        offsets = offsets.astype(np.int64, copy=False)
        steps = np.diff(offsets)
        if offsets[0] != 0 or offsets[-1] != data.size or (steps < 0).any():
            where = 0 if offsets[0] != 0 else len(offsets) - 1
            if (steps < 0).any():
                where = int(np.argmax(steps < 0)) + 1
            raise ValueError(
                f"offsets must rise from 0 to len(data)={data.size} without going down, got "
                f"offsets[{where}]={int(offsets[where])}"
            )
        obj = cls.__new__(cls)
        obj._init_arrays(data, offsets)  # type: ignore[attr-defined]
        return obj

    @property
    def data(self) -> np.ndarray:
        """The byte buffer (read-only uint8)."""
        return self._shared.arrays[0]

    @property
    def offsets(self) -> np.ndarray:
        """Where each item starts in :attr:`data`, and the end (read-only int64, ``len + 1``)."""
        return self._shared.arrays[1]

    def _bind(self) -> None:
        data, offsets = self._shared.arrays
        self._data = data.data
        every = offsets.data
        self._starts = every[:-1]
        self._ends = every[1:]

    def take(self: _C, indices: Iterable[int]) -> _C:
        positions = self._checked(indices)
        data, offsets = self._shared.arrays
        starts = offsets[positions]
        lengths = offsets[positions + 1] - starts
        new_offsets = np.zeros(len(positions) + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        gather = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
        return type(self).from_arrays(data[gather], new_offsets)  # type: ignore[attr-defined, no-any-return]

    def _encode_all(self, items: Sequence[Any]) -> list[bytes]:
        raise NotImplementedError

    def _reject(self, items: Sequence[Any]) -> NoReturn:
        """Raise TypeError naming the first item this container cannot hold."""
        types = self._item_types
        number, item = next((n, x) for n, x in enumerate(items) if not isinstance(x, types))
        raise TypeError(
            f"{type(self).__name__} items must be {types[0].__name__}, got {describe(item)} "
            f"at index {number}; {self._fix}"
        )


class StringSequence(_Buffers[str]):
    """A read-only sequence of str in one UTF-8 buffer, shared with workers without a copy.

    ``StringSequence(items)`` copies ``items`` (an iterable of ``str``) into one NumPy byte
    buffer and int64 offsets; ``seq[i]`` decodes item ``i`` into a new ``str``. See
    docs/design/containers.md.

    Args:
        items: the strings (any ``str``; lone surrogates survive the round trip).

    Raises:
        TypeError: naming the first item that is not a ``str``.
    """

    __slots__ = ()
    _kind = "string"
    _item_types = (str,)
    _fix = "a StringSequence holds only str (use BytesSequence for bytes)"

    def _encode_all(self, items: Sequence[Any]) -> list[bytes]:
        if not all(isinstance(item, str) for item in items):
            raise TypeError(self._fix)
        return [item.encode("utf-8", "surrogatepass") for item in items]

    def _item(self, index: int) -> str:
        return str(self._data[self._starts[index] : self._ends[index]], "utf-8", "surrogatepass")

    def __getitem__(self, index: Any) -> Any:
        try:  # the memoryviews check the range and take negative indices themselves
            return str(
                self._data[self._starts[index] : self._ends[index]], "utf-8", "surrogatepass"
            )
        except (IndexError, TypeError):  # out of range, a slice, not an index
            return super().__getitem__(index)

    def __iter__(self) -> Iterator[str]:
        data = self._data
        for start, end in zip(self._starts, self._ends, strict=True):
            yield str(data[start:end], "utf-8", "surrogatepass")


class BytesSequence(_Buffers[bytes]):
    """A read-only sequence of bytes in one buffer, shared with workers without a copy.

    ``BytesSequence(items)`` copies ``items`` (an iterable of ``bytes`` or ``bytearray``) into
    one NumPy byte buffer and int64 offsets; ``seq[i]`` returns item ``i`` as a new ``bytes``.

    Args:
        items: the byte strings.

    Raises:
        TypeError: naming the first item that is not ``bytes`` or ``bytearray``.
    """

    __slots__ = ()
    _kind = "bytes item"
    _item_types = (bytes, bytearray)
    _fix = "a BytesSequence holds only bytes (use StringSequence for str)"

    def _encode_all(self, items: Sequence[Any]) -> list[bytes]:
        if not all(isinstance(item, (bytes, bytearray)) for item in items):
            raise TypeError(self._fix)
        return [bytes(item) for item in items]

    def _item(self, index: int) -> bytes:
        return self._data[self._starts[index] : self._ends[index]].tobytes()

    def __getitem__(self, index: Any) -> Any:
        try:  # the memoryviews check the range and take negative indices themselves
            return self._data[self._starts[index] : self._ends[index]].tobytes()
        except (IndexError, TypeError):  # out of range, a slice, not an index
            return super().__getitem__(index)

    def __iter__(self) -> Iterator[bytes]:
        data = self._data
        for start, end in zip(self._starts, self._ends, strict=True):
            yield data[start:end].tobytes()
