"""Tests for stoker.data._samplers.epochs: a sampler's epoch records, progress and JSON state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stoker.data._generator import derive_seed
from stoker.data._samplers.epochs import EpochClock, EpochRecord, track


def test_track_reports_the_offset_while_iterating() -> None:
    """The record's offset counts the consumed indices across chunks, from its start."""
    record = EpochRecord(index=0, start=2)
    iterator = track(record, iter([[10, 11], [12, 13, 14]]))
    assert record.offset() == 2
    assert next(iterator) == 10
    assert record.offset() == 3
    assert [next(iterator) for _ in range(2)] == [11, 12]
    assert record.offset() == 5
    assert list(iterator) == [13, 14]
    assert record.offset() == 7


@pytest.mark.parametrize("generator", [None, 9])
def test_epoch_clock_state_round_trips_through_json(generator: object) -> None:
    """A mid-epoch state survives JSON and makes a new clock resume the same epoch."""
    clock = EpochClock(generator)
    clock.begin()
    record = clock.begin()
    indices = track(record, iter([[1, 2, 3], [4, 5]]))
    assert [next(indices) for _ in range(3)] == [1, 2, 3]
    state = json.loads(json.dumps(clock.state({"sampler": "X"}, total=5)))
    assert state["epoch"] == 1
    assert state["offset"] == 3
    other = EpochClock(generator)
    other.load(state, {"sampler": "X"}, total=5)
    resumed = other.begin()
    assert (resumed.index, resumed.seed, resumed.start) == (1, record.seed, 3)
    assert other.begin().index == 2


def test_epoch_clock_rejects_foreign_states() -> None:
    """Wrong version, wrong fields, or a NumPy state for a non-NumPy generator are ValueErrors."""
    clock = EpochClock(1)
    state = clock.state({"sampler": "X", "length": 4}, total=4)
    with pytest.raises(ValueError, match="length is 4 in the state but 5 here"):
        clock.load(state, {"sampler": "X", "length": 5}, total=5)
    with pytest.raises(ValueError, match="state version must be 1"):
        clock.load({**state, "version": 99}, {"sampler": "X", "length": 4}, total=4)
    numpy_state = EpochClock(np.random.default_rng(0)).state({}, total=1)
    with pytest.raises(ValueError, match=r"numpy\.random\.Generator state"):
        clock.load(numpy_state, {}, total=1)
    with pytest.raises(ValueError, match=r"state is missing \['offset'\]"):
        clock.load({k: v for k, v in state.items() if k != "offset"}, {}, total=4)
    with pytest.raises(TypeError, match="state must be a dict"):
        clock.load([], {}, total=4)  # type: ignore[arg-type]


def test_a_fixed_fresh_seed_is_kept_for_its_epoch_only() -> None:
    """A state between epochs fixes the next epoch's global seed; set_epoch may keep or drop it.

    A state between epochs fixes the next epoch's global seed; set_epoch of that epoch keeps it,
    another epoch or another generator drops it.
    """
    clock = EpochClock(None)
    list(track(clock.begin(), iter([[0, 1]])))
    state = clock.state({}, total=2)
    clock.set_epoch(1)
    assert clock.epoch == 1
    record = clock.begin()
    assert (record.index, record.seed) == (1, state["seed"])
    list(track(record, iter([[0, 1]])))
    fixed = clock.state({}, total=2)["seed"]
    clock.set_epoch(5)
    assert clock.begin().seed != fixed
    list(track(clock.current, iter([[0, 1]])))  # type: ignore[arg-type]
    clock.state({}, total=2)
    clock.set_generator(3)
    assert clock.begin().seed == derive_seed(3, 6)
