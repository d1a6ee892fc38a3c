"""merge_states: every rank's loader state in, one state out that loads on any world size.

Two kinds of loader state merge (see docs/design/resume.md):

* a map-style dataset with a :class:`~stoker.data.DistributedSampler`: each rank's state says
  which indices of its own list were delivered; the merge turns them into the epoch's global
  positions (:mod:`stoker.data._samplers.positions`) and keeps their union. Loaded on ``M``
  ranks, the positions not consumed are split over them (or, on the same ranks, each resumes at its
  offset when the union is each rank's prefix);
* an IterableDataset that is a :class:`~stoker.data.ShardedIterableDataset`: each worker's
  state holds per-shard offsets; the merge keeps each shard's latest.

The states must belong together: the same loader (dataset kind and length, sampler, batch
size), the same epoch, seed and order, and exactly one state per rank ``0 .. N - 1``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from stoker.data._errors import short_repr
from stoker.data._resume.iterable import DatasetMode, MergedShardsMode, WorkerStatesMode
from stoker.data._resume.samplers import MergedDistributedMode, OffsetMode
from stoker.data._resume.tracker import check_header
from stoker.data._samplers.distributed_state import RANK_KEYS, read_position, saved_draws
from stoker.data._samplers.epochs import same_value, state_count
from stoker.data._samplers.positions import (
    MAX_MERGED_POSITIONS,
    PositionSet,
    Share,
    epoch_total,
    share_positions,
    split_remainder,
)
from stoker.data._sharded import MAX_SHARDS, SHARDED_FORMAT, dealt_shards, merge_shard_states

__all__ = ["merge_states"]

_LOADER_KEYS = ("dataset", "sampler", "inner_sampler", "batch_size", "drop_last")
_SHARDED_KEYS = ("num_workers", "shard_format", "shards", "rank", "world_size")
_SAMPLER_KEYS = (
    "version",
    "sampler",
    "length",
    "num_replicas",
    "shuffle",
    "drop_last",
    "seed",
    "epoch",
    "draws",
)
_HINT = "pass the state_dict() of every rank's loader, all saved at the same step"
_LISTED = 10  # missing ranks named in a message


def _ranks_exactly_once(ranks: list[int], world: int, key: str) -> None:
    """Raise unless ``ranks`` (checked ints, one per state, in order) are ``0 .. world - 1``.

    Costs O(len(ranks)), whatever ``world`` a state claims.
    """
    seen: dict[int, int] = {}
    for position, rank in enumerate(ranks):
        if rank in seen:
            raise ValueError(
                f"merge_states needs exactly one state per rank 0..{world - 1}: rank {rank!r} "
                f"appears twice (states {seen[rank]} and {position}); {_HINT}"
            )
        seen[rank] = position
    extra = [rank for rank in seen if not 0 <= rank < world]
    if extra:
        raise ValueError(
            f"merge_states needs exactly one state per rank 0..{world - 1}: got rank(s) "
            f"{extra!r}, outside range({world}); {_HINT}"
        )
    if len(seen) != world:  # no repeats and none outside: some are missing
        absent = (rank for rank in range(world) if rank not in seen)
        missing = list(itertools.islice(absent, _LISTED))
        more = ", ..." if world - len(seen) > len(missing) else ""
        raise ValueError(
            f"merge_states needs exactly one state per rank 0..{world - 1}: rank(s) "
            f"{str(missing)[:-1]}{more}] missing (got {len(ranks)} state(s) of a world of "
            f"{world}, their {key}); {_HINT}"
        )


def _whose(states: Sequence[Any]) -> list[str]:
    """How messages name the states, in the order given."""
    return [f"state {position}" for position in range(len(states))]


def _agree(values: list[Any], key: str, whose: list[str]) -> None:
    """Raise unless every state has the same ``key``, naming the first that differs."""
    for value, who in zip(values[1:], whose[1:], strict=True):
        if not same_value(value, values[0]):
            raise ValueError(
                f"states do not belong together: {key} is {values[0]!r} in {whose[0]}'s state but "
                f"{value!r} in {who}'s; {_HINT}"
            )


def _finished(states: list[dict[str, Any]], whose: list[str]) -> list[bool]:
    """Which states were saved after their rank delivered all of its part of the epoch.

    Such a state already describes the next loader epoch (from its start); the others must be
    of the epoch before it. A rank ends its part early when ranks took unequal counts.
    """
    epochs: list[int] = [state["epoch"] for state in states]  # checked by _read_loader_state
    low = min(epochs)
    for epoch, state, who in zip(epochs, states, whose, strict=True):
        ahead_by_one = epoch == low + 1 and state["batches"] == 0
        if epoch != low and not ahead_by_one:
            raise ValueError(
                f"states do not belong together: epoch is {low!r} in one state but {epoch!r} in "
                f"{who}'s (states of different epochs); {_HINT}"
            )
    return [epoch != low for epoch in epochs]


def _check_loader_state(position: int, state: dict[str, Any]) -> None:
    """Check the loader fields of state ``position`` (not yet whether the states agree)."""
    where = f"state {position}"
    try:
        check_header(state)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err
    kind = state.get("dataset")
    own = _SHARDED_KEYS if kind == "iterable" else ("length",)
    keys = (*_LOADER_KEYS, "epoch", "batches", "mode", "sampler_state", *own)
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(f"{where} is missing {missing}, got {short_repr(state)}; {_HINT}")
    if kind not in ("map", "iterable"):
        raise ValueError(f"{where} dataset must be 'map' or 'iterable', got {kind!r}; {_HINT}")
    for key in ("epoch", "batches"):
        state_count(state, key, where=where)
    if kind == "map":
        state_count(state, "length", MAX_MERGED_POSITIONS, where=where)


class _Rank(NamedTuple):
    """One rank's checked sampler state, its position in its list, and its share."""

    saved: dict[str, Any]
    done: PositionSet
    share: Share | None


def _rank_sampler_state(position: int, state: dict[str, Any]) -> dict[str, Any]:
    """Check one rank's DistributedSampler state (its configuration) and return it.

    Fields older formats lack are filled in later, by :func:`_merge_distributed`, where they
    are implied (no ``draws``: keyed; no ``delivered`` and ``share``: a prefix of the rank's
    plain share); anything else missing or of the wrong kind is refused, naming the field and
    the state's index in the list.
    """
    where = f"state {position}"
    saved = state["sampler_state"]
    if state["mode"] != OffsetMode.name or not isinstance(saved, dict):
        raise ValueError(
            f"{where} must be one rank's state (mode 'offset' with a sampler_state dict), got "
            f"mode {state['mode']!r}; merge the states each rank's loader saved, not merged "
            "ones"
        )
    where = f"{where}'s sampler_state"
    missing = [key for key in RANK_KEYS if key not in saved]
    if missing:
        raise ValueError(
            f"{where} is missing {missing}: merge_states needs {list(RANK_KEYS)} from each rank "
            f"(and reads delivered, share and draws when present), got {short_repr(saved)}; "
            f"{_HINT}"
        )
    for key in ("rank", "epoch"):
        state_count(saved, key, where=where)
    state_count(saved, "length", MAX_MERGED_POSITIONS, where=where)
    for key, kind in (("shuffle", bool), ("drop_last", bool), ("seed", int)):
        if type(saved[key]) is not kind:
            raise ValueError(
                f"{where} {key} must be a{'n' if kind is int else ''} {kind.__name__}, got "
                f"{saved[key]!r}; {_HINT}"
            )
    if not same_value(saved["length"], state["length"]):
        raise ValueError(
            f"{where} length must be the loader state's length {state['length']!r}, got "
            f"{saved['length']!r}; {_HINT}"
        )
    if saved["finished"] is not False:
        raise ValueError(
            f"{where} finished must be False (a loader saves its sampler's position, never a "
            f"finished sampler's), got {saved['finished']!r}; {_HINT}"
        )
    return saved


def _world(states: list[dict[str, Any]], key: str, where: str) -> int:
    """The world size the states claim (state 0's ``key``): an int from 1 to their number.

    One state per rank: a larger world means missing ranks (named without counting them).
    """
    world = states[0][key]
    if type(world) is not int or world < 1:
        raise ValueError(f"{where} {key} must be an int >= 1, got {world!r}; {_HINT}")
    return world


def _merge_distributed(states: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge the states of loaders over one epoch of a DistributedSampler."""
    samplers = [_rank_sampler_state(position, state) for position, state in enumerate(states)]
    world = _world(samplers, "num_replicas", "state 0's sampler_state")
    _agree(
        [saved["num_replicas"] for saved in samplers],
        "sampler_state's num_replicas",
        _whose(states),
    )
    _ranks_exactly_once([saved["rank"] for saved in samplers], world, "num_replicas")
    ranks = {}
    for position, saved in enumerate(samplers):
        where = f"state {position}'s sampler_state"
        done, share = read_position(saved, where)
        saved.update(draws=saved_draws(saved, where), delivered=saved.get("delivered", []))
        saved.setdefault("share", None)
        ranks[saved["rank"]] = _Rank(saved, done, share)
    by_rank = sorted(zip(samplers, states, strict=True), key=lambda pair: pair[0]["rank"])
    whose = [f"rank {saved['rank']}" for saved, _ in by_rank]
    ended = _finished([state for _, state in by_rank], whose)
    for key in _SAMPLER_KEYS:
        _agree([saved[key] for saved, _ in by_rank], f"sampler_state's {key}", whose)
    going = [pair for pair, done in zip(by_rank, ended, strict=True) if not done]
    if not going:  # every rank ended the epoch: the merged state starts the next one
        going, ended = by_rank[:1], [False] * len(by_rank)
        rank = by_rank[0][0]["rank"]
        ranks[rank] = _Rank(ranks[rank].saved, PositionSet(), None)
    _agree(
        [saved["share"] for saved, _ in going],
        "sampler_state's share",
        [f"rank {saved['rank']}" for saved, _ in going],
    )
    first = going[0][0]
    length, drop_last = first["length"], first["drop_last"]
    share = ranks[first["rank"]].share
    total = epoch_total(length, world, drop_last) if share is None else share.total
    # after a split only the remainder's positions matter: padding positions are not owed
    size = total if share is None else min(length, total)
    consumed = np.zeros(size, dtype=bool)
    if share is not None:
        consumed |= share.consumed.mask(size)
        _, dropped = split_remainder(share, length, world, drop_last)
        consumed[dropped] = True  # cut by drop_last from the remainder: dropped for the epoch
    for (saved, _), done_all in zip(by_rank, ended, strict=True):
        positions = share_positions(share, length, total, world, saved["rank"], drop_last=drop_last)
        if done_all:
            consumed[positions] = True
            continue
        done = ranks[saved["rank"]].done
        consumed[positions[np.flatnonzero(done.mask(len(positions)))]] = True
    merged = copy.deepcopy(going[0][1])
    sampler_state = {
        key: first[key]
        for key in ("version", "sampler", "length", "shuffle", "drop_last", "seed", "epoch")
    }
    sampler_state["draws"] = first["draws"]
    sampler_state["merged"] = {
        "ranks": world if share is None else share.ranks,  # the world that began the epoch
        "total": total,
        "resharded": share is not None,
        "consumed": PositionSet.of_mask(consumed).to_json(),
    }
    merged.update(mode=MergedDistributedMode.name, batches=0, sampler_state=sampler_state)
    return merged


def _replica_states(position: int, state: dict[str, Any]) -> list[Any]:
    """The dataset states inside state ``position`` (None entries dropped).

    They are checked as the replicas of that state's rank.
    """
    mode, saved = state["mode"], state["sampler_state"]
    where = f"state {position}"
    if mode == DatasetMode.name:
        found = [saved]
    elif mode == WorkerStatesMode.name:
        workers = saved.get("workers") if isinstance(saved, dict) else None
        if saved is not None and not isinstance(workers, list):
            raise ValueError(
                f"{where}'s sampler_state must be None or hold a workers list, got "
                f"{short_repr(saved)}; {_HINT}"
            )
        found = workers or []
    else:
        raise ValueError(
            f"{where} holds no per-shard positions (mode {mode!r}): merge_states merges "
            "IterableDataset states of a stoker.data.ShardedIterableDataset only"
        )
    replicas = [replica for replica in found if replica is not None]
    readers = max(1, state["num_workers"])  # without workers, the main process reads
    owner = {"rank": state["rank"], "world_size": state["world_size"], "num_workers": readers}
    for replica in replicas:
        for key, value in owner.items():
            if isinstance(replica, dict) and key in replica and replica[key] != value:
                raise ValueError(
                    f"{where}'s dataset state has {key} {replica[key]!r} but the state's "
                    f"{'num_workers gives' if key == 'num_workers' else key + ' is'} "
                    f"{value!r}; {_HINT}"
                )
    return replicas


def _merge_sharded(states: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge the states of loaders over a ShardedIterableDataset."""
    for position, state in enumerate(states):
        where = f"state {position}"
        if state["shard_format"] != SHARDED_FORMAT:
            raise ValueError(
                f"{where} is not of a stoker.data.ShardedIterableDataset (its "
                "IterableDataset's positions cannot be re-dealt over other ranks); merge_states "
                "merges IterableDataset states of a ShardedIterableDataset only"
            )
        for key, most in (("shards", MAX_SHARDS), ("rank", None), ("num_workers", None)):
            state_count(state, key, most, where=where)
    world = _world(states, "world_size", "state 0's")
    _agree([state["world_size"] for state in states], "world_size", _whose(states))
    _ranks_exactly_once([state["rank"] for state in states], world, "world_size")
    replicas_of = {state["rank"]: _replica_states(i, state) for i, state in enumerate(states)}
    by_rank = sorted(states, key=lambda state: state["rank"])
    whose = [f"rank {state['rank']}" for state in by_rank]
    _agree([state["shards"] for state in by_rank], "shards", whose)
    ended = _finished(by_rank, whose)
    going = [state for state, done in zip(by_rank, ended, strict=True) if not done]
    replicas = [replica for state in going for replica in replicas_of[state["rank"]]]
    shards = by_rank[0]["shards"]
    combined = merge_shard_states(replicas, shards)
    if going:  # a rank that ended its part read every shard dealt to it
        done = set(combined["done"])
        for state, done_all in zip(by_rank, ended, strict=True):
            if done_all:
                done |= set(dealt_shards(shards, world, state["rank"], state["num_workers"]))
        combined["done"] = sorted(done)
        combined["offsets"] = [pair for pair in combined["offsets"] if pair[0] not in done]
    merged = copy.deepcopy(going[0] if going else by_rank[0])
    merged.update(mode=MergedShardsMode.name, batches=0, sampler_state=combined)
    for key in ("rank", "world_size", "num_workers"):
        merged.pop(key, None)
    return merged


def merge_states(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Merge every rank's ``DataLoader.state_dict()`` into one state for any world size.

    For a map-style dataset with a :class:`~stoker.data.DistributedSampler`, the merged state
    holds the epoch's consumed positions (what every rank delivered); loaded with
    ``loader.load_state_dict(merged)`` on any number of ranks, any rank and any
    ``num_workers``, the samples not consumed yet are split over the new ranks as
    ``DistributedSampler`` splits an epoch (padded by repeating, or cut with ``drop_last``),
    each exactly once, and the next epoch is the one a fresh run on the new ranks sees. For a
    :class:`~stoker.data.ShardedIterableDataset`, it holds each shard's offset and the shards
    are dealt out again. See docs/design/resume.md.

    Args:
        states: one state per rank ``0 .. N - 1`` (any order), each saved by that rank's
            loader at the same step.

    Returns:
        One loader state (mode ``"merged"``), JSON-serialisable.

    Raises:
        TypeError: when ``states`` is not a sequence of dicts.
        ValueError: when a state is not a DataLoader state, when the states do not belong
            together (another epoch, seed, dataset length, shuffle, drop_last, ...) or when a
            rank is missing or given twice; the message names it.
    """
    if isinstance(states, (dict, str, bytes)) or not isinstance(states, Sequence):
        raise TypeError(
            f"states must be a list of DataLoader.state_dict() results, one per rank, got "
            f"{type(states).__name__}"
        )
    if not states:
        raise ValueError(f"states must hold one state per rank, got an empty list; {_HINT}")
    for position, state in enumerate(states):
        _check_loader_state(position, state)
    states = copy.deepcopy(list(states))  # the merge never changes its input
    keys = _LOADER_KEYS if states[0]["dataset"] == "iterable" else (*_LOADER_KEYS, "length")
    for key in keys:
        _agree([state.get(key) for state in states], key, _whose(states))
    if states[0]["dataset"] == "iterable":
        return _merge_sharded(list(states))
    if states[0]["sampler"] not in ("DistributedSampler", "BatchSampler") or (
        states[0]["sampler"] == "BatchSampler"
        and states[0]["inner_sampler"] != "DistributedSampler"
    ):
        raise ValueError(
            f"merge_states merges the states of loaders with a DistributedSampler, got sampler "
            f"{states[0]['sampler']!r} (inner {states[0]['inner_sampler']!r}); {_HINT}"
        )
    return _merge_distributed(list(states))
