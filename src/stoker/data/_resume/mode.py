"""The resume mode protocol: how one kind of loader state is checked, loaded, opened and saved.

A loader state's ``"mode"`` says how the loader that saved it puts its index sampler (or its
IterableDataset) back. Each mode is one class: the map-style ones in
:mod:`stoker.data._resume.samplers` (``"offset"``, its distributed form and ``"merged"``
form, ``"replay"``), the iterable ones in :mod:`stoker.data._resume.iterable` (``"dataset"``,
``"worker_states"``, ``"fast_forward"``, ``"merged"`` shards). The resume tracker picks, once
per loader plan, the mode its loader saves in and the modes it accepts
(:func:`stoker.data._resume.tracker.modes_for`), and delegates to them; it checks only what
every state holds (the header, the loader's description, epoch, batches, seeds, generator).

What each method of a mode checks sits beside the save that writes it.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Protocol

from stoker._checks import check_int
from stoker.data._errors import short_repr
from stoker.data._plan import LoaderPlan
from stoker.data._resume.progress import EpochProgress, SavePoint

__all__ = [
    "FINISHED",
    "FIX",
    "SEED_MAX",
    "BaseMode",
    "ResumeMode",
    "apply_state",
    "bad",
    "int_field",
    "require",
]

FINISHED = 1 << 62
"""An offset past any epoch's end: the state describes the next epoch."""

SEED_MAX = (1 << 64) - 1
FIX = "pass the dict returned by DataLoader.state_dict(), unchanged"


class ResumeMode(Protocol):
    """One kind of loader state (its ``"mode"``): check it, load it, open an epoch, save."""

    name: ClassVar[str]
    """The state's ``"mode"``."""

    def fields(self, plan: LoaderPlan) -> dict[str, Any]:
        """The fields a state in this mode must match to be loaded into ``plan``'s loader."""

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """Raise a ValueError naming the first of this mode's fields that cannot be right.

        ``batches`` is the state's ``batches``, already checked.
        """

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """Apply a checked ``sampler_state`` to the sampler or dataset of ``plan``."""

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """Start ``progress`` where the loaded state ``pending`` stands.

        Returns:
            how many items of the index stream to draw and drop before the epoch goes on.
        """

    def begin(self, plan: LoaderPlan, progress: EpochProgress) -> None:
        """Note what this mode's save needs as an epoch opens (the saving mode only)."""

    def ended(self, plan: LoaderPlan, progress: EpochProgress) -> bool:
        """Whether the epoch is over by this mode's own account (beyond ``finished``)."""

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """Fill in ``state``'s mode, ``sampler_state`` (and ``batches`` where it differs)."""

    def save_loaded(self, plan: LoaderPlan, pending: dict[str, Any]) -> dict[str, Any]:
        """The state to save while a state loaded in this mode was not iterated yet."""


class BaseMode:
    """What most modes do: nothing to resume, begin or check beyond the common fields."""

    name: ClassVar[str] = ""

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """Nothing beyond the common fields."""

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """Nothing to load."""

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """Resume at the state's batch count, drawing nothing again."""
        return 0

    def begin(self, plan: LoaderPlan, progress: EpochProgress) -> None:
        """Nothing to note."""

    def ended(self, plan: LoaderPlan, progress: EpochProgress) -> bool:
        """Over only when the iterator said so."""
        return False

    def save_loaded(self, plan: LoaderPlan, pending: dict[str, Any]) -> dict[str, Any]:
        """The loaded state itself, still true: nothing was iterated since."""
        return copy.deepcopy(pending)


def bad(key: str, value: Any, expected: str) -> ValueError:
    """The error for a state field ``key`` holding ``value`` where ``expected`` belongs."""
    return ValueError(f"state's {key} must be {expected}, got {value!r}; {FIX}")


def require(container: dict[str, Any], key: str, where: str) -> Any:
    """Return ``container[key]``; a missing key is a ValueError showing what was given."""
    if key not in container:
        raise ValueError(f"{where} is missing {key!r}, got {short_repr(container)}; {FIX}")
    return container[key]


def int_field(
    value: Any, key: str, *, maximum: int | None = None, allow_none: bool = False
) -> int | None:
    """Return a state field that must be an int in ``[0, maximum]`` (or None when allowed)."""
    none = " or None" if allow_none else ""
    upper = "" if maximum is None else f" and <= {maximum}"
    expected = f"an int >= 0{upper}{none}"
    try:
        number: int | None = check_int(value, key, minimum=0, allow_none=allow_none)
    except (TypeError, ValueError) as err:
        raise bad(key, value, expected) from err
    if number is not None and maximum is not None and number > maximum:
        raise bad(key, value, expected)
    return number


def apply_state(load: Any, saved: Any) -> None:
    """Call ``load(saved)``; its refusal becomes a ValueError naming ``sampler_state``."""
    try:
        load(saved)
    except (TypeError, ValueError, KeyError, IndexError, StopIteration) as err:
        raise ValueError(
            f"state's sampler_state must be a state this loader's sampler accepts, got "
            f"{short_repr(saved, 300)}: {err}; {FIX}"
        ) from err
