"""DataLoader with workers: batches, identity, seeds, sharding, prefetching, epochs.

Each behaviour runs with process workers (every start method where it matters) and with thread
workers (``worker_type="thread"``), which must give the same batches in the same order.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import (
    ALL_KINDS,
    WORKER_KINDS,
    CountingDataset,
    GatedDataset,
    GetItemsDataset,
    RangeDataset,
    ReplicatedStream,
    ShardedStream,
    SlowDataset,
    UnevenStream,
    WhoDataset,
    counter_settles_at,
    kind_kwargs,
    ran_in_workers,
    tag_worker,
)

from stoker.data import DataLoader, get_worker_info
from stoker.data._iter_workers import AUTO_PREFETCH, AUTO_PREFETCH_BYTES
from stoker.data._workers.info import numpy_seed_words

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


def _as_lists(batches: list[Any]) -> list[Any]:
    """Turn batches of (array, labels) into nested lists for comparison."""
    return [[np.asarray(part).tolist() for part in batch] for batch in batches]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_workers_yield_the_same_batches_as_the_main_process(kind: str) -> None:
    """Every start method, and threads, yield exactly the batches, in order, of num_workers=0."""
    dataset = RangeDataset(11)
    expected = _as_lists(list(DataLoader(dataset, batch_size=3)))
    loader = DataLoader(dataset, batch_size=3, num_workers=2, **kind_kwargs(kind))
    assert _as_lists(list(loader)) == expected
    assert len(expected) == 4


def test_context_object_is_accepted() -> None:
    """A multiprocessing context object works like its name."""
    context = multiprocessing.get_context("fork")
    loader = DataLoader(
        RangeDataset(5), batch_size=None, num_workers=1, multiprocessing_context=context
    )
    assert [int(label) for _, label in loader] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_unbatched_loading_converts_each_sample(kind: str) -> None:
    """batch_size=None sends single samples through workers unchanged in order."""
    loader = DataLoader(RangeDataset(5), batch_size=None, num_workers=2, **kind_kwargs(kind))
    labels = [label for _, label in loader]
    assert labels == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_worker_info_init_fn_and_seeds(kind: str) -> None:
    """Workers see their id, count, seed and dataset copy; seeds follow the documented scheme.

    Processes seed the process-wide generators; threads get their own in ``WorkerInfo.rng``.
    """
    assert get_worker_info() is None
    kwargs: dict[str, Any] = {
        "batch_size": 2,
        "num_workers": 2,
        "worker_init_fn": tag_worker,
        "generator": 1234,
        **kind_kwargs(kind),
    }
    dataset = WhoDataset(8)
    samples = [s for batch in DataLoader(dataset, **kwargs) for s in _rows(batch)]
    assert [s["id"] for s in samples] == [0, 0, 1, 1, 0, 0, 1, 1]  # round-robin batches
    assert {s["num_workers"] for s in samples} == {2}
    assert all(s["tag"] == 100 + s["id"] for s in samples)
    assert not any(s["same_dataset"] is False for s in samples)
    pids = {s["id"]: s["pid"] for s in samples}
    assert ran_in_workers(set(pids.values()), kind)
    assert len(set(pids.values())) == (1 if kind == "thread" else 2)
    seeds = {s["id"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1
    for worker in (0, 1):
        mine = [s for s in samples if s["id"] == worker]
        py_rng = random.Random(seeds[worker])
        assert [s["random"] for s in mine] == [py_rng.random() for _ in mine]
        if kind == "thread":
            thread_rng = np.random.default_rng(seeds[worker])
            assert [s["numpy"] for s in mine] == [thread_rng.random() for _ in mine]
        else:
            np_rng = np.random.RandomState(numpy_seed_words(seeds[0], worker))
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


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_base_seed_changes_per_iterator_but_follows_the_generator(kind: str) -> None:
    """Each new iterator draws a new base seed from the loader's generator, reproducibly."""

    def seeds(loader: DataLoader) -> list[int]:
        return [int(next(iter(loader))["seed"][0]) for _ in range(2)]

    kwargs: dict[str, Any] = {"batch_size": 2, "num_workers": 1, "generator": 5}
    first = seeds(DataLoader(WhoDataset(2), **kwargs, **kind_kwargs(kind)))
    second = seeds(DataLoader(WhoDataset(2), **kwargs, **kind_kwargs(kind)))
    assert first == second
    assert first[0] != first[1]


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_iterable_dataset_sharded_through_worker_info(kind: str) -> None:
    """A sharding IterableDataset yields every sample once; a naive one once per worker."""
    sharded = DataLoader(ShardedStream(10), batch_size=2, num_workers=2, **kind_kwargs(kind))
    batches = [np.asarray(b).tolist() for b in sharded]
    assert sorted(x for b in batches for x in b) == list(range(10))
    assert batches[:2] == [[0, 2], [1, 3]]  # worker 0 then worker 1
    replicated = DataLoader(ReplicatedStream(4), batch_size=2, num_workers=2, **kind_kwargs(kind))
    seen = sorted(x for b in replicated for x in np.asarray(b).tolist())
    assert seen == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("kind", WORKER_KINDS)
@pytest.mark.parametrize(
    ("drop_last", "expected"),
    [
        (False, [[0, 1], [1000, 1001], [2, 3], [1002], [4]]),
        (True, [[0, 1], [1000, 1001], [2, 3]]),
    ],
)
def test_iterable_workers_ending_at_different_times(
    drop_last: bool, expected: list[list[int]], kind: str
) -> None:
    """When one worker's replica ends, the others go on; short batches follow drop_last.

    Batches come round-robin (worker 0, worker 1, ...), skipping a worker once it has ended.
    """
    loader = DataLoader(
        UnevenStream([5, 3]), batch_size=2, num_workers=2, drop_last=drop_last, **kind_kwargs(kind)
    )
    assert [np.asarray(b).tolist() for b in loader] == expected


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_getitems_is_used_in_workers(kind: str) -> None:
    """A dataset with __getitems__ is fetched batch-wise inside the workers."""
    loader = DataLoader(GetItemsDataset(8), batch_size=4, num_workers=2, **kind_kwargs(kind))
    batches = list(loader)
    assert [np.asarray(b["i"]).tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(np.asarray(b["via"]).tolist() == [1] * 4 for b in batches)
    assert ran_in_workers({int(p) for b in batches for p in np.asarray(b["pid"])}, kind)
    tids = {int(t) for b in batches for t in np.asarray(b["tid"])}
    assert len(tids) == 2
    assert threading.get_native_id() not in tids


@pytest.mark.parametrize("kind", ["fork", "thread"])
@pytest.mark.parametrize("prefetch_factor", [1, 3])
def test_at_most_prefetch_factor_times_workers_batches_outstanding(
    prefetch_factor: int, kind: str
) -> None:
    """Workers load ahead, but never more than prefetch_factor * num_workers unyielded batches."""
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(
        CountingDataset(40, counter),
        batch_size=1,
        num_workers=2,
        prefetch_factor=prefetch_factor,
        **kind_kwargs(kind),
    )
    with iter(loader) as iterator:
        for yielded in (1, 4):
            while iterator._num_yielded < yielded:
                next(iterator)
            expected = yielded + prefetch_factor * 2
            assert counter_settles_at(counter, expected) == expected


def _outstanding_after(loader: DataLoader[Any], counter: Any, yielded: int, ahead: int) -> int:
    """Yield ``yielded`` batches, then return how many the workers loaded ahead.

    Yield ``yielded`` batches, wait for the workers to load ``ahead`` more and hold a while;
    return how many they loaded ahead.
    """
    with iter(loader) as iterator:
        while iterator._num_yielded < yielded:
            next(iterator)
        return counter_settles_at(counter, yielded + ahead) - yielded


@pytest.mark.parametrize("kind", ["fork", "thread"])
@pytest.mark.parametrize("prefetch_factor", [None, 2])
def test_an_unset_prefetch_factor_goes_deeper_for_small_batches(
    prefetch_factor: int | None, kind: str
) -> None:
    """An unset prefetch_factor runs AUTO_PREFETCH ahead for small batches from process workers.

    Left unset, process workers delivering small batches run AUTO_PREFETCH batches ahead
    each (and say so in stats()); prefetch_factor=2 given, and thread workers, stay at 2.
    """
    counter = multiprocessing.get_context("fork").Value("i", 0)
    kwargs = {} if prefetch_factor is None else {"prefetch_factor": prefetch_factor}
    loader = DataLoader(
        CountingDataset(100, counter), batch_size=1, num_workers=2, **kind_kwargs(kind), **kwargs
    )
    deep = prefetch_factor is None and kind == "fork"
    depth = AUTO_PREFETCH if deep else 2
    assert _outstanding_after(loader, counter, 10, depth * 2) == depth * 2
    assert loader.stats()["prefetch_depth"] == depth
    assert [int(labels[0]) for _, labels in loader] == list(range(100))


def test_large_batches_keep_two_ahead() -> None:
    """Batches moving more than AUTO_PREFETCH_BYTES keep torch's depth of 2 per worker."""
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(
        CountingDataset(40, counter, nbytes=AUTO_PREFETCH_BYTES * 2),
        batch_size=1,
        num_workers=2,
        multiprocessing_context="fork",
    )
    assert _outstanding_after(loader, counter, 10, 4) == 4
    assert loader.stats()["prefetch_depth"] == 2


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_in_order_false_yields_ready_batches_first(kind: str, tmp_path: Path) -> None:
    """in_order=False lets fast batches overtake a slow one; in_order=True keeps sampler order.

    Index 0 is held until the first batch is yielded (by a marker, 30 s at most), so only a
    loader that yields ready batches first can start with another one, however slowly the
    other worker starts; a loader that waits for batch 0 yields it once the cap runs out.
    """
    release = tmp_path / "release-0"
    kwargs: dict[str, Any] = {"num_workers": 2, **kind_kwargs(kind)}
    gated = GatedDataset(6, gate=0, marker=release)
    with iter(DataLoader(gated, in_order=False, **kwargs)) as iterator:
        try:
            first = int(next(iterator)[1][0])
        finally:
            release.touch()
        rest = [int(b[1][0]) for b in iterator]
    assert first != 0
    assert sorted([first, *rest]) == list(range(6))
    dataset = SlowDataset(6, slow=0, delay=0.6)
    ordered = [int(b[1][0]) for b in DataLoader(dataset, **kwargs)]
    assert ordered == list(range(6))


def _workers_of(batches: list[Any]) -> set[tuple[int, int]]:
    """The (pid, thread id) pairs that made GetItemsDataset batches."""
    return {(int(p), int(t)) for b in batches for p, t in zip(b["pid"], b["tid"], strict=True)}


@pytest.mark.parametrize("kind", ["fork", "spawn", "thread"])
def test_persistent_workers_keep_their_processes(kind: str) -> None:
    """persistent_workers reuses the same workers each epoch, even after an early break."""
    with DataLoader(
        GetItemsDataset(8),
        batch_size=2,
        num_workers=2,
        persistent_workers=True,
        **kind_kwargs(kind),
    ) as loader:
        first = iter(loader)
        pids = first.worker_pids
        workers: set[tuple[int, int]] = set()
        for batch in first:
            workers = _workers_of([batch])
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
            assert workers < _workers_of(batches)
            assert len(_workers_of(batches)) == 2
    assert first.closed


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_without_persistence_each_epoch_has_new_processes(kind: str) -> None:
    """Without persistent_workers every epoch starts new workers (processes or threads)."""
    loader = DataLoader(GetItemsDataset(4), batch_size=2, num_workers=1, **kind_kwargs(kind))
    workers = [_workers_of(list(loader)) for _ in range(2)]
    assert workers[0].isdisjoint(workers[1])


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_shuffle_with_a_seed_is_reproducible_and_worker_independent(kind: str) -> None:
    """shuffle=True with an int generator gives one order, whatever the workers."""

    def order(workers: int) -> list[int]:
        extra = kind_kwargs(kind) if workers else {}
        loader = DataLoader(
            RangeDataset(12), batch_size=4, shuffle=True, generator=3, num_workers=workers, **extra
        )
        return [int(x) for _, labels in loader for x in labels]

    assert order(2) == order(0)
    assert order(1) == order(0)
    assert sorted(order(2)) == list(range(12))
    assert order(0) != list(range(12))


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_persistent_workers_restart_iterable_replicas_each_epoch(kind: str) -> None:
    """Each epoch on persistent workers iterates every sharded replica from its start."""
    with DataLoader(
        ShardedStream(7), batch_size=2, num_workers=2, persistent_workers=True, **kind_kwargs(kind)
    ) as loader:
        epochs = [sorted(x for b in loader for x in np.asarray(b).tolist()) for _ in range(3)]
    assert epochs == [list(range(7))] * 3


def _worker_1_waits_for(marker: str, worker_id: int) -> None:
    """worker_init_fn: worker 1 starts only once ``marker`` exists (30 s at most)."""
    deadline = time.monotonic() + 30
    while worker_id == 1 and not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_deeper_window_opens_when_the_first_batch_arrives(tmp_path: Path) -> None:
    """An unset prefetch_factor deepens as soon as small batches arrive.

    An unset prefetch_factor deepens as soon as small batches arrive, not once as many as
    workers have been yielded: with worker 1 still starting, worker 0 runs AUTO_PREFETCH
    batches ahead after the first batch (a window of two would leave it at three).
    """
    marker = tmp_path / "start-worker-1"
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(
        CountingDataset(100, counter),
        batch_size=1,
        num_workers=2,
        multiprocessing_context="fork",
        worker_init_fn=functools.partial(_worker_1_waits_for, str(marker)),
    )
    with iter(loader) as iterator:
        assert int(next(iterator)[1][0]) == 0
        assert counter_settles_at(counter, AUTO_PREFETCH, within=10) >= AUTO_PREFETCH
        marker.touch()
        assert [int(labels[0]) for _, labels in iterator] == list(range(1, 100))
    assert loader.stats()["prefetch_depth"] == AUTO_PREFETCH
