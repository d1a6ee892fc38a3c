"""The ``generator=`` argument: checking it, drawing seeds from it, and samplers' epoch records.

Every sampler, :func:`random_split` and the loader accept ``generator=`` as one of:

* ``None``: every draw uses fresh entropy from the operating system (not reproducible), the way
  torch draws a fresh seed for each iteration when no generator is given;
* an ``int`` seed: reproducible; samplers key each epoch by ``(seed, epoch)`` so the order of
  any epoch can be recomputed without replaying earlier ones;
* a :class:`numpy.random.Generator`: drawn from (its state advances, as a torch generator's does);
* a ``torch.Generator``: drawn from with torch itself, so orders equal torch's for the same
  generator state. torch is only touched when such an object is passed; this module never
  imports torch on its own.

Seeds are non-negative integers below ``2**63`` so that they fit an ``int64`` and
``torch.manual_seed``.

A sampler's epoch is described by a small :class:`EpochRecord`: the epoch number, a seed (or,
for a ``torch.Generator``, the generator's state when the epoch began) and the number of indices
already yielded. From it the rest of the epoch is recomputed without replaying earlier epochs,
which is what resuming needs. Progress is tracked without per-index Python work: indices are
yielded from list iterators whose remaining length is read on demand (:func:`track`).
"""

from __future__ import annotations

import base64
import operator
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "SEED_MASK",
    "STATE_VERSION",
    "EpochClock",
    "EpochRecord",
    "check_generator",
    "derive_seed",
    "draw_seed",
    "fresh_seed",
    "is_torch_generator",
    "make_rng",
    "resolve_generator",
    "track",
]

SEED_MASK = (1 << 63) - 1
"""Seeds handed out by this module are in ``range(0, SEED_MASK + 1)``."""

_U64 = (1 << 64) - 1

_VALID = "None, an int seed, a numpy.random.Generator or a torch.Generator"


def is_torch_generator(generator: object) -> bool:
    """Tell whether ``generator`` is a ``torch.Generator``, without importing torch.

    Args:
        generator: any object.

    Returns:
        True when the object's type comes from torch and torch (already imported, since such
        an object exists) says it is a ``torch.Generator``.
    """
    if not type(generator).__module__.startswith("torch"):
        return False
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(generator, torch.Generator)


def check_generator(generator: object, name: str = "generator") -> Any:
    """Validate a ``generator=`` argument and return it unchanged (ints as plain ``int``).

    Args:
        generator: the value passed by the user.
        name: the argument's name, used in the error message.

    Returns:
        ``None``, an ``int``, a :class:`numpy.random.Generator` or a ``torch.Generator``.

    Raises:
        TypeError: for any other type (``bool`` included).
    """
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, (bool, np.bool_)):
        return int(generator)
    if is_torch_generator(generator):
        return generator
    raise TypeError(
        f"{name} must be {_VALID}, got {generator!r} of type {type(generator).__name__}; "
        "pass e.g. an int seed for reproducible results or None for fresh randomness"
    )


def resolve_generator(generator: object, name: str = "generator") -> Any:
    """Turn a ``generator=`` argument into an object that can be drawn from repeatedly.

    An int seed becomes a new :class:`numpy.random.Generator` seeded from it, so a sequence of
    :func:`draw_seed` calls on the result is reproducible; other accepted values are returned
    as they are.

    Args:
        generator: the value passed by the user.
        name: the argument's name, used in the error message.

    Returns:
        ``None``, a :class:`numpy.random.Generator` or a ``torch.Generator``.

    Raises:
        TypeError: when ``generator`` is not one of the accepted kinds.
    """
    checked = check_generator(generator, name)
    if isinstance(checked, int):
        return make_rng(checked)
    return checked


def fresh_seed() -> int:
    """Return a seed drawn from fresh operating-system entropy."""
    return secrets.randbits(63)


def draw_seed(generator: object) -> int:
    """Draw one seed from ``generator``.

    Args:
        generator: ``None`` (fresh entropy), an int (a seed derived from it; the same every
            call, resolve it first with :func:`resolve_generator` for a sequence), a
            :class:`numpy.random.Generator` (advances it) or a ``torch.Generator`` (advances it
            the way torch's DataLoader draws its base seed, so the value equals torch's).

    Returns:
        An int in ``range(0, 2**63)``.

    Raises:
        TypeError: when ``generator`` is not one of the accepted kinds.
    """
    checked = check_generator(generator)
    if checked is None:
        return fresh_seed()
    if isinstance(checked, int):
        return derive_seed(checked)
    if isinstance(checked, np.random.Generator):
        return int(checked.integers(0, SEED_MASK, endpoint=True, dtype=np.int64))
    torch = sys.modules["torch"]
    value = torch.empty((), dtype=torch.int64).random_(generator=checked).item()
    return int(value) & SEED_MASK


def _entropy(key: tuple[int, ...]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """Encode a key as 32-bit words: two per part (each part mod 2**64), then the part count.

    NumPy's ``SeedSequence`` ignores trailing zero words and splits big ints into words, so
    ``(1, 2)`` and ``(1, 2, 0)`` or ``(2**32,)`` and ``(0, 1)`` would collide without a
    fixed-width encoding ending in a non-zero word.
    """
    words: list[int] = []
    for part in key:
        if isinstance(part, bool) or not isinstance(part, (int, np.integer)):
            raise TypeError(
                f"key parts must be ints, got {part!r} of type {type(part).__name__}; "
                "pass seeds, epochs and indices as ints"
            )
        value = int(part) & _U64
        words += (value & 0xFFFF_FFFF, value >> 32)
    words.append(len(key) + 1)
    return np.array(words, dtype=np.uint32)


def derive_seed(*key: int) -> int:
    """Derive a seed from a tuple of ints, e.g. ``(seed, epoch)``; the same key gives the same seed.

    Args:
        *key: ints (negative values are taken modulo ``2**64``).

    Returns:
        An int in ``range(0, 2**63)``.
    """
    words = np.random.SeedSequence(_entropy(key)).generate_state(2, np.uint32)
    return ((int(words[0]) << 32) | int(words[1])) & SEED_MASK


def make_rng(*key: int) -> np.random.Generator:
    """Return a NumPy generator determined by a tuple of ints, e.g. ``(seed, epoch, index)``.

    Distinct keys give statistically independent streams (NumPy's ``SeedSequence`` hashes the
    whole key), so keys of different lengths or orders never collide by construction.

    Args:
        *key: ints (negative values are taken modulo ``2**64``).

    Returns:
        A new :class:`numpy.random.Generator` over PCG64.
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(_entropy(key))))


STATE_VERSION = 1


@dataclass
class EpochRecord:
    """One epoch of a sampler: its number, randomness and progress."""

    index: int
    seed: int | None = None
    torch_state: bytes | None = None
    start: int = 0
    _chunk_end: int = 0
    _chunk_it: Iterator[int] | None = field(default=None, repr=False)

    def offset(self) -> int:
        """Return how many indices of this epoch have been yielded (resumed ones included)."""
        if self._chunk_it is None:
            return self.start
        return self._chunk_end - operator.length_hint(self._chunk_it)


def track(record: EpochRecord, chunks: Iterator[list[int]]) -> Iterator[int]:
    """Yield the indices of ``chunks`` (already trimmed to start at ``record.start``).

    Args:
        record: the epoch whose progress is updated as indices are consumed.
        chunks: lists of indices, in order.

    Yields:
        Each index.
    """
    position = record.start
    for chunk in chunks:
        iterator = iter(chunk)
        record._chunk_it = iterator
        position += len(chunk)
        record._chunk_end = position
        yield from iterator


class EpochClock:
    """Draws each epoch's randomness from a checked ``generator=`` value and remembers it.

    * ``None``: a fresh seed per epoch;
    * an int: the seed of epoch ``e`` is derived from ``(int, e)``, so it is reproducible and
      recomputable;
    * a :class:`numpy.random.Generator`: one seed drawn from it per epoch;
    * a ``torch.Generator``: the sampler draws with torch itself; the clock remembers the
      generator's state at the start of the epoch.
    """

    def __init__(self, generator: Any, *, uses_randomness: bool = True) -> None:
        self.generator = generator
        self.uses_randomness = uses_randomness
        self.next_epoch = 0
        self.current: EpochRecord | None = None
        self._pending: EpochRecord | None = None
        self._numpy_state_after_draw: Any = None

    def begin(self) -> EpochRecord:
        """Start the next epoch (or the resumed one) and return its record."""
        if self._pending is not None:
            record, self._pending = self._pending, None
            if record.torch_state is not None:
                self.generator.set_state(_decode_torch_state_bytes(record.torch_state))
        else:
            record = EpochRecord(index=self.next_epoch)
            generator = self.generator
            if not self.uses_randomness:
                pass
            elif generator is None:
                record.seed = fresh_seed()
            elif isinstance(generator, int):
                record.seed = derive_seed(generator, record.index)
            elif isinstance(generator, np.random.Generator):
                record.seed = draw_seed(generator)
                self._numpy_state_after_draw = generator.bit_generator.state
            else:
                record.torch_state = generator.get_state().numpy().tobytes()
        self.next_epoch = record.index + 1
        self.current = record
        return record

    def discard_pending(self) -> None:
        """Forget a loaded, not yet started epoch."""
        self._pending = None

    def state(self, length_fields: dict[str, Any], total: int) -> dict[str, Any]:
        """Return the JSON-serialisable state; ``total`` is the number of indices per epoch."""
        record = self.current
        return self.resume_state(length_fields, total, None if record is None else record.offset())

    def resume_state(
        self, length_fields: dict[str, Any], total: int, consumed: int | None
    ) -> dict[str, Any]:
        """Return the state of the current epoch with only ``consumed`` indices taken.

        A loader that prefetches saves this way: ``consumed`` counts the indices of the batches
        it delivered. ``None`` (the epoch has not begun) or ``consumed >= total`` describes the
        start of the next epoch instead.
        """
        record = self.current
        if self._pending is not None:  # loaded and not begun yet: describe the loaded epoch
            record = self._pending
            consumed = record.start if consumed is None else consumed
        in_epoch = record is not None and consumed is not None and consumed < total
        state: dict[str, Any] = {"version": STATE_VERSION, **length_fields}
        generator = self.generator
        if in_epoch and record is not None and consumed is not None:
            state.update(epoch=record.index, offset=consumed, seed=record.seed)
            torch_state = record.torch_state
            numpy_state: Any = self._numpy_state_after_draw
        else:
            state.update(epoch=self.next_epoch, offset=0, seed=None)
            torch_state = None
            numpy_state = None
            if isinstance(generator, np.random.Generator):
                numpy_state = generator.bit_generator.state
            elif is_torch_generator(generator):
                torch_state = generator.get_state().numpy().tobytes()
        state["generator_state"] = numpy_state
        state["torch_state"] = (
            None if torch_state is None else base64.b64encode(torch_state).decode("ascii")
        )
        return state

    def load(self, state: dict[str, Any], length_fields: dict[str, Any]) -> None:
        """Restore a state made by :meth:`state`; the next epoch resumes where it stopped.

        Raises:
            ValueError: when the state was saved by another kind of sampler, another format
                version, or for another length.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from state_dict(), got {state!r}")
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"state version must be {STATE_VERSION}, got {state.get('version')!r}; "
                "it was saved by an incompatible version of stoker"
            )
        missing = [key for key in ("epoch", "offset", "seed") if key not in state]
        if missing:
            raise ValueError(
                f"state is missing {missing}; pass a dict returned by a sampler's state_dict()"
            )
        for key, expected in length_fields.items():
            if state.get(key) != expected:
                raise ValueError(
                    f"state does not fit this sampler: {key} is {state.get(key)!r} in the "
                    f"state but {expected!r} here; load it into the sampler it was saved from"
                )
        generator = self.generator
        numpy_state = state.get("generator_state")
        if numpy_state is not None:
            if not isinstance(generator, np.random.Generator):
                raise ValueError(
                    "state holds a numpy.random.Generator state but this sampler's generator "
                    f"is {generator!r}; pass the same kind of generator"
                )
            generator.bit_generator.state = numpy_state
            self._numpy_state_after_draw = numpy_state
        raw_torch = state.get("torch_state")
        torch_state = None if raw_torch is None else base64.b64decode(raw_torch)
        if torch_state is not None and not is_torch_generator(generator):
            raise ValueError(
                "state holds a torch.Generator state but this sampler's generator is "
                f"{generator!r}; pass a torch.Generator"
            )
        epoch = int(state["epoch"])
        offset = int(state["offset"])
        self.current = None
        self.next_epoch = epoch
        if offset == 0 and state.get("seed") is None:
            self._pending = None
            if torch_state is not None:
                generator.set_state(_decode_torch_state_bytes(torch_state))
            return
        self._pending = EpochRecord(
            index=epoch, seed=state.get("seed"), torch_state=torch_state, start=offset
        )


def _decode_torch_state_bytes(raw: bytes) -> Any:
    torch = sys.modules["torch"]
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8).copy())
