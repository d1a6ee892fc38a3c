"""DistributedSampler: each of ``num_replicas`` ranks visits its own share of a dataset.

Semantics follow ``torch.utils.data.distributed`` (torch 2.13): the (optionally shuffled) index
list is padded by repeating it from the start until it divides evenly by ``num_replicas``
(or cut with ``drop_last``), then rank ``r`` takes every ``num_replicas``-th index starting at
``r``. The shuffle of epoch ``e`` is torch's when the program has imported torch
(``torch.randperm`` with a generator seeded with ``seed + e``, so the indices equal torch's),
else a NumPy permutation keyed by ``(seed, e, tag)`` (a tag of this sampler's own); either way
every rank computes the same order without communicating, any epoch can be recomputed on its
own, and iteration can start at an offset (see :meth:`DistributedSampler.load_state_dict`; a
state records which of the two orders it was saved with).

``num_replicas`` and ``rank`` come from the arguments, else from ``torch.distributed`` when the
user has already imported torch and initialised a process group, else from the ``WORLD_SIZE``
and ``RANK`` environment variables (as set by ``torchrun`` and most launchers); the resolution
is :func:`stoker._checks.resolve_world`, shared with the tensorboard writer's ranks.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any, TypeVar, cast

import numpy as np

from stoker import _torch
from stoker._checks import check_int, resolve_world
from stoker.data._errors import ValueRuntimeError, short_repr
from stoker.data._generator import make_rng
from stoker.data._samplers.base import Sampler, pieces
from stoker.data._samplers.distributed_state import (
    MERGED_KEYS,
    check_merged_keys,
    list_length,
    read_position,
    saved_draws,
)
from stoker.data._samplers.epochs import STATE_VERSION, same_value, state_count
from stoker.data._samplers.positions import (
    PositionSet,
    Share,
    epoch_total,
    plain_offsets,
    share_positions,
)

__all__ = ["WORLD_HINT", "DistributedSampler", "check_rank"]

T_co = TypeVar("T_co", covariant=True)
Positions = np.ndarray[Any, np.dtype[np.int64]]

_SHUFFLE_TAG = 0x4449_5354


WORLD_HINT = "pass ints, or fix WORLD_SIZE and RANK in the launcher's environment"


def check_rank(rank: int, num_replicas: int) -> None:
    """Raise torch's ValueError unless ``rank`` is in ``[0, num_replicas)``."""
    if rank >= num_replicas or rank < 0:
        raise ValueError(
            f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}] "
            f"for num_replicas={num_replicas}"
        )


def _resolve_world(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    """Return ``(num_replicas, rank)`` as DistributedSampler finds them, with torch's errors."""
    checked: int | None = check_int(num_replicas, "num_replicas", allow_none=True, hint=WORLD_HINT)
    if checked is not None and checked <= 0:
        raise ValueError(f"num_replicas must be a positive int, got {checked!r}")
    found_rank, found_size = resolve_world(rank, checked, hint=WORLD_HINT, check_order=False)
    if found_size is None or found_rank is None:
        missing = " and ".join(
            name
            for name, value in (("num_replicas", found_size), ("rank", found_rank))
            if value is None
        )
        # torch asks torch.distributed, which raises this ValueError without a process group
        raise ValueRuntimeError(
            "Default process group has not been initialized, please make sure to call "
            f"init_process_group. DistributedSampler could not determine {missing}: pass "
            "num_replicas= and rank=, "
            "initialise torch.distributed (after importing torch), or set the WORLD_SIZE and "
            "RANK environment variables"
        )
    check_rank(found_rank, found_size)
    return found_size, found_rank


class DistributedSampler(Sampler[T_co]):
    """Restricts loading to one rank's share of the dataset.

    Use it with :class:`~stoker.data.DataLoader` in each process and call :meth:`set_epoch`
    at the start of every epoch (before creating the loader's iterator) so the shuffle differs
    between epochs; without it every epoch has the same order.

    Args:
        dataset: a sized dataset (only its length is used).
        num_replicas: the number of ranks; see the module docstring for the default.
        rank: this process's rank in ``[0, num_replicas)``; see the module docstring.
        shuffle: shuffle the indices each epoch (the same way on every rank).
        seed: the shuffle's seed; it must be the same on every rank.
        drop_last: drop the tail so every rank gets the same number of distinct indices,
            instead of padding with indices from the start.

    Raises:
        RuntimeError: when ``num_replicas`` or ``rank`` cannot be determined.
        ValueError: when ``rank`` is outside ``[0, num_replicas)`` or an environment variable
            is not an int.
    """

    def __init__(  # noqa: PLR0917  (torch 2.13 signature, positional arguments kept)
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.num_replicas, self.rank = _resolve_world(num_replicas, rank)
        self.dataset = dataset
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed: int = check_int(seed, "seed", hint="pass the same int seed on every rank")
        self.total_size = epoch_total(len(dataset), self.num_replicas, self.drop_last)
        self.num_samples = self.total_size // self.num_replicas
        self._progress: tuple[int, Iterator[int]] = (0, iter([]))
        # A loaded position in the loaded epoch: the local indices of this rank's list already
        # delivered, and the share of the epoch the list is (None: torch's plain split).
        self._loaded: tuple[PositionSet, Share | None] | None = None
        # The iteration under way: its share, what it skipped, and the local index of each
        # item it yields (None: the items follow on from the skipped prefix).
        self._iteration: tuple[Share | None, PositionSet, Positions | None] | None = None
        self._draws: str | None = None  # fixed by a loaded state; else torch's when imported

    @property
    def _order(self) -> str:
        """``"torch"`` (torch.randperm, as torch's sampler) or ``"keyed"`` (NumPy)."""
        if self._draws is not None:
            return self._draws
        return "torch" if _torch.loaded() is not None else "keyed"

    @property
    def _offset(self) -> int:
        end, remaining = self._progress
        return end - operator.length_hint(remaining)

    def _rank_indices(self, share: Share | None) -> np.ndarray[Any, np.dtype[np.int64]]:
        """This rank's dataset indices for the current epoch: its plain or split share."""
        length = len(self.dataset)
        if self.shuffle and self._order == "torch":
            generator = _torch.new_generator(seed=self.seed + self.epoch)
            order = np.asarray(_torch.randperm(length, generator), dtype=np.int64)
        elif self.shuffle:
            order = make_rng(self.seed, self.epoch, _SHUFFLE_TAG).permutation(length)
        else:
            order = np.arange(length, dtype=np.int64)
        if share is not None:
            positions = share_positions(
                share, length, share.total, self.num_replicas, self.rank, drop_last=self.drop_last
            )
            return order[positions]
        # np.resize repeats the array cyclically: torch's padding from the start, or a cut.
        padded = np.resize(order, self.total_size) if length else order[: self.total_size]
        return padded[self.rank : self.total_size : self.num_replicas]

    def __iter__(self) -> Iterator[T_co]:
        """Yield this rank's indices for the current epoch (the rest of it, once resumed)."""
        loaded, self._loaded = self._loaded, None
        done, share = loaded if loaded is not None else (PositionSet(), None)
        indices = self._rank_indices(share)
        local: Positions | None = None
        if done.ranges:
            local = np.flatnonzero(~done.mask(len(indices))).astype(np.int64)
            indices = indices[local]
        else:
            indices = indices[done.watermark :]
        self._iteration = (share, done, local)
        position = 0
        self._progress = (position, iter([]))
        for piece in pieces(indices):
            position += len(piece)
            self._progress = (position, iter(piece))
            yield from cast("Iterator[T_co]", self._progress[1])

    def __len__(self) -> int:
        """Return the number of indices per rank and epoch."""
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, which (with ``seed``) determines the shuffle; call it every epoch.

        Args:
            epoch: the epoch number; use the same value on every rank.
        """
        if epoch != self.epoch:
            self._loaded = None  # a loaded position belongs to the loaded epoch only
        self.epoch = epoch
        self._progress = (0, iter([]))

    @property
    def stream_length(self) -> int | None:
        """The number of indices the iteration under way yields (None before it starts)."""
        if self._iteration is None:
            return None
        share, done, _ = self._iteration
        listed = list_length(len(self.dataset), self.num_replicas, self.drop_last, share)
        return max(0, listed - len(done))

    def _local_done(self, delivered: PositionSet) -> PositionSet:
        """This rank's list indices delivered: the skipped ones plus the iteration's items."""
        if self._iteration is None:
            return PositionSet()
        _, done, local = self._iteration
        stream = self.stream_length or 0
        if local is None:
            shifted = [
                (b + done.watermark, min(e, stream) + done.watermark)
                for b, e in delivered.spans()
                if b < stream
            ]
            return done.union(PositionSet.of_spans(shifted))
        items = delivered.mask(len(local))
        return done.union(PositionSet.of_positions(local[items]))

    def _position_state(self, done: PositionSet, share: Share | None) -> dict[str, Any]:
        state = self.state_dict_base()
        state["offset"] = done.watermark
        state["delivered"] = [list(span) for span in done.ranges]
        state["share"] = None if share is None else share.to_json()
        return state

    def state_dict_base(self) -> dict[str, Any]:
        """The configuration part of :meth:`state_dict`: everything but the position."""
        return {
            "version": STATE_VERSION,
            "sampler": "DistributedSampler",
            "length": len(self.dataset),
            "num_replicas": self.num_replicas,
            "rank": self.rank,
            "shuffle": self.shuffle,
            "drop_last": self.drop_last,
            "seed": self.seed,
            "epoch": self.epoch,
            "offset": 0,
            "finished": False,
            "draws": self._order,
            "delivered": [],
            "share": None,
        }

    def state_dict(self) -> dict[str, Any]:
        """Return a small JSON-serialisable state: epoch, seed, position and configuration.

        The position is ``offset`` (this rank's indices yielded, a prefix of its list),
        ``delivered`` (more of its list's indices above the offset, as ``[begin, end]``
        ranges, after an out-of-order resume) and ``share`` (null: torch's split of the epoch;
        else the consumed part of the epoch this rank's list is split from, after an elastic
        resume; see docs/design/resume.md).
        """
        if self._loaded is not None:
            return self._position_state(*self._loaded)
        yielded = self._offset
        stream = self.stream_length
        if self._iteration is None or stream is None:
            return self.state_dict_base()
        if yielded >= stream > 0:
            state = self.state_dict_base()
            state["finished"] = True
            return state
        return self._position_state(self._local_done(PositionSet(yielded)), self._iteration[0])

    def resume_state(
        self, consumed: int | None, delivered: PositionSet | None = None
    ) -> dict[str, Any]:
        """Return the state as if only some indices of this epoch had been taken.

        A DataLoader saves this way, counting the indices of the batches it delivered. After
        the epoch's end the epoch is kept (the user's ``set_epoch`` picks the next one, as in
        an uninterrupted run) and the offset is 0.

        Args:
            consumed: ``None`` (the epoch has not begun: a loaded position is kept), a count
                of indices at or past the epoch's end, or the indices of the iteration under
                way taken, a prefix.
            delivered: the positions of the iteration's indices taken, when they are not a
                prefix (batches delivered out of order); ``consumed`` then only says whether
                the epoch has begun.
        """
        if self._loaded is not None:  # loaded, and its iteration has not begun
            return self._position_state(*self._loaded)
        if consumed is None:
            return self.state_dict_base()
        stream = self.stream_length
        if stream is None or (delivered is None and consumed >= stream):
            return self.state_dict_base()  # the epoch is over: the next one starts afresh
        taken = PositionSet(consumed) if delivered is None else delivered
        return self._position_state(self._local_done(taken), self._iteration_share())

    def _iteration_share(self) -> Share | None:
        return None if self._iteration is None else self._iteration[0]

    @property
    def resumes_at_offset(self) -> bool:
        """Whether offsets count the indices this sampler yields.

        False once ``__iter__`` is overridden by a subclass: a loader then resumes it by
        replaying its epoch.
        """
        return type(self).__iter__ is DistributedSampler.__iter__

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; the next ``iter()`` resumes from it.

        A state saved after an epoch ended resumes at the start of the next epoch. A merged
        state (``stoker.data.merge_states``) loads into any number of replicas and any rank:
        the part of its epoch not consumed yet is split over the replicas.

        Raises:
            ValueError: when the state was saved by another sampler, configuration or version,
                or by one rank of another number of replicas.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from state_dict(), got {state!r}")
        is_merged = "merged" in state
        if is_merged:
            check_merged_keys(state)
        mine = self.state_dict_base()
        keys = ["version", "sampler", "length", "shuffle", "seed", "drop_last"]
        if not is_merged:
            keys[3:3] = ["num_replicas", "rank"]
        for key in keys:
            if key not in state:
                raise ValueError(
                    f"state is missing {key!r}, got {short_repr(state)}; pass a dict returned "
                    "by state_dict(), unchanged"
                )
            if not same_value(state[key], mine[key]):
                hint = "load it into a sampler built the same way"
                if key == "num_replicas":
                    hint = (
                        "a state of one rank resumes on the same number of replicas only: "
                        "merge every rank's loader state with stoker.data.merge_states() and "
                        "load the merged state on any number of replicas"
                    )
                raise ValueError(
                    f"state does not fit this sampler: {key} is {state[key]!r} in the "
                    f"state but {mine[key]!r} here; {hint}"
                )
        draws = saved_draws(state)
        epoch = state_count(state, "epoch")
        if is_merged:
            loaded, finished = self._merged_position(state["merged"]), False
        else:
            loaded, finished = read_position(state), state["finished"]
        self._draws = draws
        self.epoch = epoch + (1 if finished else 0)
        self._loaded = loaded
        self._progress = (0, iter([]))

    def _read_share(self, saved: Any, what: str) -> Share:
        """Read a saved share of this sampler's epoch (its total checked against the length)."""
        return Share.from_json(saved, what, length=len(self.dataset), drop_last=self.drop_last)

    def _merged_position(self, merged: Any) -> tuple[PositionSet, Share | None]:
        """This rank's position in a merged epoch: a plain offset, or its split share.

        Nothing consumed: the plain epoch, as a fresh run on this world reads it. Each plain
        share's prefix, on the world that began the epoch: each rank's offset. Otherwise the
        part of the split the rank reads.
        """
        if not isinstance(merged, dict) or set(merged) != set(MERGED_KEYS):
            keys = sorted(map(str, merged)) if isinstance(merged, dict) else merged
            missing = (
                [key for key in MERGED_KEYS if key not in merged] if keys is not merged else []
            )
            raise ValueError(
                f"state's merged must be the dict stoker.data.merge_states() writes, with keys "
                f"{list(MERGED_KEYS)}{f' (missing {missing})' if missing else ''}, got "
                f"{short_repr(keys)}; pass its result unchanged"
            )
        resharded = merged["resharded"]
        if not isinstance(resharded, bool):
            raise ValueError(
                f"state's merged resharded must be a bool, got {resharded!r}; pass the result "
                "of stoker.data.merge_states() unchanged"
            )
        share = self._read_share(
            {key: merged[key] for key in ("total", "consumed", "ranks")}, "state's merged"
        )
        if not share.consumed.spans():
            return PositionSet(), None
        if not resharded and share.ranks == self.num_replicas:  # total is this world's
            offsets = plain_offsets(share.consumed, share.total, self.num_replicas)
            if offsets is not None:
                return PositionSet(offsets[self.rank]), None
        return PositionSet(), share
