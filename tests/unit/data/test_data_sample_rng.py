"""stoker.data.sample_rng: per-sample generators keyed by (seed, epoch, index)."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np
import pytest

from stoker.data import DataLoader, Dataset, sample_rng
from stoker.data import _sample_rng as keys


class Draws(Dataset[Any]):
    """Sample i is (i, one draw from sample_rng(i))."""

    def __len__(self) -> int:
        return 10

    def __getitem__(self, index: int) -> np.ndarray[Any, Any]:
        return np.array([index, sample_rng(index).integers(0, 1 << 40)])


def test_outside_a_loader_needs_seed_and_epoch() -> None:
    """Without a loader, sample_rng raises RuntimeError unless seed and epoch are passed."""
    with pytest.raises(RuntimeError, match="pass seed= and epoch="):
        sample_rng(3)
    first = sample_rng(3, seed=1, epoch=0).integers(0, 1 << 40, size=4)
    again = sample_rng(3, seed=1, epoch=0).integers(0, 1 << 40, size=4)
    assert first.tolist() == again.tolist()


@pytest.mark.parametrize(
    "other",
    [
        {"index": 4, "seed": 1, "epoch": 0},
        {"index": 3, "seed": 2, "epoch": 0},
        {"index": 3, "seed": 1, "epoch": 1},
    ],
)
def test_each_part_of_the_key_changes_the_stream(other: dict[str, int]) -> None:
    """Changing the index, the seed or the epoch gives another stream."""
    base = sample_rng(3, seed=1, epoch=0).integers(0, 1 << 40, size=4).tolist()
    index = other.pop("index")
    assert sample_rng(index, **other).integers(0, 1 << 40, size=4).tolist() != base


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_index_must_be_an_int(bad: object) -> None:
    """A non-int index raises TypeError naming the value."""
    with pytest.raises(TypeError, match="index must be an int"):
        sample_rng(bad, seed=0, epoch=0)  # type: ignore[arg-type]


def test_in_process_loader_provides_seed_and_epoch() -> None:
    """With num_workers=0 the loader installs its key: draws repeat per seed, change per epoch."""

    def epochs(seed: int) -> list[list[int]]:
        loader = DataLoader(Draws(), batch_size=5, generator=seed)
        return [[int(x) for batch in loader for x in batch[:, 1]] for _ in range(2)]

    first = epochs(7)
    assert first == epochs(7)
    assert first[0] != first[1]
    assert first != epochs(8)
    with pytest.raises(RuntimeError):  # the key does not outlive the fetch
        sample_rng(0)


def test_draws_match_the_explicit_key() -> None:
    """Inside a loader, the draw equals sample_rng(i, seed=sample seed, epoch=loader epoch)."""
    loader = DataLoader(Draws(), batch_size=None)
    got = [batch.tolist() for batch in loader]
    seed = loader.state_dict()["sample_seed"]
    expected = [[i, int(sample_rng(i, seed=seed, epoch=0).integers(0, 1 << 40))] for i in range(10)]
    assert got == expected


def test_keyed_indices_unpickle_to_plain_list_and_install_the_key() -> None:
    """A pickled batch arrives as a plain list and installs its key (what a process worker sees)."""
    saved = keys._process_key
    try:
        batch = pickle.loads(pickle.dumps(keys.keyed([4, 5], (11, 2))))
        assert type(batch) is list
        assert batch == [4, 5]
        assert keys.current_key() == (11, 2)
        index = pickle.loads(pickle.dumps(keys.keyed(6, (12, 3))))
        assert type(index) is int
        assert keys.current_key() == (12, 3)
    finally:
        keys._install_process_key(saved)  # type: ignore[arg-type]


def test_keyed_items_in_a_thread_install_the_key_for_that_thread_only() -> None:
    """Iterating a keyed batch in a worker thread installs its key there, not in the main thread."""
    seen: list[Any] = []

    def worker() -> None:
        batch = keys.keyed([1, 2], (5, 1))
        seen.append([int(sample_rng(i).integers(0, 1 << 40)) for i in batch])
        seen.append(int(sample_rng(keys.keyed(1, (5, 1))).integers(0, 1 << 40)))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=10)
    expected = [int(sample_rng(i, seed=5, epoch=1).integers(0, 1 << 40)) for i in (1, 2)]
    assert seen == [expected, expected[0]]
    assert getattr(keys._local, "key", None) is None


def test_other_sampler_items_pass_unchanged() -> None:
    """Tuples and arrays from a custom sampler are not wrapped: the dataset gets them as is."""
    item = (1, 2)
    assert keys.keyed(item, (0, 0)) is item
    array = np.arange(3)
    assert keys.keyed(array, (0, 0)) is array
