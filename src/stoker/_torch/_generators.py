"""``torch.Generator`` draws as torch's samplers and DataLoader make them, and its state.

Seeds, permutations, ``randint`` and ``multinomial`` drawn exactly as torch draws them, torch's
global generator, new generators, and a generator's state as base64 text for JSON.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from stoker._torch._detect import require

__all__ = [
    "SEED_MASK",
    "default_generator",
    "draw_seed",
    "generator_state",
    "multinomial",
    "new_generator",
    "randint",
    "randperm",
    "set_generator_state",
]

SEED_MASK = (1 << 63) - 1


def draw_seed(generator: Any) -> int:
    """Draw a seed from a ``torch.Generator`` as torch's DataLoader draws its base seed."""
    torch = require()
    value = torch.empty((), dtype=torch.int64).random_(generator=generator).item()
    return int(value) & SEED_MASK


def randperm(n: int, generator: Any) -> list[int]:
    """``torch.randperm(n, generator=generator)`` as a list."""
    order: list[int] = require().randperm(n, generator=generator).tolist()
    return order


def randint(high: int, size: int, generator: Any) -> list[int]:
    """``size`` draws of ``torch.randint(high, ..., dtype=int64)`` as a list."""
    torch = require()
    drawn: list[int] = torch.randint(
        high=high, size=(size,), dtype=torch.int64, generator=generator
    ).tolist()
    return drawn


def multinomial(
    weights: np.ndarray[Any, Any], num_samples: int, replacement: bool, generator: Any
) -> np.ndarray[Any, Any]:
    """``torch.multinomial`` over NumPy weights; the drawn indices as a NumPy array."""
    torch = require()
    drawn = torch.multinomial(
        torch.from_numpy(weights), num_samples, replacement, generator=generator
    )
    return np.asarray(drawn.numpy())


# -- torch's global generator, and generators standing in for it (generator=None) -----------
def default_generator() -> Any:
    """Torch's global generator (``torch.default_generator``), the one ``manual_seed`` seeds."""
    return require().default_generator


def new_generator(seed: int | None = None, state: str | None = None) -> Any:
    """A new CPU ``torch.Generator``: seeded with ``seed``, or set to a :func:`generator_state`.

    ``new_generator(seed)`` is what torch's RandomSampler makes from the seed it draws when it
    has no generator; ``new_generator(state=...)`` replays draws a generator made from that
    state, without touching the generator the state was taken from.
    """
    generator = require().Generator()
    if seed is not None:
        generator.manual_seed(seed)
    if state is not None:
        set_generator_state(generator, state)
    return generator


def generator_state(generator: Any) -> str:
    """A ``torch.Generator``'s state as ASCII text (base64 of its state bytes), for JSON."""
    raw = generator.get_state().numpy().tobytes()
    return base64.b64encode(raw).decode("ascii")


def set_generator_state(generator: Any, text: str) -> None:
    """Restore a state made by :func:`generator_state` into ``generator``.

    Raises:
        ValueError: if ``text`` is not base64, or torch rejects the bytes as a state.
    """
    torch = require()
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as err:
        raise ValueError(
            f"torch generator state must be base64 text, got {text[:40]!r}; "
            "pass a state saved by state_dict()"
        ) from err
    try:
        generator.set_state(torch.from_numpy(np.frombuffer(raw, dtype=np.uint8).copy()))
    except RuntimeError as err:
        raise ValueError(
            f"torch generator state is not a valid state ({len(raw)} bytes): {err}; "
            "pass a state saved by state_dict() with the same kind of generator"
        ) from err
