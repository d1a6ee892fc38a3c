"""RecordSequence (columns for flat dicts with the same keys) and compact(), which picks one.

A list of three million small dicts is tens of millions of Python objects (each dict, its
values, its keys' slots), and forked workers copy every page of them as they read (see
:mod:`stoker.data._containers.compact`). :class:`RecordSequence` stores the same records by
column: a NumPy array per numeric key (bool, int64, float64) and a
:class:`~stoker.data.StringSequence` or :class:`~stoker.data.BytesSequence` per str or bytes
key; ``records[i]`` builds a fresh dict. :func:`compact` turns a list into whichever container
holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from stoker.data._containers.compact import BytesSequence, CompactSequence, StringSequence, describe
from stoker.data._workers import SharedArrays

__all__ = ["RecordSequence", "compact"]

_NUMERIC = {"bool": np.bool_, "int": np.int64, "float": np.float64}
_HOLDS = "bool, int, float (Python or NumPy scalars), str and bytes"


def _kind(value: object) -> str | None:
    """The column kind that holds ``value``, or None."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return None


def _column(kind: str, values: list[Any], place: str) -> Any:
    """The container for ``values`` of ``kind``; ``place`` says where value ``{}`` is."""
    if kind == "str":
        return StringSequence(values)
    if kind == "bytes":
        return BytesSequence(values)
    try:
        return np.array(values, dtype=_NUMERIC[kind])
    except OverflowError:
        number = next(n for n, v in enumerate(values) if not -(2**63) <= v < 2**63)
        raise ValueError(
            f"int values must fit in int64, got {values[number]!r} {place.format(number)}; "
            "store it as a str or a float"
        ) from None


def _mixed(values: list[Any], key: str, kind: str | None) -> NoReturn:
    first = values[0]
    number = next(n for n, v in enumerate(values) if kind is None or _kind(v) != kind)
    value = values[number]
    if kind is None or _kind(value) is None:
        raise TypeError(
            f"RecordSequence values must be {_HOLDS}, got {describe(value)} for key {key!r} in "
            f"record {number}; flatten it into keys of those kinds"
        )
    raise TypeError(
        f"RecordSequence values of one key must be of one kind, got {describe(value)} for key "
        f"{key!r} in record {number} after {describe(first)} in record 0; convert them to "
        "one kind first (e.g. float(x) for every value)"
    )


class RecordSequence(CompactSequence[dict[str, Any]]):
    """A read-only sequence of flat dicts with the same keys, stored by column.

    Numeric values become one NumPy array per key (bool, int64, float64), str and bytes values
    one :class:`~stoker.data.StringSequence` or :class:`~stoker.data.BytesSequence` per key.
    ``records[i]`` returns a new dict (Python values, keys in the first record's order) equal to
    the record given. Shared with workers without a copy, like the other compact containers.

    Args:
        records: dicts (or other mappings) with the same str keys; the values of one key are
            all of one kind: bool, int (within int64), float, str or bytes.

    Raises:
        TypeError: naming the first record that is not a mapping, or the first value of a
            kind the column cannot hold.
        ValueError: naming the first record whose keys differ from the first record's, or an
            int outside int64.
    """

    __slots__ = ("_getters", "_keys", "_kinds", "_texts")
    _kind = "record"

    def __init__(self, records: Iterable[Mapping[str, Any]] = ()) -> None:
        """Store ``records`` by column (see the class docstring)."""
        rows = records if isinstance(records, (list, tuple)) else list(records)
        for number, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise TypeError(
                    f"RecordSequence records must be dicts, got {describe(row)} at index "
                    f"{number}; pass a sequence of flat dicts with the same keys"
                )
        keys = tuple(rows[0]) if rows else ()
        width = len(keys)
        if not all(len(row) == width for row in rows):
            self._bad_keys(rows, keys)
        numeric: list[np.ndarray] = []
        texts: list[CompactSequence[Any]] = []
        kinds: list[str] = []
        for key in keys:
            try:
                values = [row[key] for row in rows]
            except KeyError:
                self._bad_keys(rows, keys)
            kind = _kind(values[0])
            if kind is None or {_kind(v) for v in values} != {kind}:
                _mixed(values, key, kind)
            kinds.append(kind)
            column = _column(kind, values, f"for key {key!r} in record {{}}")
            (texts if kind in ("str", "bytes") else numeric).append(column)
        self._keys = keys
        self._kinds = tuple(kinds)
        self._texts = tuple(texts)
        self._len = len(rows)
        self._shared = SharedArrays(numeric)
        self._bind()

    @staticmethod
    def _bad_keys(rows: Sequence[Mapping[str, Any]], keys: tuple[str, ...]) -> NoReturn:
        wanted = set(keys)
        number = next(n for n, row in enumerate(rows) if set(row) != wanted)
        raise ValueError(
            f"RecordSequence records must all have the keys of record 0 {sorted(wanted)!r}, "
            f"got {sorted(rows[number])!r} in record {number}; give every record the same keys"
        )

    @property
    def keys(self) -> tuple[str, ...]:
        """The records' keys, in the first record's order."""
        return self._keys

    def column(self, key: str) -> Any:
        """Return the column of ``key``: a NumPy array, a StringSequence or a BytesSequence.

        Raises:
            KeyError: naming the key and the keys there are.
        """
        if key not in self._keys:
            raise KeyError(f"RecordSequence has no key {key!r}; its keys are {list(self._keys)}")
        return dict(self._columns())[key]

    def _columns(self) -> Iterator[tuple[str, Any]]:
        numeric = iter(self._shared.arrays)
        texts = iter(self._texts)
        for key, kind in zip(self._keys, self._kinds, strict=True):
            yield key, next(texts) if kind in ("str", "bytes") else next(numeric)

    def _bind(self) -> None:
        self._getters = tuple(
            (key, column if isinstance(column, CompactSequence) else column.data)
            for key, column in self._columns()
        )

    def _item(self, index: int) -> dict[str, Any]:
        return {key: column[index] for key, column in self._getters}

    def __getitem__(self, index: Any) -> Any:
        if type(index) is int and self._getters:
            try:  # memoryviews and sequences check the range and take negative indices
                return {key: column[index] for key, column in self._getters}
            except IndexError:
                pass
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        getters = self._getters
        for index in range(self._len):
            yield {key: column[index] for key, column in getters}

    def take(self, indices: Iterable[int]) -> RecordSequence:
        positions = self._checked(indices)
        obj = RecordSequence.__new__(RecordSequence)
        obj._keys, obj._kinds, obj._len = self._keys, self._kinds, len(positions)
        obj._texts = tuple(text.take(positions) for text in self._texts)
        obj._shared = SharedArrays([array[positions] for array in self._shared.arrays])
        obj._bind()
        return obj

    def __eq__(self, other: object) -> bool:
        if type(other) is not RecordSequence:
            return NotImplemented
        if self._len != other._len or set(self._keys) != set(other._keys):
            return False
        theirs = dict(other._columns())
        for key, column in self._columns():
            if isinstance(column, CompactSequence):
                if column != theirs[key]:
                    return False
            elif (
                not isinstance(theirs[key], np.ndarray)
                or column.dtype != theirs[key].dtype
                or not np.array_equal(column, theirs[key], equal_nan=column.dtype.kind == "f")
            ):
                return False
        return True

    __hash__ = None

    @property
    def nbytes(self) -> int:
        """Bytes of the NumPy buffers behind the records (every column)."""
        return self._shared.nbytes + sum(text.nbytes for text in self._texts)

    def _state(self) -> Any:
        return (self._keys, self._kinds, self._texts)

    def _restore(self, state: Any) -> None:
        self._keys, self._kinds, self._texts = state


def compact(items: Any) -> Any:
    """Return ``items`` in the compact container that holds them, shareable without copies.

    A sequence of str becomes a :class:`StringSequence`, of bytes a :class:`BytesSequence`, of
    flat dicts a :class:`RecordSequence`, of bools, ints or floats a NumPy array (bool, int64 or
    float64). A compact container or a NumPy array is returned as it is. Every element must be
    of one kind.

    Args:
        items: a list, tuple or other sequence.

    Raises:
        TypeError: naming the first element the container cannot hold (or of another kind than
            the first), or when ``items`` is not a sequence.
        ValueError: when ``items`` is empty (there is no kind to pick).
    """
    if isinstance(items, (CompactSequence, np.ndarray)):
        return items
    if isinstance(items, (str, bytes, bytearray, Mapping)) or not isinstance(items, Sequence):
        raise TypeError(
            f"compact() needs a sequence (a list or tuple) of elements, got {describe(items)}; "
            "pass a list of str, bytes, numbers or flat dicts"
        )
    if not items:
        raise ValueError(
            "compact() needs at least one element to pick a container, got an empty sequence; "
            "build the container directly (StringSequence([]), RecordSequence([]), ...)"
        )
    first = items[0]
    kind = "dict" if isinstance(first, Mapping) else _kind(first)
    if kind is None:
        raise TypeError(
            f"compact() cannot hold element 0: {describe(first)}; it holds str, bytes, numbers "
            "(bool, int, float) and flat dicts of those"
        )
    for number, item in enumerate(items):
        found = "dict" if isinstance(item, Mapping) else _kind(item)
        if found != kind:
            raise TypeError(
                f"compact() needs elements of one kind, got {describe(item)} at index {number} "
                f"after {describe(first)} at index 0; convert them to one kind first"
            )
    if kind == "dict":
        return RecordSequence(items)
    return _column(kind, list(items), "at index {}")
