"""Tests for stoker.data.DistributedSampler: shards, padding, shuffle, world discovery, state."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from stoker.data import DistributedSampler


def _shards(length: int, replicas: int, **kwargs: Any) -> list[list[int]]:
    return [
        list(DistributedSampler(range(length), replicas, rank, **kwargs))
        for rank in range(replicas)
    ]


@pytest.mark.parametrize("length", [0, 1, 7, 12])
@pytest.mark.parametrize("replicas", [1, 3, 5])
@pytest.mark.parametrize("shuffle", [False, True])
def test_union_covers_dataset_with_padding(length: int, replicas: int, shuffle: bool) -> None:
    """Ranks get equal shares that cover every index; padding repeats at most ceil(n/r) extra."""
    shards = _shards(length, replicas, shuffle=shuffle)
    sizes = {len(shard) for shard in shards}
    assert len(sizes) == 1
    per_rank = -(-length // replicas)
    assert sizes == {per_rank}
    counts = Counter(i for shard in shards for i in shard)
    assert set(counts) == set(range(length))
    assert sum(counts.values()) - length == per_rank * replicas - length


@pytest.mark.parametrize(("length", "replicas"), [(7, 3), (12, 5), (10, 5), (2, 3)])
def test_drop_last_gives_distinct_indices(length: int, replicas: int) -> None:
    """With drop_last every index appears at most once and each rank gets floor(n/r)."""
    shards = _shards(length, replicas, drop_last=True, shuffle=True)
    flat = [i for shard in shards for i in shard]
    assert len(flat) == len(set(flat)) == (length // replicas) * replicas
    assert all(len(shard) == length // replicas for shard in shards)


def test_unshuffled_order_interleaves_ranks() -> None:
    """Without shuffle rank r takes r, r+R, ... and the padding wraps around to the start."""
    assert _shards(5, 2, shuffle=False) == [[0, 2, 4], [1, 3, 0]]


def test_set_epoch_changes_the_shuffle_identically_on_every_rank() -> None:
    """Epochs differ; the same (seed, epoch) gives the same order; seeds differ."""
    sampler = DistributedSampler(range(40), 2, 0, seed=3)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first
    other_rank = DistributedSampler(range(40), 2, 1, seed=3)
    other_rank.set_epoch(1)
    assert sorted(second + list(other_rank)) == list(range(40))
    assert list(DistributedSampler(range(40), 2, 0, seed=4)) != first


def test_world_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without arguments or a torch process group, WORLD_SIZE and RANK are used."""
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    sampler = DistributedSampler(range(8))
    assert (sampler.num_replicas, sampler.rank) == (4, 3)
    assert DistributedSampler(range(8), rank=1).rank == 1


def test_missing_world_is_a_runtime_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """No argument, no process group and no environment: a RuntimeError naming the fixes."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(RuntimeError, match="could not determine num_replicas and rank"):
        DistributedSampler(range(3))
    with pytest.raises(RuntimeError, match="could not determine rank"):
        DistributedSampler(range(3), num_replicas=2)


def test_bad_environment_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-integer environment variable is a ValueError naming it."""
    monkeypatch.setenv("WORLD_SIZE", "two")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an int, got 'two'"):
        DistributedSampler(range(3))


@pytest.mark.parametrize(
    ("replicas", "rank", "error", "match"),
    [
        (2, 2, ValueError, r"Invalid rank 2, rank should be in the interval \[0, 1\]"),
        (2, -1, ValueError, "Invalid rank -1"),
        (0, 0, ValueError, "num_replicas must be a positive int"),
        (2.0, 0, TypeError, "num_replicas must be an int"),
    ],
)
def test_bad_rank_or_replicas(replicas: Any, rank: Any, error: type[Exception], match: str) -> None:
    """Out-of-range ranks and bad num_replicas raise errors with the values."""
    with pytest.raises(error, match=match):
        DistributedSampler(range(3), replicas, rank)


@pytest.mark.parametrize("consumed", [0, 4, 10])
def test_state_resumes_mid_epoch_and_after_the_end(consumed: int) -> None:
    """A state saved mid-epoch resumes the rest; saved at the end, it starts the next epoch."""
    sampler = DistributedSampler(range(30), 3, 1, seed=2)
    sampler.set_epoch(4)
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(consumed)]
    state = json.loads(json.dumps(sampler.state_dict()))
    tail = list(iterator)
    restored = DistributedSampler(range(30), 3, 1, seed=2)
    restored.load_state_dict(state)
    if tail:
        assert head + list(restored) == head + tail
        assert restored.epoch == 4
    else:
        sampler.set_epoch(5)
        assert list(restored) == list(sampler)
        assert restored.epoch == 5


def test_set_epoch_after_the_end_is_not_skipped() -> None:
    """Finishing an epoch and calling set_epoch before saving resumes that new epoch."""
    sampler = DistributedSampler(range(6), 2, 0)
    list(sampler)
    sampler.set_epoch(1)
    restored = DistributedSampler(range(6), 2, 0)
    restored.load_state_dict(sampler.state_dict())
    assert restored.epoch == 1
    assert list(restored) == list(sampler)


def test_state_mismatch_is_rejected() -> None:
    """A state from another configuration raises ValueError naming the field."""
    state = DistributedSampler(range(6), 2, 0).state_dict()
    with pytest.raises(ValueError, match="rank is 0 in the state but 1 here"):
        DistributedSampler(range(6), 2, 1).load_state_dict(state)
    with pytest.raises(ValueError, match="drop_last"):
        DistributedSampler(range(6), 2, 0, drop_last=True).load_state_dict(state)
    with pytest.raises(TypeError, match="state must be a dict"):
        DistributedSampler(range(6), 2, 0).load_state_dict("x")  # type: ignore[arg-type]
    for key, value in (("epoch", -1), ("epoch", 1.5), ("offset", -2)):
        with pytest.raises(ValueError, match=f"state {key} must be an int >= 0, got {value}"):
            DistributedSampler(range(6), 2, 0).load_state_dict({**state, key: value})


def test_world_from_an_initialised_torch_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """With torch imported and a process group initialised, its world size and rank are used."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    monkeypatch.setenv("WORLD_SIZE", "9")
    monkeypatch.setenv("RANK", "8")
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        sampler = DistributedSampler(range(4))
    finally:
        dist.destroy_process_group()
    assert (sampler.num_replicas, sampler.rank) == (1, 0)
