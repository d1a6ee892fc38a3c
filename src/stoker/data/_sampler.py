"""Samplers: the orders in which a loader visits dataset indices, and their batching.

Semantics follow ``torch.utils.data.sampler`` (torch 2.13). Randomness comes from the
``generator=`` argument (see :mod:`stoker.data._generator`): ``None`` draws a fresh seed each
epoch; an int seed makes every epoch reproducible (epoch ``e`` is keyed by ``(seed, e)``); a
:class:`numpy.random.Generator` is drawn from once per epoch; a ``torch.Generator`` is drawn
from with torch itself (``torch.randperm``, ``torch.randint``, ``torch.multinomial``, exactly as
torch's samplers do), so the order equals torch's for the same generator state.

The random samplers and :class:`SequentialSampler` have ``state_dict()`` / ``load_state_dict()``:
a small JSON-serialisable dict (epoch, seed, offset; no per-index lists) from which iteration
resumes where it stopped, starting at the offset without replaying the epoch.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from stoker.data._generator import EpochClock, EpochRecord, check_generator, make_rng, track

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)

_CHUNK = 8192  # indices drawn per NumPy call when sampling with replacement
_TORCH_CHUNK = 32  # torch's RandomSampler draws with replacement 32 at a time
_PERM_TAG = 0x5045_524D  # keys the permutation streams apart from other users of a seed
_DRAW_TAG = 0x4452_4157


class _TypeValueError(TypeError, ValueError):
    """A wrong type where torch raises ValueError (catchable as either)."""


class _ValueRuntimeError(ValueError, RuntimeError):
    """A bad value found while iterating, where torch raises RuntimeError."""


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _TypeValueError(
            f"{name} should be a positive integer value, but got {name}={value!r} "
            f"of type {type(value).__name__}; pass an int >= 1"
        )
    if value <= 0:
        raise ValueError(
            f"{name} should be a positive integer value, but got {name}={value!r}; pass an int >= 1"
        )
    return int(value)


def _bool(value: object, name: str, error: type[Exception]) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise error(
            f"{name} should be a boolean value, but got {name}={value!r} of type "
            f"{type(value).__name__}; pass True or False"
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


class _StatefulSampler(Sampler[int]):
    """Shared resume logic: an :class:`EpochClock` plus the fields a state must match."""

    _clock: EpochClock

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": type(self).__name__}

    def _epoch_total(self) -> int:
        return len(self)  # type: ignore[arg-type]

    def state_dict(self) -> dict[str, Any]:
        """Return a small JSON-serialisable state: epoch, seed, generator state and offset.

        ``offset`` counts the indices of the current epoch already yielded; a loader that
        prefetches may lower it to the number it actually consumed before saving.
        """
        return self._clock.state(self._state_fields(), self._epoch_total())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; the next ``iter()`` resumes from it.

        Raises:
            ValueError: when the state was saved by another kind of sampler, for another
                length or by another format version.
        """
        self._clock.load(state, self._state_fields())

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
        position = record.start
        carry: list[int] = []
        for piece in chunks:
            chunk = carry + piece if carry else (piece if isinstance(piece, list) else list(piece))
            full = len(chunk) - len(chunk) % batch_size
            for begin in range(0, full, batch_size):
                position += batch_size
                record.start = position
                yield chunk[begin : begin + batch_size]
            carry = chunk[full:]
        if carry and not drop_last:
            record.start = position + len(carry)
            yield carry

    @property
    def generator(self) -> Any:
        """The ``generator=`` value the epochs draw from; may be replaced between epochs."""
        return self._clock.generator

    @generator.setter
    def generator(self, value: Any) -> None:
        self._clock.generator = check_generator(value)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` start epoch ``epoch`` (with an int seed: its order).

        Not in torch's samplers (which only advance); useful to jump to an epoch directly.

        Args:
            epoch: a non-negative int.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)):
            raise TypeError(f"epoch must be an int, got {epoch!r}; pass the epoch number")
        if epoch < 0:
            raise ValueError(f"epoch must be a non-negative int, got {epoch!r}")
        self._clock.next_epoch = int(epoch)
        self._clock.current = None
        self._clock.discard_pending()

    @property
    def epoch(self) -> int:
        """The number of the next epoch ``iter()`` starts (the current one while iterating)."""
        current = self._clock.current
        return current.index if current is not None else self._clock.next_epoch


class SequentialSampler(_StatefulSampler):
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
        return record, iter([range(record.start, len(self.data_source))])  # type: ignore[list-item]

    def __len__(self) -> int:
        """Return the dataset's length."""
        return len(self.data_source)

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": "SequentialSampler", "length": len(self.data_source)}


def _permutation_chunks(seed: int, n: int, total: int, start: int) -> Iterator[list[int]]:
    """Whole permutations of ``range(n)`` (round ``r`` keyed by ``(seed, r)``), cut to ``total``."""
    round_index, skip = divmod(start, n)
    position = round_index * n
    while position < total:
        order = make_rng(seed, _PERM_TAG, round_index).permutation(n)
        stop = min(n, total - position)
        yield order[skip:stop].tolist()
        position += n
        round_index += 1
        skip = 0


def _replacement_chunks(seed: int, n: int, total: int, start: int) -> Iterator[list[int]]:
    """Uniform draws from ``range(n)`` in chunks keyed by ``(seed, chunk)``."""
    chunk_index, skip = divmod(start, _CHUNK)
    position = chunk_index * _CHUNK
    while position < total:
        size = min(_CHUNK, total - position)
        draws = make_rng(seed, _DRAW_TAG, chunk_index).integers(0, n, size=size)
        yield draws[skip:].tolist()
        position += size
        chunk_index += 1
        skip = 0


def _skip(chunks: Iterator[list[int]], start: int) -> Iterator[list[int]]:
    """Drop the first ``start`` indices of ``chunks`` (used to replay torch-drawn epochs)."""
    for chunk in chunks:
        if start >= len(chunk):
            start -= len(chunk)
            continue
        yield chunk[start:] if start else chunk
        start = 0


class RandomSampler(_StatefulSampler):
    """Yields indices in random order: a permutation, or draws with replacement.

    Args:
        data_source: a sized dataset (only its length is used).
        replacement: draw ``num_samples`` indices independently (with repeats) if True.
        num_samples: how many indices per epoch; defaults to ``len(data_source)``. Without
            replacement and above the length, whole permutations follow each other.
        generator: ``None``, an int seed, a :class:`numpy.random.Generator` or a
            ``torch.Generator`` (then the order equals torch's for the same generator state).

    Raises:
        TypeError: when ``replacement`` is not a bool or ``generator`` has a wrong type.
        ValueError: when ``num_samples`` is not a positive int.
    """

    data_source: Sized
    replacement: bool

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Any = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = _bool(replacement, "replacement", TypeError)
        self._num_samples = num_samples
        if num_samples is not None:
            self._num_samples = _positive_int(num_samples, "num_samples")
        elif len(data_source) <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got num_samples=0 "
                "(data_source is empty); pass a non-empty dataset"
            )
        self._clock = EpochClock(check_generator(generator))

    @property
    def num_samples(self) -> int:
        """Indices per epoch: ``num_samples`` if given, else ``len(data_source)``."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        n = len(self.data_source)
        total = self.num_samples
        if n == 0:
            raise _ValueRuntimeError(
                f"RandomSampler cannot draw {total} indices from an empty data_source; "
                "pass a non-empty dataset"
            )
        record = self._clock.begin()
        return record, self._chunks(record, n, total)

    def _chunks(self, record: EpochRecord, n: int, total: int) -> Iterator[list[int]]:
        if record.seed is not None:
            if self.replacement:
                return _replacement_chunks(record.seed, n, total, record.start)
            return _permutation_chunks(record.seed, n, total, record.start)
        return _skip(self._torch_chunks(n, total), record.start)

    def _torch_chunks(self, n: int, total: int) -> Iterator[list[int]]:
        torch = sys.modules["torch"]
        generator = self.generator
        if self.replacement:
            for _ in range(total // _TORCH_CHUNK):
                yield torch.randint(
                    high=n, size=(_TORCH_CHUNK,), dtype=torch.int64, generator=generator
                ).tolist()
            yield torch.randint(
                high=n, size=(total % _TORCH_CHUNK,), dtype=torch.int64, generator=generator
            ).tolist()
        else:
            for _ in range(total // n):
                yield torch.randperm(n, generator=generator).tolist()
            yield torch.randperm(n, generator=generator).tolist()[: total % n]

    def __len__(self) -> int:
        """Return :attr:`num_samples`."""
        return self.num_samples

    def _state_fields(self) -> dict[str, Any]:
        return {
            "sampler": "RandomSampler",
            "length": len(self.data_source),
            "num_samples": self.num_samples,
            "replacement": self.replacement,
        }


class SubsetRandomSampler(_StatefulSampler):
    """Yields the given indices in random order.

    Args:
        indices: the indices to permute (any sequence, e.g. a list or a NumPy array).
        generator: ``None``, an int seed, a :class:`numpy.random.Generator` or a
            ``torch.Generator`` (then the order equals torch's for the same generator state).
    """

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self._clock = EpochClock(check_generator(generator))

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        n = len(self.indices)
        record = self._clock.begin()
        if record.seed is not None:
            chunks = _permutation_chunks(record.seed, max(n, 1), n, record.start)
        else:
            torch = sys.modules["torch"]
            order = torch.randperm(n, generator=self.generator).tolist()
            chunks = iter([order[record.start :]])
        indices = self.indices
        return record, ([indices[position] for position in chunk] for chunk in chunks)

    def __len__(self) -> int:
        """Return ``len(indices)``."""
        return len(self.indices)

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": "SubsetRandomSampler", "length": len(self.indices)}


class WeightedRandomSampler(_StatefulSampler):
    """Yields ``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Args:
        weights: non-negative weights, one per index (a 1-d sequence or array; need not sum
            to 1).
        num_samples: how many indices per epoch.
        replacement: draw with repeats if True; without, each index appears at most once.
        generator: ``None``, an int seed, a :class:`numpy.random.Generator` or a
            ``torch.Generator`` (then the draws equal ``torch.multinomial``'s for the same
            generator state).

    Raises:
        ValueError: when ``num_samples`` is not a positive int, ``replacement`` is not a bool
            (also a ``TypeError``) or ``weights`` is not 1-d. Negative, non-finite or all-zero
            weights, or too few non-zero weights without replacement, raise when iterating
            (``ValueError``, also a ``RuntimeError`` as in torch). Without replacement, indices
            of weight zero are drawn only after every positive one, as torch does.
    """

    weights: np.ndarray[Any, np.dtype[np.float64]]
    num_samples: int
    replacement: bool

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Any = None,
    ) -> None:
        self.num_samples = _positive_int(num_samples, "num_samples")
        self.replacement = _bool(replacement, "replacement", _TypeValueError)
        try:
            weights_array = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise _TypeValueError(
                f"weights must be a 1-d sequence of numbers, got {weights!r}; "
                "pass a list or array of floats"
            ) from err
        if weights_array.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{weights_array.shape}; pass one weight per index"
            )
        self.weights = weights_array
        self._clock = EpochClock(check_generator(generator))

    def _check_weights(self) -> None:
        weights = self.weights
        if weights.size == 0 or not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise _ValueRuntimeError(
                "weights must be finite and non-negative with at least one entry, got "
                f"{weights!r}; fix the weights passed to WeightedRandomSampler"
            )
        if not np.any(weights > 0):
            raise _ValueRuntimeError(
                "weights must not all be zero (their sum must be > 0); "
                "give at least one index a positive weight"
            )
        if not self.replacement and self.num_samples > weights.size:
            raise _ValueRuntimeError(
                f"cannot draw num_samples={self.num_samples} indices without replacement from "
                f"{weights.size} weights; lower num_samples or use replacement=True"
            )

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        self._check_weights()
        record = self._clock.begin()
        if record.seed is not None:
            rng = make_rng(record.seed, _DRAW_TAG)
            weights = self.weights
            if self.replacement:
                drawn = rng.choice(weights.size, size=self.num_samples, p=weights / weights.sum())
            else:
                # Exponential race: the k largest weight/Exp(1) keys are a weighted sample
                # without replacement. Zero weights come last, lowest index first, so (as in
                # torch) they are drawn only once the positive ones are exhausted.
                keys = weights / rng.standard_exponential(weights.size)
                drawn = np.argsort(-keys, kind="stable")[: self.num_samples]
            order: list[int] = drawn.tolist()
        else:
            torch = sys.modules["torch"]
            order = torch.multinomial(
                torch.from_numpy(self.weights),
                self.num_samples,
                self.replacement,
                generator=self.generator,
            ).tolist()
        return record, iter([order[record.start :]])

    def __len__(self) -> int:
        """Return :attr:`num_samples`."""
        return self.num_samples

    def _state_fields(self) -> dict[str, Any]:
        return {
            "sampler": "WeightedRandomSampler",
            "length": int(self.weights.size),
            "num_samples": self.num_samples,
            "replacement": self.replacement,
        }


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
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.drop_last = _bool(drop_last, "drop_last", _TypeValueError)
        self.sampler = sampler

    def __iter__(self) -> Iterator[list[int]]:
        """Yield lists of indices."""
        sampler = self.sampler
        if (
            isinstance(sampler, _StatefulSampler)
            and type(sampler).__iter__ is _StatefulSampler.__iter__
        ):
            # stoker's own samplers: cut their index lists directly (same batches, less work)
            yield from sampler._batches(self.batch_size, self.drop_last)
            return
        indices = iter(sampler)
        size = self.batch_size
        while True:
            batch = list(itertools.islice(indices, size))
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
            TypeError: when the inner sampler has no ``state_dict``.
        """
        inner = getattr(self.sampler, "state_dict", None)
        if not callable(inner):
            raise TypeError(
                f"sampler {type(self.sampler).__name__} has no state_dict(); use a stoker "
                "sampler or give yours state_dict/load_state_dict"
            )
        state: dict[str, Any] = inner()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the inner sampler's state.

        Raises:
            TypeError: when the inner sampler has no ``load_state_dict``.
        """
        inner = getattr(self.sampler, "load_state_dict", None)
        if not callable(inner):
            raise TypeError(
                f"sampler {type(self.sampler).__name__} has no load_state_dict(); use a "
                "stoker sampler or give yours state_dict/load_state_dict"
            )
        inner(state)
