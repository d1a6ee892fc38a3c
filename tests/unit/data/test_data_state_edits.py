"""Edited loader states: every integer field probed, every key removed, every field changed.

Each kind of state (one loader's, one rank's of a DistributedSampler, one rank's split part,
merged, merged after a split, an iterable ShardedIterableDataset's with and without workers,
and its merged state) is saved, one field is edited, and the state is loaded and resumed. It
must be refused with a ValueError or TypeError naming the field and the value given (or that
the field is missing), at once (no allocation sized by the claim); or, where the edit is a
claim the loader cannot tell from a real save (a seed, an epoch counter), load and resume
within bounds; or resume exactly as the unedited state does.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from data_elastic_helpers import Shards, rank_loader, take

from stoker.data import DataLoader, merge_states

_SPEC = {"length": 29, "batch_size": 2, "workers": 0, "seed": 7}
_LENGTHS = [4, 2, 5, 3, 1, 6, 2]
_CPU_SECONDS = 2.0


class _Missing:
    """The probe that removes the field."""

    def __repr__(self) -> str:
        return "MISSING"


_MISSING = _Missing()
_PROBES: list[Any] = [-1, 10**12, 2.5, "3", None, True, _MISSING]

Path = tuple[Any, ...]


def _sharded(rank: int, world: int, workers: int) -> DataLoader:
    return DataLoader(
        Shards(_LENGTHS, rank, world), batch_size=2, num_workers=workers, worker_type="thread"
    )


def _distributed_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    _, state = take(rank_loader(_SPEC, 3, 1), 2)
    return state, lambda: rank_loader(_SPEC, 3, 1)


def _split_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    states = [take(rank_loader(_SPEC, 4, rank), 1)[1] for rank in range(4)]
    merged = merge_states(states)
    loader = rank_loader(_SPEC, 3, 2)
    loader.load_state_dict(merged)
    _, state = take(loader, 1)
    assert state["sampler_state"]["share"] is not None
    return state, lambda: rank_loader(_SPEC, 3, 2)


def _merged_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    states = [
        take(rank_loader(_SPEC, 4, rank), count)[1] for rank, count in enumerate([2, 3, 2, 1])
    ]
    return merge_states(states), lambda: rank_loader(_SPEC, 3, 1)


def _merged_same_world_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    state, _ = _merged_state()
    return state, lambda: rank_loader(_SPEC, 4, 1)


def _resharded_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    spec = dict(_SPEC, drop_last=True)
    states = [take(rank_loader(spec, 4, rank), 1)[1] for rank in range(4)]
    merged = merge_states(states)
    states = []
    for rank in range(3):
        loader = rank_loader(spec, 3, rank)
        loader.load_state_dict(merged)
        states.append(take(loader, 1)[1])
    return merge_states(states), lambda: rank_loader(spec, 2, 0)


def _single_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    def make() -> DataLoader:
        return DataLoader(list(range(23)), batch_size=4, shuffle=True, generator=5)

    _, state = take(make(), 2)
    return state, make


def _sharded_state(workers: int) -> Callable[[], tuple[dict[str, Any], Callable[[], DataLoader]]]:
    def build() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
        _, state = take(_sharded(1, 2, workers), 2)
        return state, lambda: _sharded(1, 2, workers)

    return build


def _sharded_merged_state() -> tuple[dict[str, Any], Callable[[], DataLoader]]:
    states = [take(_sharded(rank, 2, 0), 2)[1] for rank in range(2)]
    return merge_states(states), lambda: _sharded(0, 3, 1)


KINDS: dict[str, Callable[[], tuple[dict[str, Any], Callable[[], DataLoader]]]] = {
    "single": _single_state,
    "distributed": _distributed_state,
    "split": _split_state,
    "merged": _merged_state,
    "merged-same-world": _merged_same_world_state,
    "resharded": _resharded_state,
    "sharded": _sharded_state(0),
    "sharded-workers": _sharded_state(2),
    "sharded-merged": _sharded_merged_state,
}

_FREE_INTS = {
    # counters and seeds a loader cannot tell from a real save: another value is another claim
    "epoch": (10**12,),
    "base_seed": (10**12, None),
    "sample_seed": (10**12,),
    "seed": (10**12,),  # a RandomSampler's seed drawn from a numpy Generator
    # a shard's offset within it: shard lengths are unknown until read (a larger offset ends it)
    "offsets": (10**12,),
}
"""Integer fields (by key) and the probes that are valid claims of another position."""


def _paths(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) below ``value``: dict keys and list indices, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key), item
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index), item
            yield from _paths(item, (*path, index))


def _key(path: Path) -> str:
    """The field a message must name: the last key of the path.

    The field a message must name: the last key of the path (inside a generator's state,
    which is opaque, the generator field itself).
    """
    if "generator" in path:
        return "generator"
    return str([part for part in path if isinstance(part, str)][-1])


def _edited(state: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    edited = copy.deepcopy(state)
    target = edited
    for part in path[:-1]:
        target = target[part]
    if value is _MISSING:
        if isinstance(target, list):
            target.pop(path[-1])
        else:
            del target[path[-1]]
    else:
        target[path[-1]] = value
    return edited


def _resume(make: Callable[[], DataLoader], state: dict[str, Any]) -> list[list[int]]:
    """Load ``state`` into a fresh loader; return the rest of the epoch, then one more."""
    loader = make()
    loader.load_state_dict(state)
    return [np.asarray(b).tolist() for b in loader] + [np.asarray(b).tolist() for b in loader]


def _probe(kind: str, path: Path, value: Any) -> None:
    state, make = KINDS[kind]()
    state = json.loads(json.dumps(state))
    edited = _edited(state, path, value)
    started = time.thread_time()
    try:
        got: list[list[int]] | None = _resume(make, edited)
    except (ValueError, TypeError) as err:
        message = str(err)
        got = None
    assert time.thread_time() - started < _CPU_SECONDS, f"{kind} {path} = {value!r}: slow"
    shown = "missing" if value is _MISSING else repr(value)
    if got is None:
        assert _key(path) in message, (kind, path, value, message)
        assert shown in message, (kind, path, value, message)
        return
    if value in _FREE_INTS.get(_key(path), ()) and value is not _MISSING:
        universe = (
            {shard * 100 + j for shard, n in enumerate(_LENGTHS) for j in range(n)}
            if kind.startswith("sharded")
            else set(range(_SPEC["length"]))
        )
        assert {x for batch in got for x in batch} <= universe, (kind, path, value)
        return
    assert got == _resume(make, state), f"{kind}: {path} = {value!r} accepted, resumed otherwise"


def _int_probes() -> list[Any]:
    cases = []
    for kind, build in KINDS.items():
        state, _ = build()
        for path, value in _paths(json.loads(json.dumps(state))):
            if type(value) is int:
                cases += [
                    pytest.param(kind, path, probe, id=f"{kind}-{path}-{probe!r}")
                    for probe in _PROBES
                    if probe is not _MISSING
                ]
    return cases


def _missing_keys() -> list[Any]:
    cases = []
    for kind, build in KINDS.items():
        state, _ = build()
        for path, _ in _paths(json.loads(json.dumps(state))):
            if isinstance(path[-1], str):
                cases.append(pytest.param(kind, path, id=f"{kind}-{path}"))
    return cases


@pytest.mark.parametrize(("kind", "path", "value"), _int_probes())
def test_every_integer_field_refuses_a_bad_value_naming_it(
    kind: str, path: Path, value: Any
) -> None:
    """Bad values in any integer field of any state: a named error within bounds, or a resume.

    -1, 10**12, 2.5, "3", None and True in any integer field of any kind of state: a
    ValueError or TypeError naming the field and the value within a CPU-time bound, never a
    KeyError or MemoryError; or a valid claim (a seed, a counter) that resumes within bounds;
    or exactly the unedited resume.
    """
    _probe(kind, path, value)


@pytest.mark.parametrize(("kind", "path"), _missing_keys())
def test_every_missing_key_is_named_or_is_an_older_formats(kind: str, path: Path) -> None:
    """Any key removed from any kind of state: a ValueError naming it, or the unedited resume.

    Any key removed from any kind of state: a ValueError naming it as missing, or (a key
    older formats lack) exactly the unedited resume.
    """
    _probe(kind, path, _MISSING)


def _rank_states(kind: str) -> list[dict[str, Any]]:
    """Every rank's state, as merge_states takes them: 3 ranks, one batch each."""
    if kind == "distributed":
        return [take(rank_loader(_SPEC, 3, rank), 1)[1] for rank in range(3)]
    return [
        take(_sharded(rank, 3, 2 if kind == "sharded-workers" else 0), 1)[1] for rank in range(3)
    ]


def _merge_probes() -> list[Any]:
    cases = []
    for kind in ("distributed", "sharded", "sharded-workers"):
        for path, value in _paths(_rank_states(kind)[1]):
            if type(value) is int and "generator" not in path:
                cases += [
                    pytest.param(kind, path, probe, id=f"{kind}-{path}-{probe!r}")
                    for probe in _PROBES
                    if probe is not _MISSING or isinstance(path[-1], str)
                ]
    return cases


@pytest.mark.parametrize(("kind", "path", "value"), _merge_probes())
def test_merge_states_refuses_a_bad_integer_naming_it(kind: str, path: Path, value: Any) -> None:
    """Bad or removed integer fields of a rank's state given to merge_states: a named error.

    Any integer field of one rank's state given to merge_states set to -1, 10**12 (a world
    of 10**12 ranks, a dataset of 10**12 samples), 2.5, "3", None or True, or removed: a
    ValueError or TypeError naming the field and the value within a CPU-time bound (never a
    KeyError or MemoryError), or the merge of the unedited states when the merge does not read
    the field (rank 0's seeds, for one).
    """
    states = json.loads(json.dumps(_rank_states(kind)))
    expected = merge_states(states)
    states[1] = _edited(states[1], path, value)
    started = time.thread_time()
    try:
        merged: dict[str, Any] | None = merge_states(states)
    except (ValueError, TypeError) as err:
        message = str(err)
        merged = None
    assert time.thread_time() - started < _CPU_SECONDS, f"{kind} {path} = {value!r}: slow"
    if merged is None:
        shown = "missing" if value is _MISSING else repr(value)
        assert _key(path) in message, (kind, path, value, message)
        assert shown in message, (kind, path, value, message)
        return
    if value in _FREE_INTS.get(_key(path), ()) and value is not _MISSING:
        return
    assert merged == expected, f"{kind}: {path} = {value!r} accepted, merged otherwise"
