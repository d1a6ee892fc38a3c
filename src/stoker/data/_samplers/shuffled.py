"""The random samplers: permutations, draws with replacement, subsets and weighted draws.

Each epoch's randomness comes from the sampler's ``generator=`` through its epoch clock (see
:mod:`stoker.data._samplers.epochs`): with an int seed, a :class:`numpy.random.Generator`, or
``None`` in a program without torch (one seed from NumPy's legacy global generator) the epoch has
a seed and the indices are drawn in keyed chunks (permutation round ``r`` or draw chunk ``c``
keyed by ``(seed, tag, r)``), so an epoch resumes at any offset without replaying it. With a
``torch.Generator``, or ``None`` in a program that imported torch, they are drawn with torch
itself (through :mod:`stoker._torch`), exactly as torch's samplers draw them: RandomSampler
draws a seed from torch's global generator and seeds a new generator with it, the others draw
from torch's global generator directly; a resumed epoch is drawn again and cut.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, Sized
from typing import Any

import numpy as np

from stoker import _torch
from stoker.data._errors import TypeValueError, ValueRuntimeError
from stoker.data._generator import check_generator, make_rng
from stoker.data._samplers.base import EpochSampler, check_bool, pieces, positive_int
from stoker.data._samplers.epochs import DIRECT, Draws, EpochClock, EpochRecord

__all__ = ["RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler"]

_CHUNK = 8192  # indices drawn per NumPy call when sampling with replacement
_TORCH_CHUNK = 32  # torch's RandomSampler draws with replacement 32 at a time
_PERM_TAG = 0x5045_524D  # keys the permutation streams apart from other users of a seed
_DRAW_TAG = 0x4452_4157


def _permutation_chunks(seed: int, n: int, total: int, start: int) -> Iterator[list[int]]:
    """Whole permutations of ``range(n)``, cut to ``total``.

    Round ``r`` is keyed by ``(seed, tag, r)``.
    """
    round_index, skip = divmod(start, n)
    position = round_index * n
    while position < total:
        order = make_rng(seed, _PERM_TAG, round_index).permutation(n)
        stop = min(n, total - position)
        yield from pieces(order[skip:stop])
        position += n
        round_index += 1
        skip = 0


def _replacement_chunks(seed: int, n: int, total: int, start: int) -> Iterator[list[int]]:
    """Uniform draws from ``range(n)`` in chunks keyed by ``(seed, tag, chunk)``."""
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


class RandomSampler(EpochSampler):
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
        self.replacement = check_bool(replacement, "replacement", TypeError)
        self._num_samples = num_samples
        if num_samples is not None:
            self._num_samples = positive_int(num_samples, "num_samples")
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
            raise ValueRuntimeError(
                f"RandomSampler cannot draw {total} indices from an empty data_source; "
                "pass a non-empty dataset"
            )
        record = self._clock.begin()
        return record, self._chunks(record, n, total)

    def _chunks(self, record: EpochRecord, n: int, total: int) -> Iterator[list[int]]:
        if record.draws is Draws.KEYED and record.seed is not None:
            if self.replacement:
                return _replacement_chunks(record.seed, n, total, record.start)
            return _permutation_chunks(record.seed, n, total, record.start)
        return _skip(self._torch_chunks(n, total, record), record.start)

    def _torch_chunks(self, n: int, total: int, record: EpochRecord) -> Iterator[list[int]]:
        generator = self._clock.torch_source(record)
        if self.replacement:
            for _ in range(total // _TORCH_CHUNK):
                yield _torch.randint(n, _TORCH_CHUNK, generator)
            yield _torch.randint(n, total % _TORCH_CHUNK, generator)
        else:
            for _ in range(total // n):
                yield from pieces(_torch.randperm(n, generator))
            yield from pieces(_torch.randperm(n, generator)[: total % n])

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


class SubsetRandomSampler(EpochSampler):
    """Yields the given indices in random order.

    Args:
        indices: the indices to permute (any sequence, e.g. a list or a NumPy array).
        generator: ``None``, an int seed, a :class:`numpy.random.Generator` or a
            ``torch.Generator`` (then the order equals torch's for the same generator state).
    """

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self._clock = EpochClock(check_generator(generator), global_draws=DIRECT)

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        n = len(self.indices)
        record = self._clock.begin()
        if record.draws is Draws.KEYED and record.seed is not None:
            chunks = _permutation_chunks(record.seed, max(n, 1), n, record.start)
        else:
            order = _torch.randperm(n, self._clock.torch_source(record))
            chunks = pieces(order[record.start :])
        indices = self.indices
        return record, ([indices[position] for position in chunk] for chunk in chunks)

    def __len__(self) -> int:
        """Return ``len(indices)``."""
        return len(self.indices)

    def _state_fields(self) -> dict[str, Any]:
        return {"sampler": "SubsetRandomSampler", "length": len(self.indices)}


class WeightedRandomSampler(EpochSampler):
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
        self.num_samples = positive_int(num_samples, "num_samples")
        self.replacement = check_bool(replacement, "replacement", TypeValueError)
        try:
            weights_array = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeValueError(
                f"weights must be a 1-d sequence of numbers, got {weights!r}; "
                "pass a list or array of floats"
            ) from err
        if weights_array.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{weights_array.shape}; pass one weight per index"
            )
        self.weights = weights_array
        self._clock = EpochClock(check_generator(generator), global_draws=DIRECT)

    def _check_weights(self) -> None:
        weights = self.weights
        # torch.multinomial's own texts first (the C++ checks torch's sampler runs into)
        if weights.size == 0:
            raise ValueRuntimeError(
                "weights must hold at least one entry, got an empty sequence; pass one weight "
                "per index to WeightedRandomSampler"
            )
        if not np.all(np.isfinite(weights)):
            raise ValueRuntimeError(
                "probability tensor contains either `inf`, `nan` or element < 0: weights must "
                f"be finite, got {weights!r}; fix the weights passed to WeightedRandomSampler"
            )
        if np.any(weights < 0):
            raise ValueRuntimeError(
                "invalid multinomial distribution (encountering probability entry < 0): weights "
                f"must be non-negative, got {weights!r}; fix the weights passed to "
                "WeightedRandomSampler"
            )
        if not np.any(weights > 0):
            raise ValueRuntimeError(
                "invalid multinomial distribution (sum of probabilities <= 0): weights must not "
                "all be zero; give at least one index a positive weight"
            )
        if not self.replacement and self.num_samples > weights.size:
            raise ValueRuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement: "
                f"cannot draw num_samples={self.num_samples} indices without replacement from "
                f"{weights.size} weights; lower num_samples or use replacement=True"
            )

    def _begin_chunks(self) -> tuple[EpochRecord, Iterator[list[Any]]]:
        self._check_weights()
        record = self._clock.begin()
        if record.draws is Draws.KEYED and record.seed is not None:
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
        else:
            drawn = _torch.multinomial(
                self.weights, self.num_samples, self.replacement, self._clock.torch_source(record)
            )
        return record, pieces(drawn[record.start :])

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
