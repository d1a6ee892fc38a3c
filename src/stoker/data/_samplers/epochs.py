"""The sampler epoch clock: which randomness each epoch of a sampler uses, and how far it got.

A sampler's epoch is described by a small :class:`EpochRecord`: the epoch number, how its
indices are drawn (:class:`Draws`: keyed NumPy chunks from a seed, a torch generator seeded
with a seed, or a torch generator's state when the epoch began) and the number of indices
already yielded. From it the rest of the epoch is recomputed without replaying earlier
epochs, which is what resuming needs. Progress is tracked without per-index Python work:
indices are yielded from list iterators whose remaining length is read on demand
(:func:`track`).

:class:`EpochClock` draws each epoch's randomness from a checked ``generator=`` value (see
:mod:`stoker.data._generator`) and turns the current epoch into the small JSON state that
stoker's samplers return from ``state_dict()``, and back.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoker import _torch
from stoker.data._errors import short_repr
from stoker.data._generator import (
    GeneratorState,
    check_fits,
    derive_seed,
    draw_global_seed,
    draw_seed,
    restore_generator,
    save_generator,
)

__all__ = [
    "DIRECT",
    "SEED",
    "STATE_VERSION",
    "Draws",
    "EpochClock",
    "EpochRecord",
    "same_value",
    "state_count",
    "track",
]

STATE_VERSION = 1
"""The version of the samplers' ``state_dict()`` format."""

_OWNER = "this sampler"

SEED = "seed"
"""Global draws of a sampler that, like torch's RandomSampler, seeds its own generator."""
DIRECT = "direct"
"""Global draws of a sampler that, like torch's Subset- and WeightedRandomSampler, draws from
torch's global generator itself."""


class Draws(str, enum.Enum):
    """How an epoch's indices are drawn (saved in states as the value)."""

    KEYED = "keyed"
    """In NumPy chunks keyed by ``(seed, tag, chunk)``: the seed alone recomputes any part."""
    TORCH_SEED = "torch_seed"
    """With a new ``torch.Generator`` seeded with the seed, as torch's RandomSampler does when
    it has no generator."""
    TORCH_STATE = "torch_state"
    """With the sampler's own ``torch.Generator``, whose state as the epoch began is kept."""
    TORCH_GLOBAL = "torch_global"
    """With torch's global generator, whose state as the epoch began is kept; a resumed epoch
    draws from a new generator set to that state instead."""


@dataclass
class EpochRecord:
    """One epoch of a sampler: its number, randomness and progress.

    Attributes:
        index: the epoch number.
        seed: the epoch's seed (None when a torch generator's state is kept, or without
            randomness).
        torch_state: a torch generator's state as the epoch began (base64 text).
        draws: how the indices are drawn from ``seed`` or ``torch_state``.
        start: the offset the epoch starts at (non-zero when resumed).
        restored: the epoch comes from a state (loaded or fixed), not from a live draw.
        live: the sampler's iteration of this epoch has begun and has neither ended nor been
            closed.
        ended: that iteration ran to its end (a loader's workers may still be delivering it).
        confirmed: ``set_epoch`` named this epoch (before it began, or once while it ran), so
            a further ``set_epoch`` of it asks for it again (see :meth:`EpochClock.set_epoch`).
    """

    index: int
    seed: int | None = None
    torch_state: str | None = None
    draws: Draws = Draws.KEYED
    start: int = 0
    restored: bool = False
    live: bool = False
    ended: bool = False
    confirmed: bool = False
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
        Each index. Once the iteration ends ``record.ended`` turns True, and once it ends or
        is closed ``record.live`` turns False.
    """
    position = record.start
    try:
        for chunk in chunks:
            iterator = iter(chunk)
            record._chunk_it = iterator
            position += len(chunk)
            record._chunk_end = position
            yield from iterator
        record.ended = True
    finally:  # ended, closed or collected: the epoch is no longer being iterated
        record.live = False


class EpochClock:
    """Draws each epoch's randomness from a checked ``generator=`` value and remembers it.

    * ``None``: the program's global generator, drawn as torch draws when torch is imported
      (``global_draws`` says how: :data:`SEED` draws one seed and seeds a new torch generator,
      :data:`DIRECT` keeps torch's global state and draws from it), else one seed from
      NumPy's legacy global generator for keyed chunks; a state taken between epochs fixes
      the next epoch by drawing its seed then;
    * an int: the seed of epoch ``e`` is derived from ``(int, e)``, so it is reproducible and
      recomputable;
    * a :class:`numpy.random.Generator`: one seed drawn from it per epoch;
    * a ``torch.Generator``: the sampler draws with torch itself; the clock remembers the
      generator's state at the start of the epoch.
    """

    def __init__(
        self, generator: Any, *, uses_randomness: bool = True, global_draws: str = SEED
    ) -> None:
        self.generator = generator
        self.uses_randomness = uses_randomness
        self.global_draws = global_draws
        self.next_epoch = 0
        self.current: EpochRecord | None = None
        self._pending: EpochRecord | None = None
        self._pinned = False  # the pending epoch only fixes a global seed (nothing was loaded)
        self._chosen = False  # set_epoch chose the epoch the next begin() starts
        self._numpy_state_after_draw: Any = None

    def begin(self) -> EpochRecord:
        """Start the next epoch (or the resumed one) and return its record."""
        if self._pending is not None:
            record, self._pending, self._pinned = self._pending, None, False
            if record.draws is Draws.TORCH_STATE and record.torch_state is not None:
                restore_generator(self.generator, GeneratorState(torch=record.torch_state), _OWNER)
        else:
            record = EpochRecord(index=self.next_epoch)
            generator = self.generator
            if not self.uses_randomness:
                pass
            elif generator is None:
                if _torch.loaded() is not None and self.global_draws == DIRECT:
                    record.draws = Draws.TORCH_GLOBAL
                    record.torch_state = _torch.generator_state(_torch.default_generator())
                else:
                    self._fix_global_seed(record)
            elif isinstance(generator, int):
                record.seed = derive_seed(generator, record.index)
            elif isinstance(generator, np.random.Generator):
                record.seed = draw_seed(generator)
                self._numpy_state_after_draw = generator.bit_generator.state
            else:
                record.draws = Draws.TORCH_STATE
                record.torch_state = save_generator(generator).torch
        self.next_epoch = record.index + 1
        record.live, record.confirmed, self._chosen = True, self._chosen, False
        self.current = record
        return record

    @staticmethod
    def _fix_global_seed(record: EpochRecord) -> None:
        """Draw ``record``'s seed from the global generator (torch's draw when imported)."""
        record.draws = Draws.TORCH_SEED if _torch.loaded() is not None else Draws.KEYED
        record.seed = draw_global_seed()

    def torch_source(self, record: EpochRecord) -> Any:
        """The torch generator an epoch drawn with torch draws from.

        The sampler's own generator; a new one seeded with the record's seed; torch's global
        generator (as ``None``) for a live global epoch; or a new generator set to the kept
        global state for a restored one, so resuming never touches the program's generator.
        """
        if record.draws is Draws.TORCH_SEED:
            return _torch.new_generator(seed=record.seed)
        if record.draws is Draws.TORCH_GLOBAL:
            return _torch.new_generator(state=record.torch_state) if record.restored else None
        return self.generator

    def set_generator(self, generator: Any) -> None:
        """Draw later epochs from ``generator`` (a checked ``generator=`` value)."""
        self.generator = generator
        if self._pinned:  # a global seed fixed for the old generator no longer applies
            self.discard_pending()

    def set_epoch(self, epoch: int) -> None:
        """Make the next :meth:`begin` start epoch ``epoch``; never change the epoch under way.

        As with torch's DistributedSampler, whose ``set_epoch`` affects the next ``iter()``,
        the epoch begun last keeps its record (a loader's ``state_dict()`` describes the place
        in it). One call is a no-op: ``set_epoch`` of the epoch the sampler began on its own
        (the next in order, or a loaded state's) and is iterating or has just drawn to its end:
        the order ``iter(loader)``, then ``set_epoch(e)`` (Lightning's, whose workers may have
        drawn all of a short epoch already) then equals ``set_epoch(e)``, then ``iter(loader)``.
        Any other call sets the next epoch (``set_epoch(e)`` again: repeat ``e``). A pending
        epoch of that number (a loaded state, with its offset, or a global seed a state fixed)
        is kept; any other pending epoch is dropped.
        """
        current = self.current
        if current is not None:
            if current.index == epoch and not current.confirmed and (current.live or current.ended):
                current.confirmed = True
                return
            if not current.live and not current.ended:  # closed before its end: left behind
                self.current = None
        pending = self._pending
        if pending is None or pending.index != epoch:
            self.next_epoch = epoch
            self.discard_pending()
        self._chosen = True

    def discard_pending(self) -> None:
        """Forget a loaded (or fixed), not yet started epoch."""
        self._pending = None
        self._pinned = False

    @property
    def epoch(self) -> int:
        """The number of the next epoch :meth:`begin` starts (the current one while running)."""
        current = self.current
        return current.index if current is not None and current.live else self.next_epoch

    def state(self, length_fields: dict[str, Any], total: int) -> dict[str, Any]:
        """Return the JSON-serialisable state; ``total`` is the number of indices per epoch.

        Between epochs the state describes the next one. With ``generator=None`` that epoch's
        seed is drawn from the global generator now (instead of when the epoch begins) and kept
        for it, so that the state reproduces the epoch that follows.
        """
        record = self.current
        consumed = None if record is None or record.ended else record.offset()
        if consumed is None or consumed >= total:
            consumed = None
            if self._pending is None and self.uses_randomness and self.generator is None:
                pinned = EpochRecord(index=self.next_epoch, restored=True)
                self._fix_global_seed(pinned)
                self._pending = pinned
                self._pinned = True
        return self.resume_state(length_fields, total, consumed)

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
        if in_epoch and record is not None and consumed is not None:
            state.update(epoch=record.index, offset=consumed, seed=record.seed)
            state["draws"] = record.draws.value
            numpy_state = self._numpy_state_after_draw if record.draws is Draws.KEYED else None
            state["generator_state"] = numpy_state
            state["torch_state"] = record.torch_state
        else:
            state.update(epoch=self.next_epoch, offset=0, seed=None, draws=None)
            saved = save_generator(self.generator)
            state["generator_state"] = saved.numpy
            state["torch_state"] = saved.torch
        return state

    def load(self, state: dict[str, Any], length_fields: dict[str, Any], total: int) -> None:
        """Restore a state made by :meth:`state`; the next epoch resumes where it stopped.

        ``total`` is the number of indices in an epoch: a saved offset is at most that.

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when the state was saved by another kind of sampler, another format
                version, for another length, or with another kind of generator, or when its
                epoch or offset is not a count (an offset past the epoch's end included).
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from state_dict(), got {state!r}")
        needed = ("version", *length_fields, "epoch", "offset", "seed")
        missing = [key for key in needed if key not in state]
        if missing:
            raise ValueError(
                f"state is missing {missing}, got {short_repr(state)}; pass a dict returned by "
                "a sampler's state_dict()"
            )
        if not same_value(state["version"], STATE_VERSION):
            raise ValueError(
                f"state version must be {STATE_VERSION}, got {state['version']!r}; "
                "it was saved by an incompatible version of stoker"
            )
        for key, expected in length_fields.items():
            if not same_value(state[key], expected):
                raise ValueError(
                    f"state does not fit this sampler: {key} is {state[key]!r} in the "
                    f"state but {expected!r} here; load it into the sampler it was saved from"
                )
        epoch = state_count(state, "epoch")
        offset = state_count(state, "offset", total)
        draws = _saved_draws(state)
        seed = state["seed"]
        if seed is not None and type(seed) is not int:
            raise ValueError(
                f"state seed must be an int or None, got {seed!r}; pass a dict returned by "
                "a sampler's state_dict()"
            )
        keyed = draws in (Draws.KEYED, Draws.TORCH_SEED)
        if self.uses_randomness and keyed and seed is None and offset > 0:
            raise ValueError(
                f"state seed must be an int in an epoch under way (offset {offset}, draws "
                f"{draws.value!r}: its indices come from the seed), got None; pass a dict "
                "returned by a sampler's state_dict()"
            )
        saved = GeneratorState(state.get("generator_state"), state.get("torch_state"))
        if draws is not Draws.TORCH_GLOBAL:  # torch's global state, kept: fits any generator
            check_fits(self.generator, saved, _OWNER)
        if saved.numpy is not None:
            restore_generator(self.generator, saved._replace(torch=None), _OWNER)
            self._numpy_state_after_draw = saved.numpy
        self.current = None
        self.next_epoch = epoch
        self._pinned = self._chosen = False
        if offset == 0 and state.get("seed") is None and draws is not Draws.TORCH_GLOBAL:
            self._pending = None
            if saved.torch is not None:
                restore_generator(self.generator, saved._replace(numpy=None), _OWNER)
            return
        self._pending = EpochRecord(
            index=epoch,
            seed=state.get("seed"),
            torch_state=saved.torch,
            draws=draws,
            start=offset,
            restored=True,
        )


def same_value(saved: Any, expected: Any) -> bool:
    """Whether a saved field equals the expected one, type included (``True`` is not ``1``)."""
    return type(saved) is type(expected) and bool(saved == expected)


def state_count(
    state: dict[str, Any], key: str, most: int | None = None, *, where: str = "state"
) -> int:
    """Read a saved count (an epoch, an offset): an int from 0 to ``most``.

    A negative or fractional offset would replay or skip indices, so it is refused here.

    Args:
        state: the saved state.
        key: the count's key.
        most: the largest valid count, if any.
        where: how the message names ``state`` (``"state 2's sampler_state"``).

    Raises:
        ValueError: naming the key, the value and what would be valid (or that it is missing).
    """
    if key not in state:
        raise ValueError(
            f"{where} is missing {key!r}, got {short_repr(state)}; pass a dict returned by "
            "state_dict(), unchanged"
        )
    value = state[key]
    if isinstance(value, np.integer):
        value = int(value)
    if type(value) is not int or value < 0 or (most is not None and value > most):
        valid = "an int >= 0" if most is None else f"an int from 0 to {most}"
        raise ValueError(
            f"{where} {key} must be {valid}, got {value!r}; pass a dict returned by "
            "state_dict(), unchanged"
        )
    return value


def _saved_draws(state: dict[str, Any]) -> Draws:
    """Read a state's ``"draws"`` (absent in older states: keyed, or a torch generator's state).

    Raises:
        ValueError: for an unknown value.
    """
    value = state.get("draws")
    if value is None:
        return Draws.TORCH_STATE if state.get("torch_state") is not None else Draws.KEYED
    try:
        return Draws(value)
    except ValueError as err:
        raise ValueError(
            f"state draws must be one of {[d.value for d in Draws]}, got {value!r}; pass a "
            "state returned by a sampler's state_dict()"
        ) from err
