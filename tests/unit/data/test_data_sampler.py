"""Tests for stoker.data's samplers: orders, randomness sources, errors and resumable state."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from data_fakes import Restarting

from stoker.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sampler_base_iter_is_abstract_and_has_no_len() -> None:
    """The base __iter__ raises NotImplementedError and there is no default __len__."""
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    assert not hasattr(Sampler(), "__len__")


def test_sequential_sampler() -> None:
    """Indices in order; length of the data source."""
    sampler = SequentialSampler(range(4))
    assert list(sampler) == [0, 1, 2, 3]
    assert len(sampler) == 4


@pytest.mark.parametrize(
    ("replacement", "num_samples", "length"), [(False, None, 10), (False, 25, 25), (True, 7, 7)]
)
def test_random_sampler_lengths_and_ranges(
    replacement: bool, num_samples: int | None, length: int
) -> None:
    """Yields num_samples indices in range; without replacement each full round is a permutation."""
    sampler = RandomSampler(range(10), replacement, num_samples, generator=1)
    drawn = list(sampler)
    assert len(drawn) == len(sampler) == length
    assert all(0 <= i < 10 for i in drawn)
    if not replacement:
        assert sorted(drawn[:10]) == list(range(10))
        assert sorted(drawn[20:]) == sorted(set(drawn[20:]))


def test_random_sampler_with_replacement_repeats_and_covers() -> None:
    """Draws with replacement repeat indices and cover all of a small range in many draws."""
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=20000, generator=2))
    counts = Counter(drawn)
    assert set(counts) == set(range(5))
    assert all(3600 < c < 4400 for c in counts.values())


def test_random_sampler_int_seed_is_reproducible_and_varies_per_epoch() -> None:
    """The same seed gives the same sequence of epochs; successive epochs differ."""
    first, second = RandomSampler(range(50), generator=7), RandomSampler(range(50), generator=7)
    epochs = [list(first) for _ in range(3)]
    assert epochs == [list(second) for _ in range(3)]
    assert epochs[0] != epochs[1] != epochs[2]


def test_random_sampler_none_draws_fresh_each_epoch() -> None:
    """Without a generator every epoch is a fresh random permutation."""
    sampler = RandomSampler(range(50))
    orders = {tuple(sampler) for _ in range(3)}
    assert len(orders) == 3


def test_random_sampler_numpy_generator_is_advanced() -> None:
    """A NumPy generator is drawn from each epoch; equal generators give equal orders."""
    a = RandomSampler(range(30), generator=np.random.default_rng(4))
    b = RandomSampler(range(30), generator=np.random.default_rng(4))
    assert list(a) == list(b)
    assert list(a) != list(RandomSampler(range(30), generator=np.random.default_rng(5)))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"replacement": 1}, TypeError, "replacement should be a boolean value"),
        ({"num_samples": 0}, ValueError, "num_samples should be a positive integer"),
        ({"num_samples": 2.0}, ValueError, "num_samples should be a positive integer"),
        ({"generator": "x"}, TypeError, "generator must be"),
    ],
)
def test_random_sampler_errors(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    """Bad arguments raise errors naming the argument and the value."""
    with pytest.raises(error, match=match):
        RandomSampler(range(3), **kwargs)


def test_random_sampler_empty_data_source() -> None:
    """An empty source is rejected at construction, or when iterating if num_samples is given."""
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])
    sampler = RandomSampler([], num_samples=3)
    with pytest.raises(RuntimeError, match="empty data_source"):
        list(sampler)


def test_subset_random_sampler() -> None:
    """Yields exactly the given indices, in a seed-determined order."""
    indices = [3, 8, 13, 21]
    drawn = list(SubsetRandomSampler(indices, generator=1))
    assert sorted(drawn) == indices
    assert drawn == list(SubsetRandomSampler(indices, generator=1))
    assert len(SubsetRandomSampler(indices)) == 4
    assert list(SubsetRandomSampler([])) == []


def test_weighted_random_sampler_follows_weights() -> None:
    """Zero weights never appear; frequencies follow the weights; without replacement no repeats."""
    drawn = list(WeightedRandomSampler([0.0, 1.0, 3.0], 8000, generator=3))
    counts = Counter(drawn)
    assert 0 not in counts
    assert 2.5 < counts[2] / counts[1] < 3.5
    unique = list(
        WeightedRandomSampler(np.array([1, 1, 1, 0.5]), 4, replacement=False, generator=1)
    )
    assert sorted(unique) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (([1.0], 0), ValueError, "num_samples should be a positive integer"),
        (([1.0], True), TypeError, "num_samples should be a positive integer"),
        (([1.0], 1, "yes"), ValueError, "replacement should be a boolean"),
        (([[1.0, 2.0]], 1), ValueError, r"weights should be a 1d sequence.*\(1, 2\)"),
        ((["a"], 1), TypeError, "weights must be a 1-d sequence of numbers"),
    ],
)
def test_weighted_random_sampler_argument_errors(
    args: tuple[Any, ...], error: type[Exception], match: str
) -> None:
    """Bad constructor arguments raise at once, naming the argument."""
    with pytest.raises(error, match=match):
        WeightedRandomSampler(*args)


@pytest.mark.parametrize(
    ("weights", "num_samples", "replacement", "match"),
    [
        ([1.0, -1.0], 1, True, "probability entry < 0.*must be non-negative"),
        ([1.0, float("nan")], 1, True, "contains either `inf`, `nan`.*must be finite"),
        ([0.0, 0.0], 1, True, "must not all be zero"),
        ([1.0, 0.0], 3, False, "without replacement from 2 weights"),
    ],
)
def test_weighted_random_sampler_weight_errors_when_iterating(
    weights: list[float], num_samples: int, replacement: bool, match: str
) -> None:
    """Invalid weights raise when iterating, as RuntimeError (like torch) and ValueError."""
    sampler = WeightedRandomSampler(weights, num_samples, replacement)
    with pytest.raises(RuntimeError, match=match):
        list(sampler)
    with pytest.raises(ValueError, match=match):
        list(sampler)


@pytest.mark.parametrize(
    ("drop_last", "expected"),
    [(False, [[0, 1, 2], [3, 4, 5], [6]]), (True, [[0, 1, 2], [3, 4, 5]])],
)
def test_batch_sampler(drop_last: bool, expected: list[list[int]]) -> None:
    """Groups indices into batches; drop_last drops the short tail; len matches."""
    sampler = BatchSampler(range(7), 3, drop_last)
    assert list(sampler) == expected
    assert len(sampler) == len(expected)


@pytest.mark.parametrize(
    ("drop_last", "expected"),
    [(False, [[0, 1, 2], [3, 4, 5], [6]]), (True, [[0, 1, 2], [3, 4, 5]])],
)
def test_batch_sampler_calls_iter_once_on_its_sampler(
    drop_last: bool, expected: list[list[int]]
) -> None:
    """Over a sampler whose ``__iter__`` restarts it, each epoch calls ``iter()`` on it once.

    Over a sampler whose ``__iter__`` restarts it, each epoch calls ``iter()`` on it once and
    groups its indices once each (``itertools.islice`` would restart it every batch).
    """
    inner = Restarting(list(range(7)))
    sampler = BatchSampler(inner, 3, drop_last)
    for epoch in range(2):
        assert list(itertools.islice(sampler, len(expected) + 1)) == expected
        assert inner.iter_calls == epoch + 1


@pytest.mark.parametrize(
    ("batch_size", "drop_last", "error", "match"),
    [
        (
            0,
            False,
            ValueError,
            "batch_size should be a positive integer value, but got batch_size=0",
        ),
        (True, False, TypeError, "batch_size should be a positive integer"),
        ("2", False, ValueError, "batch_size should be a positive integer"),
        (2, 1, ValueError, "drop_last should be a boolean value"),
        (2, None, TypeError, "drop_last should be a boolean value"),
    ],
)
def test_batch_sampler_errors(
    batch_size: Any, drop_last: Any, error: type[Exception], match: str
) -> None:
    """Bad batch_size or drop_last raise ValueError like torch (wrong types also TypeError)."""
    with pytest.raises(error, match=match):
        BatchSampler(range(3), batch_size, drop_last)


def _resume_case(make: Any, consumed: int) -> None:
    """Save after `consumed` indices, restore into a fresh sampler, compare what follows.

    A state saved once the whole epoch was consumed resumes at the start of the next epoch.
    """
    original = make()
    list(original)  # one full epoch first, so the state is not the first epoch's
    iterator = iter(original)
    for _ in range(consumed):
        next(iterator)
    state = json.loads(json.dumps(original.state_dict()))
    tail = list(iterator)
    following = list(original)
    restored = make()
    restored.load_state_dict(state)
    if tail:
        assert list(restored) == tail
    assert list(restored) == following


@pytest.mark.parametrize("consumed", [0, 3, 9])
@pytest.mark.parametrize(
    "make",
    [
        lambda: SequentialSampler(range(9)),
        lambda: RandomSampler(range(9), generator=5),
        lambda: RandomSampler(range(9), replacement=True, generator=5),
        lambda: RandomSampler(range(4), num_samples=9, generator=5),
        lambda: SubsetRandomSampler(list(range(20, 29)), generator=5),
        lambda: WeightedRandomSampler([1, 2, 3, 4, 5, 6, 7, 8, 9], 9, generator=5),
    ],
    ids=["sequential", "random", "replacement", "rounds", "subset", "weighted"],
)
def test_samplers_resume_mid_epoch_and_at_epoch_end(make: Any, consumed: int) -> None:
    """A state saved after some indices resumes the rest, then the same next epoch."""
    _resume_case(make, consumed)


def test_resume_with_numpy_generator_restores_its_state() -> None:
    """A NumPy generator's state is saved, so later epochs match the uninterrupted run."""
    _resume_case(lambda: RandomSampler(range(12), generator=np.random.default_rng(8)), 5)


def test_resume_with_torch_generator_replays_torch_draws() -> None:
    """With a torch.Generator the epoch is re-drawn from its saved state and skipped ahead."""
    import torch

    _resume_case(lambda: RandomSampler(range(12), generator=torch.Generator().manual_seed(3)), 5)
    _resume_case(
        lambda: RandomSampler(range(12), True, 40, generator=torch.Generator().manual_seed(3)),
        35,
    )


def test_state_between_epochs_reproduces_the_next_fresh_epoch() -> None:
    """With generator=None, a state taken between epochs fixes the next epoch's seed."""
    sampler = RandomSampler(range(20))
    list(sampler)
    state = json.loads(json.dumps(sampler.state_dict()))
    assert state["seed"] is not None
    following = list(sampler)
    restored = RandomSampler(range(20))
    restored.load_state_dict(state)
    assert list(restored) == following
    assert list(RandomSampler(range(20))) != following


def test_random_sampler_state_is_small_and_has_an_offset() -> None:
    """The state names the sampler, epoch and offset and holds no per-index list."""
    sampler = RandomSampler(range(100_000), generator=1)
    iterator = iter(sampler)
    for _ in range(10):
        next(iterator)
    state = sampler.state_dict()
    assert state["offset"] == 10
    assert state["epoch"] == 0
    assert sampler.epoch == 0
    assert len(json.dumps(state)) < 400


def test_load_state_dict_rejects_another_sampler_or_length() -> None:
    """A state from another sampler kind or another length raises a ValueError saying so."""
    state = RandomSampler(range(5), generator=1).state_dict()
    with pytest.raises(ValueError, match="length is 5 in the state but 6 here"):
        RandomSampler(range(6), generator=1).load_state_dict(state)
    with pytest.raises(ValueError, match="sampler is 'RandomSampler'"):
        SequentialSampler(range(5)).load_state_dict(state)


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("offset", -3, "from 0 to 10"),  # would replay three indices: 13 in an epoch of 10
        ("offset", 11, "from 0 to 10"),  # past the epoch's end: an empty epoch
        ("offset", 2.5, "from 0 to 10"),
        ("offset", "3", "from 0 to 10"),
        ("offset", True, "from 0 to 10"),
        ("epoch", -1, ">= 0"),
        ("epoch", None, ">= 0"),
    ],
)
def test_load_state_dict_refuses_an_epoch_or_offset_that_is_not_a_count(
    key: str, value: object, valid: str
) -> None:
    """An edited or corrupted state is refused, naming the value, before any index is wrong."""
    sampler = RandomSampler(range(10), generator=3)
    iterator = iter(sampler)
    next(iterator)
    state = sampler.state_dict()
    fresh = RandomSampler(range(10), generator=3)
    with pytest.raises(ValueError, match=f"state {key} must be an int {valid}, got {value!r}"):
        fresh.load_state_dict({**state, key: value})
    fresh.load_state_dict({**state, "offset": np.int64(1)})  # a NumPy count is still a count
    assert list(fresh) == list(iterator)  # resumed after the first index, as saved


def test_batch_sampler_state_delegates() -> None:
    """BatchSampler's state is its inner sampler's; a plain iterable has none."""
    inner = RandomSampler(range(10), generator=2)
    batches = BatchSampler(inner, 3, False)
    iterator = iter(batches)
    next(iterator)
    state = batches.state_dict()
    assert state["offset"] == 3
    rest = list(iterator)
    fresh = BatchSampler(RandomSampler(range(10), generator=2), 3, False)
    fresh.load_state_dict(state)
    assert list(fresh) == rest
    with pytest.raises(TypeError, match="has no state_dict"):
        BatchSampler(range(3), 2, False).state_dict()
    with pytest.raises(TypeError, match="has no load_state_dict"):
        BatchSampler(range(3), 2, False).load_state_dict(state)


SAMPLER_FACTORIES = {
    "sequential": lambda: SequentialSampler(range(23)),
    "random": lambda: RandomSampler(range(23), generator=4),
    "rounds": lambda: RandomSampler(range(5), num_samples=23, generator=4),
    "replacement": lambda: RandomSampler(range(9), True, 23, generator=4),
    "subset": lambda: SubsetRandomSampler(list(range(100, 123)), generator=4),
    "weighted": lambda: WeightedRandomSampler(list(range(1, 24)), 23, generator=4),
}


@pytest.mark.parametrize("name", sorted(SAMPLER_FACTORIES))
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_fast_path_equals_grouping_the_indices(name: str, drop_last: bool) -> None:
    """Batches cut from stoker samplers equal grouping their per-index output."""
    make = SAMPLER_FACTORIES[name]
    indices = list(make())
    expected = [indices[i : i + 4] for i in range(0, len(indices), 4)]
    if drop_last:
        expected = [batch for batch in expected if len(batch) == 4]
    assert list(BatchSampler(make(), 4, drop_last)) == expected


@pytest.mark.parametrize("name", sorted(SAMPLER_FACTORIES))
def test_batch_sampler_fast_path_tracks_the_offset(name: str) -> None:
    """After two batches the inner state's offset is 8, and resuming gives the rest."""
    make = SAMPLER_FACTORIES[name]
    batches = BatchSampler(make(), 4, False)
    iterator = iter(batches)
    head = [next(iterator), next(iterator)]
    state = batches.state_dict()
    assert state["offset"] == 8
    rest = list(iterator)
    fresh = BatchSampler(make(), 4, False)
    fresh.load_state_dict(state)
    resumed = [i for batch in fresh for i in batch]
    assert resumed == [i for batch in rest for i in batch]
    assert [i for batch in head for i in batch] + resumed == list(make())


def test_batch_sampler_respects_an_overridden_iter() -> None:
    """A subclass that overrides __iter__ is iterated, not bypassed by the fast path."""

    class Reversed(SequentialSampler):
        def __iter__(self) -> Any:
            return iter(range(len(self) - 1, -1, -1))

    assert list(BatchSampler(Reversed(range(5)), 2, False)) == [[4, 3], [2, 1], [0]]


def test_set_epoch_never_changes_the_epoch_under_way() -> None:
    """``set_epoch`` of the epoch the sampler began on its own is a no-op.

    ``set_epoch`` of the epoch the sampler began on its own, while it runs or once drawn to
    its end, is a no-op (the next epoch still follows it); set again, or after an iteration
    closed early, it chooses the next epoch; another epoch applies from the next ``iter()``.
    """
    reference = RandomSampler(range(12), generator=4)
    epochs = [list(reference) for _ in range(3)]
    sampler = RandomSampler(range(12), generator=4)
    running = iter(sampler)
    head = [next(running) for _ in range(5)]
    sampler.set_epoch(0)  # Lightning's call after iter(loader): no-op
    assert sampler.epoch == 0
    assert sampler.state_dict()["offset"] == 5
    assert head + list(running) == epochs[0]
    assert list(sampler) == epochs[1]
    sampler.set_epoch(1)  # drawn to its end, begun on its own: still a no-op
    assert list(sampler) == epochs[2]
    sampler.set_epoch(1)
    assert list(sampler) == epochs[1]
    sampler.set_epoch(1)  # of an epoch set_epoch chose: repeats it
    assert list(sampler) == epochs[1]
    sampler.set_epoch(0)
    closed = iter(sampler)
    next(closed)
    closed.close()
    sampler.set_epoch(1)
    running = iter(sampler)
    next(running)
    sampler.set_epoch(0)  # another epoch: from the next iter(), after this one
    assert sampler.epoch == 1
    assert len(list(running)) == 11
    assert list(sampler) == epochs[0]


def test_generator_attribute_can_be_replaced_and_epochs_set() -> None:
    """Assigning .generator changes later epochs; set_epoch jumps to an epoch's order."""
    sampler = RandomSampler(range(30), generator=1)
    epochs = [list(sampler) for _ in range(3)]
    sampler.set_epoch(1)
    assert sampler.epoch == 1
    assert list(sampler) == epochs[1]
    sampler.generator = 2
    assert sampler.generator == 2
    assert list(sampler) != epochs[2]
    with pytest.raises(TypeError, match="generator must be"):
        sampler.generator = "x"
    with pytest.raises(ValueError, match="epoch must be a non-negative int"):
        sampler.set_epoch(-1)


LARGE = 5000  # spans several of the lists an epoch is cut into (1024, 2048, 4096, ...)
LARGE_FACTORIES = {
    "sequential": lambda: SequentialSampler(range(LARGE)),
    "random": lambda: RandomSampler(range(LARGE), generator=4),
    "rounds": lambda: RandomSampler(range(3000), num_samples=LARGE, generator=4),
    "replacement": lambda: RandomSampler(range(LARGE), True, generator=4),
    "subset": lambda: SubsetRandomSampler(list(range(7, 7 + LARGE)), generator=4),
    "weighted": lambda: WeightedRandomSampler(np.arange(1.0, LARGE + 1), LARGE, generator=4),
    "distributed": lambda: DistributedSampler(range(2 * LARGE), 2, 1, seed=4),
}


@pytest.mark.parametrize("name", sorted(LARGE_FACTORIES))
def test_large_epochs_batch_and_resume_across_internal_pieces(name: str) -> None:
    """Epochs produced piece by piece batch and resume as a whole epoch does.

    Epochs produced piece by piece: batches of 300 (which straddle the pieces) equal
    grouping the per-index output, which is a whole epoch, and resuming at offsets on both
    sides of a piece boundary gives the rest of the same epoch.
    """
    make = LARGE_FACTORIES[name]
    indices = list(make())
    assert len(indices) == LARGE
    if name in ("sequential", "random", "subset"):
        assert sorted(indices) == sorted(set(indices))  # a permutation: nothing repeated
    batches = list(BatchSampler(make(), 300, False))
    assert batches == [indices[i : i + 300] for i in range(0, LARGE, 300)]
    for consumed in (1023, 1024, 1025, 3100):
        sampler = make()
        iterator = iter(sampler)
        for _ in range(consumed):
            next(iterator)
        state = json.loads(json.dumps(sampler.state_dict()))
        assert state["offset"] == consumed
        restored = make()
        restored.load_state_dict(state)
        assert list(restored) == indices[consumed:]


def test_first_batch_does_not_wait_for_the_whole_epoch() -> None:
    """A sequential epoch of 10**12 indices gives its first batches at once.

    A sequential epoch of 10**12 indices gives its first batches at once: the epoch is
    produced in pieces, never as one list (which could not even fit in memory).
    """
    huge = SequentialSampler(range(10**12))
    assert next(iter(huge)) == 0
    batches = iter(BatchSampler(huge, 3, False))
    assert [next(batches), next(batches)] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomSampler(range(9)),
        lambda: RandomSampler(range(9), replacement=True, num_samples=40),
        lambda: SubsetRandomSampler(list(range(20, 29))),
        lambda: WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 9),
    ],
)
def test_global_generator_epochs_resume_mid_epoch_without_touching_it(make: Any) -> None:
    """With generator=None in a torch program, a mid-epoch state resumes exactly, drawing nothing.

    With generator=None in a torch program, a state saved mid-epoch resumes the rest of that
    epoch exactly, and resuming draws nothing from torch's global generator.
    """
    torch = pytest.importorskip("torch")
    torch.manual_seed(8)
    original = make()
    iterator = iter(original)
    [next(iterator) for _ in range(4)]
    state = json.loads(json.dumps(original.state_dict()))
    assert state["draws"] in ("torch_seed", "torch_global")
    tail = list(iterator)
    restored = make()
    restored.load_state_dict(state)
    before = torch.get_rng_state()
    assert list(restored) == tail
    assert torch.equal(torch.get_rng_state(), before)
