"""Samplers: the orders in which a loader visits dataset indices, and their batching.

Semantics follow ``torch.utils.data.sampler`` (torch 2.13). Randomness comes from the
``generator=`` argument (see :mod:`stoker.data._generator`): ``None`` draws from the program's
global generator each epoch (torch's, exactly as torch's samplers do, when torch is imported;
else NumPy's legacy one); an int seed makes every epoch reproducible (epoch ``e`` is keyed by
``(seed, e)``); a :class:`numpy.random.Generator` is drawn from once per epoch; a
``torch.Generator`` is drawn from with torch itself (``torch.randperm``, ``torch.randint``,
``torch.multinomial``, exactly as torch's samplers do), so the order equals torch's for the same
generator state.

The random samplers live in :mod:`stoker.data._samplers.shuffled`; they and
:class:`SequentialSampler` derive from :class:`EpochSampler`, whose epoch clock
(:class:`~stoker.data._samplers.epochs.EpochClock`) keeps each epoch's randomness and progress.
Every stoker sampler has ``state_dict()`` / ``load_state_dict()`` (the
:class:`~stoker.data._samplers.stateful.OffsetStateful` contract): a small JSON-serialisable dict
(epoch, seed, offset; no per-index lists) from which iteration resumes where it stopped, starting at
the offset without replaying the epoch. The helpers the samplers share (index pieces, argument
checks, torch's double-kind errors) are here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from stoker._checks import torch_first
from stoker.data._errors import TypeValueError
from stoker.data._fetch import take
from stoker.data._generator import check_generator
from stoker.data._samplers.epochs import EpochClock, EpochRecord, track
from stoker.data._samplers.stateful import Stateful

__all__ = [
    "BatchSampler",
    "EpochSampler",
    "Sampler",
    "SequentialSampler",
    "check_bool",
    "piece_bounds",
    "pieces",
    "positive_int",
]

T_co = TypeVar("T_co", covariant=True)


_FIRST_PIECE = 1024
_LARGEST_PIECE = 65536


def piece_bounds(total: int) -> Iterator[tuple[int, int]]:
    """Cut ``range(total)`` into ``(begin, end)`` pieces of growing length.

    The first piece is short, so the first batch does not wait for the whole epoch to become
    Python ints (``list(range(10**6))`` alone takes 20 ms); the pieces then double up to
    :data:`_LARGEST_PIECE`, where the per-piece overhead no longer shows.
    """
    size, begin = _FIRST_PIECE, 0
    while begin < total:
        yield begin, min(begin + size, total)
        begin += size
        size = min(size * 2, _LARGEST_PIECE)


def pieces(indices: Any) -> Iterator[list[int]]:
    """Yield an epoch's indices (a list, NumPy array or tensor) as lists of growing length."""
    if type(indices) is list:
        return (indices[begin:end] for begin, end in piece_bounds(len(indices)))
    return (indices[begin:end].tolist() for begin, end in piece_bounds(len(indices)))


def positive_int(value: object, name: str) -> int:
    """Return ``value`` as an int >= 1, with torch's message otherwise."""
    torch_text = f"{name} should be a positive integer value, but got {name}={value}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeValueError(
            torch_first(
                torch_text, f"got {value!r} of type {type(value).__name__}; pass an int >= 1"
            )
        )
    if value <= 0:
        raise ValueError(torch_first(torch_text, "pass an int >= 1"))
    return int(value)


def check_bool(value: object, name: str, error: type[Exception]) -> bool:
    """Return ``value`` as a bool, raising ``error`` with torch's message otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(
            torch_first(
                f"{name} should be a boolean value, but got {name}={value}",
                f"got {value!r} of type {type(value).__name__}; pass True or False",
            )
        )
    return bool(value)


class Sampler(Generic[T_co]):
    """Base class of samplers: ``__iter__`` yields dataset indices (or batches of them).

    Subclasses implement ``__iter__`` and may implement ``__len__``; there is deliberately no
    default ``__len__``, as in torch.
    """

    def __iter__(self) -> Iterator[T_co]:
        """Yield indices; subclasses must override this."""
        raise NotImplementedError


class EpochSampler(Sampler[int]):
    """Base of stoker's index samplers: epochs from an epoch clock (``epochs.EpochClock``).

    A subclass draws an epoch in :meth:`_begin_chunks`; this base yields it, counts it, and
    saves and restores it at any offset (the :class:`~stoker.data._samplers.stateful.OffsetStateful`
    contract).
    """

    _clock: EpochClock

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": type(self).__name__}

    def _epoch_total(self) -> int:
        return len(self)  # type: ignore[arg-type]

    def state_dict(self) -> dict[str, Any]:
        """Return a small JSON-serialisable state: epoch, seed, generator state and offset.

        ``offset`` counts the indices of the current epoch already yielded; a loader that
        prefetches may lower it to the number it actually consumed before saving. Between
        epochs the state describes the next epoch (with ``generator=None``, its seed is drawn
        from the global generator now, so the state reproduces it).
        """
        return self._clock.state(self._state_fields(), self._epoch_total())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; the next ``iter()`` resumes from it.

        Raises:
            ValueError: when the state was saved by another kind of sampler, for another
                length or by another format version, or its epoch or offset is not a count
                within the epoch.
        """
        self._clock.load(state, self._state_fields(), self._epoch_total())

    def resume_state(self, consumed: int | None) -> dict[str, Any]:
        """Return the state as if only ``consumed`` indices of this epoch had been taken.

        A DataLoader saves this way: ``consumed`` counts the indices of the batches it
        delivered, whatever its workers prefetched. ``None`` (the epoch has not begun) or a
        count at or past the epoch's end describes the start of the next epoch.
        """
        return self._clock.resume_state(self._state_fields(), self._epoch_total(), consumed)

    @property
    def resumes_at_offset(self) -> bool:
        """Whether offsets count the indices this sampler yields.

        False once ``__iter__`` is overridden by a subclass: a loader then resumes it by
        replaying its epoch.
        """
        return _iterates_itself(self)

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        """Start an epoch; return its record and its indices as lists from the record's start."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[int]:
        """Yield the indices of one epoch (randomness is drawn at the first ``next``)."""
        record, chunks = self._begin_chunks()
        yield from track(record, chunks)

    def _batches(self, batch_size: int, drop_last: bool) -> Iterator[list[int]]:
        """Yield the epoch's indices cut into lists, slicing whole chunks (BatchSampler's path)."""
        record, chunks = self._begin_chunks()
        try:
            position = record.start
            carry: list[int] = []
            for piece in chunks:
                chunk = piece if type(piece) is list else list(piece)
                if carry:
                    chunk = carry + chunk
                full = len(chunk) - len(chunk) % batch_size
                for begin in range(0, full, batch_size):
                    position += batch_size
                    record.start = position
                    yield chunk[begin : begin + batch_size]
                carry = chunk[full:]
            if carry and not drop_last:
                record.start = position + len(carry)
                yield carry
            record.ended = True
        finally:  # ended, closed or collected, as in track()
            record.live = False

    @property
    def generator(self) -> Any:
        """The ``generator=`` value the epochs draw from; may be replaced between epochs."""
        return self._clock.generator

    @generator.setter
    def generator(self, value: Any) -> None:
        self._clock.set_generator(check_generator(value))

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` start epoch ``epoch`` (with an int seed: its order).

        Not in torch's samplers (which only advance); useful to jump to an epoch directly.
        As with torch's DistributedSampler, the epoch under way is never changed (a loader's
        ``state_dict()`` still describes the place in it): ``set_epoch`` affects the next
        ``iter()``. Calling it after ``iter(loader)``, as Lightning does, when the loader's
        workers have begun the epoch already (the next in order, or a loaded state's), is a
        no-op: the next ``iter()`` still starts the epoch after it, as if ``set_epoch`` had
        come first. Any other call, ``set_epoch`` of that epoch again included, chooses the
        epoch the next ``iter()`` starts.

        Args:
            epoch: a non-negative int.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)):
            raise TypeError(f"epoch must be an int, got {epoch!r}; pass the epoch number")
        if epoch < 0:
            raise ValueError(f"epoch must be a non-negative int, got {epoch!r}")
        self._clock.set_epoch(int(epoch))  # a loaded state of this very epoch keeps its offset

    @property
    def epoch(self) -> int:
        """The number of the next epoch ``iter()`` starts (the current one while iterating)."""
        return self._clock.epoch


def _iterates_itself(sampler: EpochSampler) -> bool:
    """Tell whether ``sampler`` yields its epochs through :meth:`EpochSampler.__iter__`."""
    return type(sampler).__iter__ is EpochSampler.__iter__


class SequentialSampler(EpochSampler):
    """Yields ``0, 1, ..., len(data_source) - 1``.

    Args:
        data_source: a sized dataset (only its length is used).
    """

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source
        self._clock = EpochClock(None, uses_randomness=False)

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        record = self._clock.begin()
        start = record.start
        # ranges, not lists: iterating a range is fastest, and BatchSampler's path lists each
        pieces = (
            range(start + begin, start + end)
            for begin, end in piece_bounds(len(self.data_source) - start)
        )
        return record, pieces  # type: ignore[return-value]

    def __len__(self) -> int:
        """Return the dataset's length."""
        return len(self.data_source)

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": "SequentialSampler", "length": len(self.data_source)}


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of another sampler into lists of ``batch_size``.

    Args:
        sampler: a sampler or any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop the last batch if it is shorter than ``batch_size``.

    Raises:
        ValueError: when ``batch_size`` is not a positive int or ``drop_last`` is not a bool
            (a wrong type is also a ``TypeError``).
    """

    def __init__(
        self,
        sampler: Sampler[int] | Iterable[int],
        batch_size: int,
        drop_last: bool,
    ) -> None:
        self.batch_size = positive_int(batch_size, "batch_size")
        self.drop_last = check_bool(drop_last, "drop_last", TypeValueError)
        self.sampler = sampler

    def __iter__(self) -> Iterator[list[int]]:
        """Yield lists of indices."""
        sampler = self.sampler
        if isinstance(sampler, EpochSampler) and _iterates_itself(sampler):
            # stoker's own samplers: cut their index lists directly (same batches, less work)
            yield from sampler._batches(self.batch_size, self.drop_last)
            return
        indices = iter(sampler)  # once: an iterator that restarts in __iter__ gets next() only
        size = self.batch_size
        while True:
            batch = take(indices, size)
            if len(batch) < size and (self.drop_last or not batch):
                return
            yield batch

    def __len__(self) -> int:
        """Return the number of batches (requires ``len(sampler)``)."""
        length = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return length // self.batch_size
        return (length + self.batch_size - 1) // self.batch_size

    def state_dict(self) -> dict[str, Any]:
        """Return the inner sampler's state (see :meth:`RandomSampler.state_dict`).

        Raises:
            TypeError: when the inner sampler is not
                :class:`~stoker.data._samplers.stateful.Stateful` (it lacks ``state_dict`` or
                ``load_state_dict``).
        """
        return self._stateful_inner("state_dict").state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the inner sampler's state.

        Raises:
            TypeError: when the inner sampler is not
                :class:`~stoker.data._samplers.stateful.Stateful`.
        """
        self._stateful_inner("load_state_dict").load_state_dict(state)

    def _stateful_inner(self, method: str) -> Stateful:
        inner = self.sampler
        if not isinstance(inner, Stateful):
            raise TypeError(
                f"sampler {type(inner).__name__} has no {method}(); use a stoker sampler or "
                "give yours state_dict/load_state_dict"
            )
        return inner
