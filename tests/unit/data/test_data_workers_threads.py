"""Thread workers (worker_type="thread"): batches, order, identity, failures, epochs, stats.

Compared with process workers (same batches, same order) in
tests/integration/data/test_data_workers_threads_processes.py.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import (
    SquareVectors,
    check_iterable_worker_state_reaches_the_iterator,
    check_stats_count_batches_wait_and_busy_time,
    plain_batches,
)

from stoker.data import DataLoader, Dataset, get_worker_info


class Broken(SquareVectors):
    """Fails at index 5."""

    def __getitem__(self, index: int) -> Any:
        if index == 5:
            raise LookupError("sample 5 is broken")
        return super().__getitem__(index)


def test_out_of_order_threads_yield_every_batch_once() -> None:
    """in_order=False with threads yields every batch exactly once."""
    loader = DataLoader(
        SquareVectors(40, delay=0.001),
        batch_size=4,
        num_workers=2,
        worker_type="thread",
        in_order=False,
    )
    labels = sorted(int(v) for _, squares in loader for v in np.sqrt(squares))
    assert labels == list(range(40))


class WhoAmI(Dataset[Any]):
    """Sample i reports the thread's worker info and its own generators."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> dict[str, Any]:
        info = get_worker_info()
        assert info is not None
        return {
            "id": info.id,
            "n": info.num_workers,
            "seed": info.seed,
            "method": info.worker_method,
            "same": info.dataset is self,
            "draw": info.rng["numpy"].integers(1 << 30),
            "thread": threading.current_thread().name,
        }


def test_thread_worker_info_and_generators() -> None:
    """Each thread sees its id, count, seed, 'threading', the shared dataset and its own rng."""
    dataset = WhoAmI()
    loader = DataLoader(dataset, batch_size=None, num_workers=2, worker_type="thread", generator=5)
    rows = list(loader)
    assert get_worker_info() is None
    assert [row["id"] for row in rows] == [0, 1, 0, 1]
    assert {row["n"] for row in rows} == {2}
    assert {row["method"] for row in rows} == {"threading"}
    assert all(row["same"] for row in rows)
    assert rows[1]["seed"] == rows[0]["seed"] + 1
    assert rows[0]["thread"] != threading.current_thread().name
    again = list(
        DataLoader(dataset, batch_size=None, num_workers=2, worker_type="thread", generator=5)
    )
    assert [row["draw"] for row in again] == [row["draw"] for row in rows]
    assert rows[0]["draw"] != rows[1]["draw"]


def test_thread_failure_reraises_with_worker_and_index_and_goes_on() -> None:
    """A thread worker's exception re-raises in order with its type and index; the rest comes."""
    loader = DataLoader(Broken(12), batch_size=4, num_workers=2, worker_type="thread")
    iterator = iter(loader)
    first = next(iterator)
    assert np.asarray(first[1]).tolist() == [0, 1, 4, 9]
    with pytest.raises(LookupError, match="sample 5 is broken") as caught:
        next(iterator)
    assert caught.value.dataset_index == 5  # type: ignore[attr-defined]
    assert "DataLoader worker 1" in str(caught.value)
    assert np.asarray(next(iterator)[1]).tolist() == [64, 81, 100, 121]


def test_worker_type_is_validated() -> None:
    """An unknown worker_type raises ValueError naming the valid values."""
    with pytest.raises(ValueError, match=r"worker_type must be 'process' or 'thread', got 'gpu'"):
        DataLoader(SquareVectors(3), worker_type="gpu")


def test_persistent_threads_serve_epochs_and_stop_on_close() -> None:
    """Persistent thread workers serve several epochs and end when the loader is closed."""
    before = set(threading.enumerate())
    loader = DataLoader(
        SquareVectors(10),
        batch_size=5,
        num_workers=2,
        worker_type="thread",
        persistent_workers=True,
    )
    epochs = [plain_batches(list(loader)) for _ in range(3)]
    assert epochs[0] == epochs[1] == epochs[2]
    threads = [t for t in set(threading.enumerate()) - before if t.name.startswith("stoker-")]
    assert len(threads) == 2
    loader.close()
    for thread in threads:
        thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)


# with process workers: tests/integration/data/test_data_workers_threads_processes.py
@pytest.mark.parametrize("worker_type", ["thread"])
def test_stats_count_batches_wait_and_busy_time(worker_type: str) -> None:
    """loader.stats() counts batches served and per-worker busy time for both worker types."""
    check_stats_count_batches_wait_and_busy_time(worker_type)


# with process workers: tests/integration/data/test_data_workers_threads_processes.py
@pytest.mark.parametrize("worker_type", ["thread"])
def test_iterable_worker_state_reaches_the_iterator(worker_type: str) -> None:
    """An IterableDataset's state_dict() after each batch is kept per worker as batches yield."""
    check_iterable_worker_state_reaches_the_iterator(worker_type)


class Quitter(SquareVectors):
    """Raises SystemExit (which the worker loop does not catch) at index 3."""

    def __getitem__(self, index: int) -> Any:
        if index == 3:
            raise SystemExit(7)
        return super().__getitem__(index)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_thread_that_ends_on_its_own_is_reported_as_dead() -> None:
    """A worker thread killed by an escaping SystemExit raises RuntimeError naming the thread."""
    loader = DataLoader(Quitter(8), batch_size=2, num_workers=2, worker_type="thread")
    with pytest.raises(RuntimeError, match=r"worker 1 \(thread stoker-data-worker-1"):
        list(loader)
