"""The worker loop, the fetch path and worker-error records, run in one process with a fake host."""

from __future__ import annotations

import pickle
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from stoker.data import Dataset, IterableDataset, WorkerInfo, get_worker_info
from stoker.data._errors import WorkerFailure, mark_index
from stoker.data._fetch import DatasetExhausted, IterableFetcher, MapFetcher, make_fetcher
from stoker.data._workers.loop import worker_loop
from stoker.data._workers.protocol import (
    BATCH,
    EXHAUSTED,
    FAILED,
    RESET,
    RESET_DONE,
    STOP,
    Command,
    Reply,
    Task,
    WorkerSetup,
)


class Numbers(Dataset[int]):
    """Sample i is 10 * i; index ``bad`` raises ValueError."""

    def __init__(self, n: int, bad: int = -1) -> None:
        self.n = n
        self.bad = bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if index == self.bad:
            raise ValueError(f"bad index {index}")
        return 10 * index


class Counting(IterableDataset[int]):
    """Yields 0..n-1 and counts how often iteration started."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started = 0

    def __iter__(self) -> Iterator[int]:
        self.started += 1
        return iter(range(self.n))


class FakeHost:
    """Feeds a fixed list of messages to the loop and records its replies.

    Messages are given as ``(task_id, index)`` pairs or commands; replies are recorded as
    ``(task_id, status, payload)`` (their meta is checked by the loader tests).
    """

    worker_method = "fake"

    def __init__(self, messages: list[Any], fail_sends: list[BaseException] | None = None) -> None:
        self.messages: list[Task | Command] = [
            Task(*message) if isinstance(message, tuple) else message for message in messages
        ]
        self.replies: list[tuple[int, int, Any]] = []
        self.fail_sends = list(fail_sends or [])
        self.info: WorkerInfo | None = None

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        self.info = WorkerInfo(
            id=setup.worker_id,
            num_workers=setup.num_workers,
            seed=setup.base_seed + setup.worker_id,
            dataset=setup.dataset,
            worker_method=self.worker_method,
        )
        return self.info

    def prepare_collate(self, collate_fn: Any) -> Any:
        return collate_fn

    def receive(self) -> Task | Command:
        return self.messages.pop(0) if self.messages else STOP

    def send(self, reply: Reply) -> None:
        if self.fail_sends:
            raise self.fail_sends.pop(0)
        self.replies.append((reply.task_id, reply.status, reply.payload))


def _setup(dataset: Any, *, iterable: bool = False, init_fn: Any = None) -> WorkerSetup:
    """A worker setup for worker 1 of 2 with list collation."""
    return WorkerSetup(
        dataset=dataset,
        iterable=iterable,
        auto_collation=True,
        collate_fn=list,
        drop_last=False,
        base_seed=40,
        worker_id=1,
        num_workers=2,
        init_fn=init_fn,
    )


def test_each_task_is_answered_once_in_order() -> None:
    """Tasks get (task_id, BATCH, batch) replies in arrival order; STOP ends the loop."""
    host = FakeHost([(0, [0, 1]), (3, [2]), STOP, (9, [0])])
    worker_loop(_setup(Numbers(4)), host)
    assert host.replies == [(0, BATCH, [0, 10]), (3, BATCH, [20])]
    assert host.info is not None
    assert host.info.seed == 41


def test_fetch_failure_is_answered_and_the_loop_goes_on() -> None:
    """A failing fetch answers FAILED with index, worker id and traceback; later tasks work."""
    host = FakeHost([(0, [1, 2]), (1, [0])])
    worker_loop(_setup(Numbers(4, bad=2)), host)
    (task, status, failure), second = host.replies
    assert (task, status) == (0, FAILED)
    assert isinstance(failure, WorkerFailure)
    assert (failure.worker_id, failure.dataset_index) == (1, 2)
    assert "while fetching dataset index 2 (batch indices [1, 2])" in failure.where
    assert "__getitem__" in failure.worker_traceback
    assert second == (1, BATCH, [0])


def test_init_failure_answers_every_task() -> None:
    """A failing worker_init_fn answers every task with the same failure."""

    def init(worker_id: int) -> None:
        raise PermissionError(f"worker {worker_id} denied")

    host = FakeHost([(0, [0]), (1, [1])])
    worker_loop(_setup(Numbers(2), init_fn=init), host)
    assert [status for _, status, _ in host.replies] == [FAILED, FAILED]
    failure = host.replies[1][2]
    assert failure.where == "in worker_init_fn"
    with pytest.raises(PermissionError, match="worker 1 denied"):
        failure.reraise()


def test_iterable_exhaustion_and_reset() -> None:
    """An ended replica answers EXHAUSTED; RESET restarts iter(dataset) without worker_init_fn."""
    calls: list[int] = []
    dataset = Counting(3)
    host = FakeHost([(0, [None, None]), (1, [None, None]), (2, [None]), RESET, (0, [None] * 5)])
    worker_loop(_setup(dataset, iterable=True, init_fn=calls.append), host)
    assert host.replies == [
        (0, BATCH, [0, 1]),
        (1, BATCH, [2]),
        (2, EXHAUSTED, None),
        (-1, RESET_DONE, None),
        (0, BATCH, [0, 1, 2]),
    ]
    assert calls == [1]
    assert dataset.started == 2


def test_unsendable_batch_becomes_a_failure_and_lost_parent_ends_loop() -> None:
    """A pickling error while sending is answered as FAILED; an OSError stops the loop."""
    host = FakeHost([(0, [0]), (1, [1])], fail_sends=[TypeError("cannot pickle 'generator'")])
    worker_loop(_setup(Numbers(2)), host)
    assert host.replies[0][:2] == (0, FAILED)
    assert "while sending the batch" in host.replies[0][2].where
    assert host.replies[1] == (1, BATCH, [10])
    gone = FakeHost([(0, [0]), (1, [1])], fail_sends=[BrokenPipeError()])
    worker_loop(_setup(Numbers(2)), gone)
    assert gone.replies == []
    assert gone.messages == [Task(1, [1])]


def test_map_fetcher_paths() -> None:
    """Single index, list of indices, __getitems__ and a disabled __getitems__."""
    assert MapFetcher(Numbers(3), auto_collation=False, collate_fn=str).fetch(2) == "20"
    assert MapFetcher(Numbers(3), auto_collation=True, collate_fn=list).fetch([2, 0]) == [20, 0]

    class Batched(Numbers):
        def __getitems__(self, indices: list[int]) -> list[int]:
            return [-i for i in indices]

    batched = Batched(3)
    assert make_fetcher(
        batched, iterable=False, auto_collation=True, collate_fn=list, drop_last=False
    ).fetch([1, 2]) == [-1, -2]
    batched.__getitems__ = None  # type: ignore[assignment, method-assign]
    assert MapFetcher(batched, auto_collation=True, collate_fn=list).fetch([1, 2]) == [10, 20]


@pytest.mark.parametrize(("auto", "index"), [(True, [0, 3, 1]), (False, 3)])
def test_map_fetcher_marks_the_failing_index(auto: bool, index: Any) -> None:
    """The exception from dataset[i] propagates unchanged, marked with i."""
    fetcher = MapFetcher(Numbers(5, bad=3), auto_collation=auto, collate_fn=list)
    with pytest.raises(ValueError, match="bad index 3") as caught:
        fetcher.fetch(index)
    assert getattr(caught.value, "_stoker_dataset_index", None) == 3


@pytest.mark.parametrize(("drop_last", "sizes"), [(False, [2, 2, 1]), (True, [2, 2])])
def test_iterable_fetcher_short_batch_and_end(drop_last: bool, sizes: list[int]) -> None:
    """The iterable fetcher fills batches, keeps or drops the short one, then is exhausted."""
    fetcher = IterableFetcher(
        Counting(5), auto_collation=True, collate_fn=list, drop_last=drop_last
    )
    got = [fetcher.fetch([None, None]) for _ in sizes]
    assert [len(b) for b in got] == sizes
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None, None])
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None])
    single = IterableFetcher(Counting(1), auto_collation=False, collate_fn=str, drop_last=False)
    assert single.fetch(None) == "0"
    with pytest.raises(DatasetExhausted):
        single.fetch(None)


class LocalError(Exception):
    """Only reachable through a test module, which a worker may not import."""


def test_worker_failure_rebuilds_the_original_type_and_pickles() -> None:
    """The record pickles, rebuilds the same type with the text, and keeps its attributes."""
    try:
        raise IndexError("index 7 is out of range")
    except IndexError as err:
        mark_index(err, 7)
        failure = WorkerFailure.capture(err, 3, where="", batch_index=[6, 7])
    copy = pickle.loads(pickle.dumps(failure))
    exc: Any = copy.build()
    assert type(exc) is IndexError
    assert str(exc).startswith("index 7 is out of range")
    assert "DataLoader worker 3" in str(exc)
    assert "while fetching dataset index 7 (batch indices [6, 7])" in str(exc)
    assert (exc.worker_id, exc.dataset_index) == (3, 7)
    assert "raise IndexError" in exc.worker_traceback


def test_worker_failure_falls_back_to_runtime_error() -> None:
    """A type that cannot be found again in the main process becomes a RuntimeError."""
    failure = WorkerFailure("no.such.module", "Gone", "went away", 0, 1, "in worker_init_fn")
    with pytest.raises(RuntimeError, match=r"no\.such\.module\.Gone .*went away"):
        failure.reraise()


def test_mark_index_keeps_the_first_mark() -> None:
    """An outer fetch does not overwrite the index an inner fetch recorded."""
    err = ValueError("x")
    mark_index(err, 1)
    mark_index(err, 2)
    assert getattr(err, "_stoker_dataset_index", None) == 1


def test_worker_info_is_frozen_and_absent_in_main() -> None:
    """WorkerInfo has torch's fields and cannot be changed; get_worker_info() is None here."""
    info = WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    assert info.worker_method == "multiprocessing"
    assert info.rng is None
    with pytest.raises(AttributeError):
        info.id = 3  # type: ignore[misc]
    assert get_worker_info() is None


def test_worker_failure_finds_types_of_a_spawned_main_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A type from a spawn worker's __mp_main__ is looked up in the main process's __main__."""
    main = types.ModuleType("__main__")
    main.LocalError = LocalError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    failure = WorkerFailure("__mp_main__", "LocalError", "boom", 1, 2, "")
    with pytest.raises(LocalError, match="boom"):
        failure.reraise()


class Unprintable(Exception):
    """An exception whose str() itself fails."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_failure_capture_survives_array_indices_and_unprintable_errors() -> None:
    """NumPy index arrays and exceptions with a broken __str__ still give a FAILED answer."""

    class Odd(Numbers):
        def __getitem__(self, index: int) -> int:
            if index == 0:
                raise Unprintable
            return super().__getitem__(index)

    host = FakeHost([(0, np.array([1, 2])), (1, np.array([0]))])
    worker_loop(_setup(Numbers(4, bad=2)), host)
    assert host.replies[0][1] == FAILED
    assert host.replies[0][2].dataset_index == 2
    odd = FakeHost([(0, [0])])
    worker_loop(_setup(Odd(2)), odd)
    assert odd.replies[0][1] == FAILED
    assert "cannot be printed" in odd.replies[0][2].message
