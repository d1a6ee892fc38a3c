"""The ``generator=`` argument: checking it, drawing seeds from it, keyed streams, its state.

Every sampler, :func:`random_split` and the loader accept ``generator=`` as one of:

* ``None``: every draw comes from the program's *global* generator, so a program seeded once
  (``torch.manual_seed(s)`` or ``np.random.seed(s)``) is reproducible, as a torch program is.
  Which global generator is decided at each draw: torch's when the program has imported torch
  (drawn exactly as torch's DataLoader and samplers draw, so orders, base seeds and the state
  left for the rest of the program equal torch's), otherwise NumPy's legacy global generator
  (``np.random.seed``); see :func:`draw_global_seed`;
* an ``int`` seed: reproducible; samplers key each epoch by ``(seed, epoch)`` so the order of
  any epoch can be recomputed without replaying earlier ones;
* a :class:`numpy.random.Generator`: drawn from (its state advances, as a torch generator's does);
* a ``torch.Generator``: drawn from with torch itself, so orders equal torch's for the same
  generator state. Only :mod:`stoker._torch` touches it; stoker never imports torch on its own.

Seeds are non-negative integers below ``2**63`` so that they fit an ``int64`` and
``torch.manual_seed``. :func:`make_rng` turns a tuple of ints (``(seed, epoch, index)``) into a
NumPy generator, so any stream can be recomputed from its key. :class:`GeneratorState` is the one
form a generator's state takes in saved states (the loader's and the samplers'):
:func:`save_generator` takes it, :func:`restore_generator` puts it back.

The epochs of a sampler (which seed each epoch uses, how far it got) are kept by
:mod:`stoker.data._samplers.epochs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from stoker import _torch

__all__ = [
    "SEED_MASK",
    "GeneratorState",
    "check_fits",
    "check_generator",
    "derive_seed",
    "draw_global_seed",
    "draw_seed",
    "make_rng",
    "resolve_generator",
    "restore_generator",
    "save_generator",
]

SEED_MASK = _torch.SEED_MASK
"""Seeds handed out by this module are in ``range(0, SEED_MASK + 1)`` (torch's mask too)."""

_U64 = (1 << 64) - 1

_VALID = "None, an int seed, a numpy.random.Generator or a torch.Generator"


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
    if _torch.is_generator(generator):
        return generator
    raise TypeError(
        f"{name} must be {_VALID}, got {generator!r} of type {type(generator).__name__}; "
        "pass e.g. an int seed for reproducible results or None for the global generator"
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


def draw_global_seed() -> int:
    """Draw a seed from the program's global generator (what ``generator=None`` means).

    When the program has imported torch: ``torch.empty((), dtype=torch.int64).random_()`` on
    torch's default generator, the draw torch's DataLoader makes for its base seed and its
    RandomSampler for its permutation, so ``torch.manual_seed(s)`` fixes it. Otherwise one
    draw of ``numpy.random.randint`` from NumPy's legacy global generator, so
    ``np.random.seed(s)`` fixes it. Either way the global generator advances by one draw.

    Returns:
        An int in ``range(0, 2**63)``.
    """
    if _torch.loaded() is not None:
        return _torch.draw_seed(None)
    return int(np.random.randint(0, SEED_MASK + 1, dtype=np.int64))


def draw_seed(generator: object) -> int:
    """Draw one seed from ``generator``.

    Args:
        generator: ``None`` (the global generator, see :func:`draw_global_seed`), an int (a
            seed derived from it; the same every call, resolve it first with
            :func:`resolve_generator` for a sequence), a
            :class:`numpy.random.Generator` (advances it) or a ``torch.Generator`` (advances it
            the way torch's DataLoader draws its base seed, so the value equals torch's).

    Returns:
        An int in ``range(0, 2**63)``.

    Raises:
        TypeError: when ``generator`` is not one of the accepted kinds.
    """
    checked = check_generator(generator)
    if checked is None:
        return draw_global_seed()
    if isinstance(checked, int):
        return derive_seed(checked)
    if isinstance(checked, np.random.Generator):
        return int(checked.integers(0, SEED_MASK, endpoint=True, dtype=np.int64))
    return _torch.draw_seed(checked)


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


class GeneratorState(NamedTuple):
    """A generator's state, ready for JSON: one field is set (its generator's kind), or none.

    Attributes:
        numpy: a :class:`numpy.random.Generator`'s ``bit_generator.state`` dict.
        torch: a ``torch.Generator``'s state as base64 text (see :mod:`stoker._torch`).
    """

    numpy: Mapping[str, Any] | None = None
    torch: str | None = None


def save_generator(generator: Any) -> GeneratorState:
    """Return ``generator``'s state (empty for None, an int, or anything without a state)."""
    if isinstance(generator, np.random.Generator):
        return GeneratorState(numpy=generator.bit_generator.state)
    if _torch.is_generator(generator):
        return GeneratorState(torch=_torch.generator_state(generator))
    return GeneratorState()


def check_fits(generator: Any, saved: GeneratorState, owner: str) -> None:
    """Raise when ``saved`` is the state of another kind of generator than ``generator``.

    Args:
        generator: the generator the state would be restored into.
        saved: the saved state.
        owner: what owns the generator, for the message (``"this sampler"``).

    Raises:
        ValueError: when the kinds differ.
    """
    if saved.numpy is not None and not isinstance(generator, np.random.Generator):
        kind = "numpy.random.Generator"
    elif saved.torch is not None and not _torch.is_generator(generator):
        kind = "torch.Generator"
    else:
        return
    raise ValueError(
        f"state does not fit {owner}: it holds a {kind} state but the generator is "
        f"{generator!r}; pass the same kind of generator"
    )


def restore_generator(generator: Any, saved: GeneratorState, owner: str) -> None:
    """Put a state made by :func:`save_generator` back into ``generator``.

    Raises:
        ValueError: when the state belongs to another kind of generator, or a torch state is
            not valid.
    """
    check_fits(generator, saved, owner)
    if saved.numpy is not None:
        generator.bit_generator.state = saved.numpy
    if saved.torch is not None:
        _torch.set_generator_state(generator, saved.torch)
