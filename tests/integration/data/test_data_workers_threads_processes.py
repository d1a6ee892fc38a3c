"""Thread workers against process workers: the same batches in the same order, stats, state.

Thread workers (worker_type="thread") give the batches process workers give, in their order;
with process workers, loader.stats() and an IterableDataset's per-worker state behave as
test_data_workers_threads.py checks them for threads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from stoker.data import DataLoader, Dataset, IterableDataset, get_worker_info

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


class Squares(Dataset[Any]):
    """Sample i: (a float vector filled with i, i squared)."""

    def __init__(self, n: int, delay: float = 0.0) -> None:
        self.n = n
        self.delay = delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        if self.delay:
            time.sleep(self.delay * ((index * 7) % 3))  # uneven work: replies arrive out of order
        return np.full(4, index, dtype=np.float32), index * index


class Shards(IterableDataset[int]):
    """Yields 0..n-1 split by worker, and keeps a state_dict of how far it got."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.position = 0

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for value in range(start, self.n, step):
            self.position = value + 1
            yield value

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position}


def _plain(batches: list[Any]) -> list[Any]:
    out = []
    for batch in batches:
        if isinstance(batch, (list, tuple)):
            out.append([np.asarray(part).tolist() for part in batch])
        else:
            out.append(np.asarray(batch).tolist())
    return out


CASES = {
    "batched": (lambda: Squares(23, delay=0.001), {"batch_size": 4}),
    "unbatched": (lambda: Squares(9), {"batch_size": None}),
    "shuffled": (lambda: Squares(30), {"batch_size": 4, "shuffle": True, "generator": 7}),
    "iterable": (lambda: Shards(21), {"batch_size": 4}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_threads_yield_the_batches_of_processes_and_of_the_main_process(case: str) -> None:
    """Thread workers give the same batches in the same order as process workers and as none."""
    make, kwargs = CASES[case]
    expected = _plain(list(DataLoader(make(), **kwargs)))
    threads = _plain(list(DataLoader(make(), num_workers=2, worker_type="thread", **kwargs)))
    processes = _plain(
        list(DataLoader(make(), num_workers=2, multiprocessing_context="fork", **kwargs))
    )
    if case == "iterable":  # workers batch their own shards: same samples, process order
        assert sorted(np.concatenate(threads).tolist()) == sorted(np.concatenate(expected).tolist())
    else:
        assert threads == expected
    assert threads == processes


@pytest.mark.parametrize("worker_type", ["process"])
def test_stats_count_batches_wait_and_busy_time(worker_type: str) -> None:
    """loader.stats() counts batches served and per-worker busy time for both worker types."""
    loader = DataLoader(
        Squares(40, delay=0.001), batch_size=4, num_workers=2, worker_type=worker_type
    )
    assert loader.stats()["batches_served"] == 0
    list(loader)
    stats = loader.stats()
    assert stats["batches_served"] == 10
    assert set(stats["worker_busy_seconds"]) == {0, 1}
    assert all(seconds > 0 for seconds in stats["worker_busy_seconds"].values())
    assert stats["main_wait_seconds"] > 0
    if worker_type == "process":
        assert stats["bytes_moved"] == stats["bytes_inline"] > 0
    else:
        assert stats["bytes_moved"] == 0


@pytest.mark.parametrize("worker_type", ["process"])
def test_iterable_worker_state_reaches_the_iterator(worker_type: str) -> None:
    """An IterableDataset's state_dict() after each batch is kept per worker as batches yield."""
    loader = DataLoader(Shards(20), batch_size=3, num_workers=2, worker_type=worker_type)
    iterator = iter(loader)
    first = next(iterator)
    assert np.asarray(first).tolist() == [0, 2, 4]
    assert iterator.last_worker_state == {0: {"position": 5}}  # type: ignore[attr-defined]
    next(iterator)
    assert iterator.last_worker_state[1] == {"position": 6}  # type: ignore[attr-defined]
    rest = list(iterator)
    assert sum(len(batch) for batch in rest) == 20 - 6
    assert iterator.last_worker_state == {  # type: ignore[attr-defined]
        0: {"position": 19},
        1: {"position": 20},
    }
