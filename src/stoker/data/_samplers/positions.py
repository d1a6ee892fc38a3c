"""Elastic resume: a DistributedSampler epoch's progress in global positions, for any world size.

A :class:`~stoker.data.DistributedSampler` epoch has one *global order* that does not depend on
the number of ranks: the epoch's permutation of ``range(length)`` (or the identity), padded by
repeating it from its start to ``total`` positions (or cut to them with ``drop_last``), torch's
rule. Rank ``r`` of ``W`` reads its *share* of it:

* a **plain** share: the global positions ``r, r + W, r + 2W, ...`` (torch's split);
* a **split** share, after an elastic resume: the remainder ``R``, the positions of
  ``range(end)`` (``end = min(length, total)``: padding positions are duplicates of real ones)
  not in the consumed set ``C``, in global order, padded by repeating from its start to a
  multiple of ``W`` (or cut to one with ``drop_last``); the rank reads ``R[r::W]``.

Which positions were consumed is a :class:`PositionSet` (a watermark below which every position
is in the set, plus sorted disjoint ranges above it): O(1) when ranks consume in lockstep. A rank
records its progress in *its own* list (the local indices of its share delivered), and
:func:`share_positions` turns a local set into global positions; :func:`plain_offsets` tells
whether a consumed set is each plain share's prefix (so the same world resumes at offsets, as an
uninterrupted run would). See docs/design/resume.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MAX_MERGED_POSITIONS",
    "PositionSet",
    "Share",
    "epoch_total",
    "plain_offsets",
    "share_positions",
    "split_remainder",
    "world_of",
]

Positions = np.ndarray[Any, np.dtype[np.int64]]

MAX_MERGED_POSITIONS = 1 << 32
"""The largest dataset merge_states takes: it holds a flag per position of the epoch (and a
rank's positions at a time), so a state claiming more is refused before anything is
allocated."""

_FIX = "pass a state returned by DataLoader.state_dict() or stoker.data.merge_states(), unchanged"


def _missing(value: Any, keys: tuple[str, ...]) -> str:
    """`` (missing ['key'])`` for the keys a dict lacks, for a message; else ``""``."""
    missing = [key for key in keys if key not in value] if isinstance(value, dict) else []
    return f" (missing {missing})" if missing else ""


def _normalise(spans: Iterable[tuple[int, int]]) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Merge overlapping or touching half-open spans; a span from 0 becomes the watermark."""
    merged: list[list[int]] = []
    for begin, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    watermark = merged.pop(0)[1] if merged and merged[0][0] == 0 else 0
    return watermark, tuple((begin, end) for begin, end in merged)


@dataclass(frozen=True)
class PositionSet:
    """A set of non-negative ints: all below ``watermark``, and the half-open ``ranges``.

    The ranges are sorted, disjoint, not touching each other and above the watermark (the
    constructors normalise), so equal sets compare equal.
    """

    watermark: int = 0
    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of_spans(cls, spans: Iterable[tuple[int, int]]) -> PositionSet:
        """Return the union of half-open ``(begin, end)`` spans."""
        watermark, ranges = _normalise(spans)
        return cls(watermark, ranges)

    @classmethod
    def of_positions(cls, positions: Any) -> PositionSet:
        """Return the set of the given ints (any order, repeats allowed)."""
        found = np.unique(np.asarray(positions, dtype=np.int64))
        if not found.size:
            return cls()
        breaks = np.flatnonzero(np.diff(found) != 1)
        begins = found[np.concatenate(([0], breaks + 1))]
        ends = found[np.concatenate((breaks, [found.size - 1]))] + 1
        return cls.of_spans(zip(begins.tolist(), ends.tolist(), strict=True))

    @classmethod
    def of_mask(cls, mask: np.ndarray[Any, np.dtype[np.bool_]]) -> PositionSet:
        """Return the set of the positions where ``mask`` is True."""
        return cls.of_positions(np.flatnonzero(mask))

    def spans(self) -> list[tuple[int, int]]:
        """The set as sorted disjoint half-open spans (the watermark's first, if any)."""
        head = [(0, self.watermark)] if self.watermark else []
        return head + list(self.ranges)

    def union(self, other: PositionSet) -> PositionSet:
        """Return the union of the two sets."""
        return PositionSet.of_spans(self.spans() + other.spans())

    def __len__(self) -> int:
        """Return how many positions the set holds."""
        return self.watermark + sum(end - begin for begin, end in self.ranges)

    def count_below(self, end: int) -> int:
        """Return how many positions of the set are below ``end``."""
        inside = sum(max(0, min(stop, end) - begin) for begin, stop in self.ranges if begin < end)
        return min(self.watermark, max(end, 0)) + inside

    def end(self) -> int:
        """Return one past the largest position (0 for the empty set)."""
        return self.ranges[-1][1] if self.ranges else self.watermark

    def mask(self, size: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Return a boolean array of ``size``: True at the positions in the set (below size)."""
        out = np.zeros(size, dtype=bool)
        for begin, end in self.spans():
            out[begin:end] = True
        return out

    def to_json(self) -> dict[str, Any]:
        """Return the set as ``{"watermark": int, "ranges": [[begin, end], ...]}``."""
        return {"watermark": self.watermark, "ranges": [list(span) for span in self.ranges]}

    @classmethod
    def from_json(cls, value: Any, what: str) -> PositionSet:
        """Read :meth:`to_json`'s form, refusing anything else with a ValueError naming ``what``.

        Args:
            value: the saved form.
            what: the state field it was read from, for the message.
        """
        expected = (
            "{'watermark': int >= 0, 'ranges': [[begin, end], ...]} with sorted, disjoint "
            "ranges above the watermark, begin < end"
        )
        if not isinstance(value, dict) or set(value) != {"watermark", "ranges"}:
            missing = _missing(value, ("watermark", "ranges"))
            raise ValueError(f"{what} must be {expected}{missing}, got {value!r}; {_FIX}")
        watermark, ranges = value["watermark"], value["ranges"]
        spans: list[tuple[int, int]] = []
        ok = type(watermark) is int and watermark >= 0 and isinstance(ranges, list)
        previous = watermark if ok else 0
        for span in ranges if ok else ():
            if (
                not isinstance(span, list)
                or len(span) != 2
                or not all(type(x) is int for x in span)
                or not previous < span[0] < span[1]
            ):
                ok = False
                break
            spans.append((span[0], span[1]))
            previous = span[1]
        if not ok:
            raise ValueError(f"{what} must be {expected}, got {value!r}; {_FIX}")
        return cls(watermark, tuple(spans))


@dataclass(frozen=True)
class Share:
    """What a split share is cut from: the epoch's consumed set and its number of positions.

    Attributes:
        total: the epoch's global positions (``total_size`` of the world that began it).
        consumed: the positions consumed before the split.
        ranks: the number of ranks that began the epoch (``total`` is their ``total_size``);
            None when not known.
    """

    total: int
    consumed: PositionSet
    ranks: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Return ``{"total": int, "consumed": PositionSet, "ranks": int}`` as JSON values."""
        saved = {"total": self.total, "consumed": self.consumed.to_json()}
        return saved if self.ranks is None else {**saved, "ranks": self.ranks}

    @classmethod
    def from_json(cls, value: Any, what: str, *, length: int, drop_last: bool) -> Share:
        """Read :meth:`to_json`'s form for an epoch of ``length`` samples (else a ValueError).

        ``total`` must be the ``total_size`` of ``ranks`` ranks for that epoch (torch's rule,
        :func:`epoch_total`); a share saved before ``ranks`` was recorded must have a total
        that some number of ranks gives, and takes that number.

        Args:
            value: the saved form.
            what: the state field it was read from, for the message.
            length: the dataset's length.
            drop_last: the sampler's ``drop_last``.
        """
        if not isinstance(value, dict) or set(value) - {"ranks"} != {"total", "consumed"}:
            missing = _missing(value, ("total", "consumed"))
            raise ValueError(
                f"{what} must be {{'total': int, 'consumed': {{...}}, 'ranks': int}}{missing}, "
                f"got {value!r}; {_FIX}"
            )
        total = value["total"]
        if type(total) is not int or total < 0:
            raise ValueError(f"{what}'s total must be an int >= 0, got {total!r}; {_FIX}")
        ranks = value.get("ranks") if "ranks" in value else world_of(total, length, drop_last)
        if "ranks" in value and (type(ranks) is not int or ranks < 1):
            raise ValueError(
                f"{what}'s ranks (the world that began the epoch) must be an int >= 1, got "
                f"{ranks!r}; {_FIX}"
            )
        expected = None if ranks is None else epoch_total(length, ranks, drop_last)
        if expected != total:
            world = "some number of ranks" if ranks is None else f"{ranks} rank(s)"
            wanted = "" if expected is None else f"{expected}, "
            raise ValueError(
                f"{what}'s total must be {wanted}the positions of an epoch of {length} samples "
                f"on {world} (drop_last={drop_last}), got {total!r}; {_FIX}"
            )
        consumed = PositionSet.from_json(value["consumed"], f"{what}'s consumed")
        if consumed.end() > total:
            raise ValueError(
                f"{what}'s consumed must lie in range({total}), got positions up to "
                f"{consumed.end() - 1}; {_FIX}"
            )
        return cls(total, consumed, ranks)


def world_of(total: int, length: int, drop_last: bool) -> int | None:
    """Return a number of ranks whose epoch of ``length`` samples has ``total`` positions.

    None when no world gives ``total``. A total that any world gives, the world of ``total``
    ranks gives too (or, for none with ``drop_last``, a world larger than the dataset).
    """
    world = total if total > 0 else (length + 1 if drop_last else 1)
    return world if epoch_total(length, world, drop_last) == total else None


def epoch_total(length: int, world: int, drop_last: bool) -> int:
    """Return an epoch's global positions for ``world`` ranks: torch's ``total_size``.

    ``length`` rounded up to a multiple of ``world`` (padding), or down with ``drop_last``.
    """
    if drop_last and length % world != 0:
        return math.ceil((length - world) / world) * world
    return math.ceil(length / world) * world


def split_remainder(
    share: Share, length: int, world: int, drop_last: bool
) -> tuple[Positions, Positions]:
    """Return ``(remainder split list, dropped)``: the remainder ``R`` as ``world`` ranks read it.

    ``R`` is ``range(min(length, total))`` without the consumed positions, in order; padded by
    repeating from its start to a multiple of ``world``, or, with ``drop_last``, cut to one (the
    cut positions are returned as ``dropped``). Rank ``r`` reads ``split[r::world]``.
    """
    end = min(length, share.total)
    remainder = np.flatnonzero(~share.consumed.mask(end)).astype(np.int64)
    dropped = remainder[:0]
    if drop_last:
        keep = remainder.size - remainder.size % world
        remainder, dropped = remainder[:keep], remainder[keep:]
    elif remainder.size:
        remainder = np.resize(remainder, math.ceil(remainder.size / world) * world)
    return remainder, dropped


def share_positions(
    share: Share | None, length: int, total: int, world: int, rank: int, *, drop_last: bool
) -> Positions:
    """Return the global positions rank ``rank`` of ``world`` reads, in its order.

    ``share`` None is the plain share of an epoch of ``total`` positions; else the split share.
    """
    if share is None:
        return np.arange(rank, total, world, dtype=np.int64)
    split, _ = split_remainder(share, length, world, drop_last)
    return split[rank::world]


def plain_offsets(consumed: PositionSet, total: int, world: int) -> list[int] | None:
    """Return each rank's offset when ``consumed`` is a prefix of every plain share, else None.

    Args:
        consumed: global positions consumed, padding positions included.
        total: the epoch's positions, a multiple of ``world``.
        world: the number of ranks of the plain shares.
    """
    if consumed.end() > total or total % world:
        return None
    grid = consumed.mask(total).reshape(total // world, world)  # column r: rank r's share
    offsets = grid.sum(axis=0)
    prefix = np.arange(total // world)[:, None] < offsets[None, :]
    if not np.array_equal(grid, prefix):
        return None
    return [int(x) for x in offsets]
