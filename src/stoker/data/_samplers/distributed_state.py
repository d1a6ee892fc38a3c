"""A DistributedSampler's saved position: the keys its states hold, and reading them back.

One rank's state records its position in its own list (``offset``, ``delivered`` ranges, and
the ``share`` of a split epoch its list is cut from); a merged state (``merge_states``)
records the epoch's consumed positions. Both :class:`~stoker.data.DistributedSampler` and
:func:`stoker.data.merge_states` read them here, checking every field against the state's
own configuration (its length, world, rank and ``drop_last``) before anything is computed.
See docs/design/resume.md.
"""

from __future__ import annotations

import math
from typing import Any

from stoker.data._errors import short_repr
from stoker.data._samplers.epochs import state_count
from stoker.data._samplers.positions import PositionSet, Share, epoch_total

__all__ = [
    "MERGED_KEYS",
    "MERGED_SAMPLER_KEYS",
    "POSITION_KEYS",
    "RANK_KEYS",
    "check_merged_keys",
    "list_length",
    "read_position",
    "saved_draws",
]


MERGED_KEYS = ("ranks", "total", "resharded", "consumed")
"""The keys of a merged state's ``merged`` (see :func:`stoker.data.merge_states`)."""
MERGED_SAMPLER_KEYS = (
    "version",
    "sampler",
    "length",
    "shuffle",
    "drop_last",
    "seed",
    "epoch",
    "draws",
    "merged",
)
"""The keys of a merged DistributedSampler state, each written by merge_states."""


def check_merged_keys(state: dict[str, Any]) -> None:
    """Raise unless a merged sampler state holds exactly the keys merge_states writes."""
    missing = [key for key in MERGED_SAMPLER_KEYS if key not in state]
    extra = sorted(str(key) for key in state if key not in MERGED_SAMPLER_KEYS)
    if missing or extra:
        what = f"is missing {missing}" if missing else f"holds {extra}, which it never writes"
        raise ValueError(
            f"a merged DistributedSampler state {what}: merge_states() writes the keys "
            f"{list(MERGED_SAMPLER_KEYS)}, got {sorted(str(key) for key in state)}; pass its "
            "result unchanged"
        )


RANK_KEYS = (
    "version",
    "sampler",
    "length",
    "num_replicas",
    "rank",
    "shuffle",
    "drop_last",
    "seed",
    "epoch",
    "offset",
    "finished",
)
"""The keys every DistributedSampler state of one rank holds, in every format of version 1."""
POSITION_KEYS = ("delivered", "share")
"""A rank's position past its offset: absent in states saved before elastic resume, whose
position is a prefix of the rank's plain share."""


def saved_draws(state: dict[str, Any], where: str = "state") -> str:
    """Read a state's ``draws``: ``"torch"`` or ``"keyed"``.

    Absent in states saved before torch orders: ``"keyed"``. Those have no ``delivered`` or
    ``share`` either (both came later), so a state with them needs ``draws``.
    """
    if "draws" not in state and any(key in state for key in POSITION_KEYS):
        raise ValueError(
            f"{where} is missing 'draws' (a state holding {list(POSITION_KEYS)} was saved with "
            f"it), got {short_repr(state)}; pass a dict returned by state_dict(), unchanged"
        )
    draws = state.get("draws", "keyed")
    if draws not in ("torch", "keyed") or not isinstance(draws, str):
        raise ValueError(
            f"{where} draws must be 'torch' or 'keyed', got {draws!r}; pass a dict returned by "
            "state_dict(), unchanged"
        )
    return draws


def list_length(length: int, world: int, drop_last: bool, share: Share | None) -> int:
    """The length of a rank's list, without computing it: its plain share or its split part.

    Consumed padding positions (past the dataset's length) are not in a split's remainder.
    """
    if share is None:
        return epoch_total(length, world, drop_last) // world
    end = min(length, share.total)
    remainder = end - share.consumed.count_below(end)
    return remainder // world if drop_last else math.ceil(remainder / world)


def read_position(state: dict[str, Any], where: str = "state") -> tuple[PositionSet, Share | None]:
    """Read one rank's saved position (offset, delivered ranges, share) and check it.

    ``state``'s configuration (length, num_replicas, rank, drop_last) must be checked before:
    the position is checked against it. The share's total must be the epoch's, and the
    position must lie in the rank's list; a state with ``finished`` true has offset 0.

    Args:
        state: a DistributedSampler state of one rank.
        where: how messages name the state (``"state 2's sampler_state"``).

    Raises:
        ValueError: naming the field, its value and what would be valid.
    """
    missing = [key for key in RANK_KEYS if key not in state]
    if missing:
        raise ValueError(
            f"{where} is missing {missing} (a DistributedSampler state of one rank holds "
            f"{list(RANK_KEYS)}), got {short_repr(state)}; pass a dict returned by state_dict(), "
            "unchanged"
        )
    present = [key for key in POSITION_KEYS if key in state]
    if len(present) == 1:
        other = next(key for key in POSITION_KEYS if key not in state)
        raise ValueError(
            f"{where} is missing {other!r} (it holds {present[0]!r}: a state holds both, or "
            f"neither when saved before elastic resume), got {short_repr(state)}; pass a dict "
            "returned by state_dict(), unchanged"
        )
    finished = state["finished"]
    if not isinstance(finished, bool):
        raise ValueError(
            f"{where} finished must be a bool, got {finished!r}; pass a dict returned by "
            "state_dict(), unchanged"
        )
    offset = state_count(state, "offset", where=where)
    delivered = state.get("delivered", [])
    done = PositionSet.from_json({"watermark": offset, "ranges": delivered}, f"{where}'s delivered")
    saved = state.get("share")
    length, drop_last = state["length"], state["drop_last"]
    share = (
        None
        if saved is None
        else Share.from_json(saved, f"{where}'s share", length=length, drop_last=drop_last)
    )
    listed = list_length(length, state["num_replicas"], drop_last, share)
    if done.end() > listed or (finished and (done.end() or share is not None)):
        valid = "offset 0, delivered [] and share None with finished" if finished else None
        raise ValueError(
            f"{where} offset and delivered must lie in range({listed}), the rank's list"
            f"{'' if valid is None else f' ({valid})'}, got offset {offset!r}, delivered "
            f"{short_repr(delivered)}; pass a dict returned by state_dict(), unchanged"
        )
    return done, share
