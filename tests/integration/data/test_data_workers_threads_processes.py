"""Thread workers against process workers: the same batches in the same order, stats, state.

Thread workers (worker_type="thread") give the batches process workers give, in their order;
with process workers, loader.stats() and an IterableDataset's per-worker state behave as
test_data_workers_threads.py checks them for threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from data_workers_helpers import (
    SquareVectors,
    StatefulShards,
    check_iterable_worker_state_reaches_the_iterator,
    check_stats_count_batches_wait_and_busy_time,
    plain_batches,
)

from stoker.data import DataLoader

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


CASES = {
    "batched": (lambda: SquareVectors(23, delay=0.001), {"batch_size": 4}),
    "unbatched": (lambda: SquareVectors(9), {"batch_size": None}),
    "shuffled": (lambda: SquareVectors(30), {"batch_size": 4, "shuffle": True, "generator": 7}),
    "iterable": (lambda: StatefulShards(21), {"batch_size": 4}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_threads_yield_the_batches_of_processes_and_of_the_main_process(case: str) -> None:
    """Thread workers give the same batches in the same order as process workers and as none."""
    make, kwargs = CASES[case]
    expected = plain_batches(list(DataLoader(make(), **kwargs)))
    threads = plain_batches(list(DataLoader(make(), num_workers=2, worker_type="thread", **kwargs)))
    processes = plain_batches(
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
    check_stats_count_batches_wait_and_busy_time(worker_type)


@pytest.mark.parametrize("worker_type", ["process"])
def test_iterable_worker_state_reaches_the_iterator(worker_type: str) -> None:
    """An IterableDataset's state_dict() after each batch is kept per worker as batches yield."""
    check_iterable_worker_state_reaches_the_iterator(worker_type)
