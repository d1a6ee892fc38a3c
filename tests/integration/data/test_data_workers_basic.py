"""DataLoader with worker processes: batches, identity, seeds, sharding, prefetching, epochs."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import (
    CountingDataset,
    GetItemsDataset,
    RangeDataset,
    ReplicatedStream,
    ShardedStream,
    SlowDataset,
    UnevenStream,
    WhoDataset,
    tag_worker,
)

from stoker.data import DataLoader, get_worker_info
from stoker.data._worker import numpy_seed_words

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

START_METHODS = ["fork", "spawn", "forkserver"]


def _as_lists(batches: list[Any]) -> list[Any]:
    """Turn batches of (array, labels) into nested lists for comparison."""
    return [[np.asarray(part).tolist() for part in batch] for batch in batches]


@pytest.mark.parametrize("start_method", START_METHODS)
def test_workers_yield_the_same_batches_as_the_main_process(start_method: str) -> None:
    """Every start method yields exactly the batches, in the order, of num_workers=0."""
    dataset = RangeDataset(11)
    expected = _as_lists(list(DataLoader(dataset, batch_size=3)))
    loader = DataLoader(dataset, batch_size=3, num_workers=2, multiprocessing_context=start_method)
    assert _as_lists(list(loader)) == expected
    assert len(expected) == 4


def test_context_object_is_accepted() -> None:
    """A multiprocessing context object works like its name."""
    context = multiprocessing.get_context("fork")
    loader = DataLoader(
        RangeDataset(5), batch_size=None, num_workers=1, multiprocessing_context=context
    )
    assert [int(label) for _, label in loader] == [0, 1, 2, 3, 4]


def test_unbatched_loading_converts_each_sample() -> None:
    """batch_size=None sends single samples through workers unchanged in order."""
    loader = DataLoader(RangeDataset(5), batch_size=None, num_workers=2)
    labels = [label for _, label in loader]
    assert labels == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("start_method", START_METHODS)
def test_worker_info_init_fn_and_seeds(start_method: str) -> None:
    """Workers see their id, count, seed and dataset copy; seeds follow the documented scheme."""
    assert get_worker_info() is None
    kwargs: dict[str, Any] = {
        "batch_size": 2,
        "num_workers": 2,
        "worker_init_fn": tag_worker,
        "multiprocessing_context": start_method,
        "generator": 1234,
    }
    dataset = WhoDataset(8)
    samples = [s for batch in DataLoader(dataset, **kwargs) for s in _rows(batch)]
    assert [s["id"] for s in samples] == [0, 0, 1, 1, 0, 0, 1, 1]  # round-robin batches
    assert {s["num_workers"] for s in samples} == {2}
    assert all(s["tag"] == 100 + s["id"] for s in samples)
    assert not any(s["same_dataset"] is False for s in samples)
    pids = {s["id"]: s["pid"] for s in samples}
    assert len(set(pids.values())) == 2
    assert os.getpid() not in pids.values()
    seeds = {s["id"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1
    for worker in (0, 1):
        mine = [s for s in samples if s["id"] == worker]
        py_rng = random.Random(seeds[worker])
        np_rng = np.random.RandomState(numpy_seed_words(seeds[0], worker))
        assert [s["random"] for s in mine] == [py_rng.random() for _ in mine]
        assert [s["numpy"] for s in mine] == [np_rng.random_sample() for _ in mine]
    again = [s for batch in DataLoader(WhoDataset(8), **kwargs) for s in _rows(batch)]
    assert [(s["seed"], s["random"], s["numpy"]) for s in again] == [
        (s["seed"], s["random"], s["numpy"]) for s in samples
    ]
    other = next(iter(DataLoader(WhoDataset(8), **{**kwargs, "generator": 99})))
    assert int(other["seed"][0]) != seeds[0]


def _rows(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a collated dict batch back into per-sample dicts of Python values."""
    size = len(batch["index"])
    return [{key: np.asarray(value)[k].item() for key, value in batch.items()} for k in range(size)]


def test_base_seed_changes_per_iterator_but_follows_the_generator() -> None:
    """Each new iterator draws a new base seed from the loader's generator, reproducibly."""

    def seeds(loader: DataLoader) -> list[int]:
        return [int(next(iter(loader))["seed"][0]) for _ in range(2)]

    first = seeds(DataLoader(WhoDataset(2), batch_size=2, num_workers=1, generator=5))
    second = seeds(DataLoader(WhoDataset(2), batch_size=2, num_workers=1, generator=5))
    assert first == second
    assert first[0] != first[1]


def test_iterable_dataset_sharded_through_worker_info() -> None:
    """A sharding IterableDataset yields every sample once; a naive one once per worker."""
    sharded = DataLoader(ShardedStream(10), batch_size=2, num_workers=2)
    batches = [np.asarray(b).tolist() for b in sharded]
    assert sorted(x for b in batches for x in b) == list(range(10))
    assert batches[:2] == [[0, 2], [1, 3]]  # worker 0 then worker 1
    replicated = DataLoader(ReplicatedStream(4), batch_size=2, num_workers=2)
    seen = sorted(x for b in replicated for x in np.asarray(b).tolist())
    assert seen == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize(("drop_last", "expected"), [(False, [2, 2, 2, 1, 1]), (True, [2, 2, 2])])
def test_iterable_workers_ending_at_different_times(drop_last: bool, expected: list[int]) -> None:
    """When one worker's replica ends, the others go on; short batches follow drop_last."""
    loader = DataLoader(UnevenStream([5, 3]), batch_size=2, num_workers=2, drop_last=drop_last)
    batches = [np.asarray(b).tolist() for b in loader]
    assert [len(b) for b in sorted(batches, key=len, reverse=True)] == expected
    flat = sorted(x for b in batches for x in b)
    if not drop_last:
        assert flat == [0, 1, 2, 3, 4, 1000, 1001, 1002]


def test_getitems_is_used_in_workers() -> None:
    """A dataset with __getitems__ is fetched batch-wise inside the workers."""
    loader = DataLoader(GetItemsDataset(8), batch_size=4, num_workers=2)
    batches = list(loader)
    assert [np.asarray(b["i"]).tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(np.asarray(b["via"]).tolist() == [1] * 4 for b in batches)
    assert os.getpid() not in {int(p) for b in batches for p in np.asarray(b["pid"])}


def _settle(counter: Any) -> int:
    """Wait until the shared counter stops moving for 0.3 s (at most 3 s); return it."""
    last, deadline = -1, time.monotonic() + 3
    while time.monotonic() < deadline:
        with counter.get_lock():
            value = int(counter.value)
        if value == last:
            return value
        last = value
        time.sleep(0.3)
    return last


@pytest.mark.parametrize("prefetch_factor", [1, 3])
def test_at_most_prefetch_factor_times_workers_batches_outstanding(prefetch_factor: int) -> None:
    """Workers load ahead, but never more than prefetch_factor * num_workers unyielded batches."""
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(
        CountingDataset(40, counter),
        batch_size=1,
        num_workers=2,
        prefetch_factor=prefetch_factor,
        multiprocessing_context="fork",
    )
    with iter(loader) as iterator:
        for yielded in (1, 2, 5):
            while iterator._num_yielded < yielded:
                next(iterator)
            fetched = _settle(counter)
            assert fetched == yielded + prefetch_factor * 2


def test_in_order_false_yields_ready_batches_first() -> None:
    """in_order=False lets fast batches overtake a slow one; in_order=True keeps sampler order."""
    dataset = SlowDataset(6, slow=0, delay=0.6)
    unordered = [int(b[1][0]) for b in DataLoader(dataset, num_workers=2, in_order=False)]
    assert unordered[0] != 0
    assert sorted(unordered) == list(range(6))
    ordered = [int(b[1][0]) for b in DataLoader(dataset, num_workers=2)]
    assert ordered == list(range(6))


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_persistent_workers_keep_their_processes(start_method: str) -> None:
    """persistent_workers reuses the same processes each epoch, even after an early break."""
    with DataLoader(
        GetItemsDataset(8),
        batch_size=2,
        num_workers=2,
        persistent_workers=True,
        multiprocessing_context=start_method,
    ) as loader:
        first = iter(loader)
        pids = first.worker_pids
        for _ in first:
            break
        for _ in range(2):
            iterator = iter(loader)
            assert iterator is first
            batches = list(iterator)
            assert [np.asarray(b["i"]).tolist() for b in batches] == [
                [0, 1],
                [2, 3],
                [4, 5],
                [6, 7],
            ]
            assert {int(p) for b in batches for p in np.asarray(b["pid"])} == set(pids)
            assert iterator.worker_pids == pids
    assert first.closed


def test_without_persistence_each_epoch_has_new_processes() -> None:
    """Without persistent_workers every epoch starts new worker processes."""
    loader = DataLoader(GetItemsDataset(4), batch_size=2, num_workers=1)
    pids = [{int(p) for b in loader for p in np.asarray(b["pid"])} for _ in range(2)]
    assert pids[0].isdisjoint(pids[1])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_with_a_seed_is_reproducible_and_worker_independent(num_workers: int) -> None:
    """shuffle=True with an int generator gives one order, whatever the number of workers."""

    def order(workers: int) -> list[int]:
        loader = DataLoader(
            RangeDataset(12), batch_size=4, shuffle=True, generator=3, num_workers=workers
        )
        return [int(x) for _, labels in loader for x in labels]

    assert order(num_workers) == order(0)
    assert sorted(order(num_workers)) == list(range(12))
    assert order(0) != list(range(12))


def test_persistent_workers_restart_iterable_replicas_each_epoch() -> None:
    """Each epoch on persistent workers iterates every sharded replica from its start."""
    with DataLoader(
        ShardedStream(7), batch_size=2, num_workers=2, persistent_workers=True
    ) as loader:
        epochs = [sorted(x for b in loader for x in np.asarray(b).tolist()) for _ in range(3)]
    assert epochs == [list(range(7))] * 3
