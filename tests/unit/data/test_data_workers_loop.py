"""The one worker loop, run in this process with a fake host: answers, failures, resets, ends."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from data_fakes import Counting, Numbers

from stoker.data import WorkerInfo
from stoker.data._errors import WorkerFailure
from stoker.data._workers.loop import worker_loop
from stoker.data._workers.protocol import (
    BATCH,
    EXHAUSTED,
    FAILED,
    RESET,
    RESET_DONE,
    STOP,
    Command,
    Meta,
    Reply,
    Reset,
    Task,
    WorkerSetup,
)


class FakeHost:
    """Feeds a fixed list of messages to the loop and records its replies.

    Messages are given as ``(task_id, index)`` pairs or commands; replies are recorded as
    ``(task_id, status, payload)`` (their meta is checked by the loader tests).
    """

    worker_method = "fake"

    def __init__(self, messages: list[Any], fail_sends: list[BaseException] | None = None) -> None:
        self.messages: list[Task | Reset | Command] = [
            Task(*message) if type(message) is tuple else message for message in messages
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

    def receive(self) -> Task | Reset | Command:
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


class RecordingEpochSetup:
    """An epoch setup that records each ``prepare`` call and marks the dataset it hands on."""

    seeded = True

    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def prepare(self, dataset: Any, shared_seed: int | None, copy_id: int, copies: int) -> Any:
        self.calls.append(("prepare", shared_seed, copy_id, copies))
        dataset.offset = shared_seed
        return dataset


def test_an_epoch_setup_prepares_the_dataset_each_epoch_with_its_shared_seed() -> None:
    """The epoch setup runs before worker_init_fn and again at each Reset, with their seeds.

    The epoch setup runs before worker_init_fn with the setup's shared seed and as this
    worker (1 of 2), and again at each Reset with that Reset's seed, before the new
    iter(dataset): the replica then iterates what prepare made of it.
    """
    calls: list[Any] = []

    class Offset(Counting):
        offset: int | None = None

        def __iter__(self) -> Any:
            return (value + (self.offset or 0) for value in super().__iter__())

    setup = _setup(Offset(2), iterable=True, init_fn=lambda worker: calls.append(("init", worker)))
    setup = setup._replace(epoch_setup=RecordingEpochSetup(calls), shared_seed=100)
    host = FakeHost([(0, [None] * 3), Reset(200), (0, [None] * 3)])
    worker_loop(setup, host)
    assert calls == [("prepare", 100, 1, 2), ("init", 1), ("prepare", 200, 1, 2)]
    assert host.replies == [(0, BATCH, [100, 101]), (-1, RESET_DONE, None), (0, BATCH, [200, 201])]


def test_a_process_worker_yields_its_cpu_right_after_each_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reply is written first, then the CPU offered to the main process it woke."""
    import multiprocessing

    from stoker.data._workers import process

    events: list[str] = []
    task_reader, task_writer = multiprocessing.Pipe(duplex=False)
    result_reader, result_writer = multiprocessing.Pipe(duplex=False)
    try:
        host = process.ProcessHost(task_reader, result_writer, main_pid=os.getpid())
        monkeypatch.setattr(
            process, "_sched_yield", lambda: events.append(f"yield after {result_reader.poll()}")
        )
        for task_id in (3, 4):
            host.send(Reply(task_id, BATCH, [task_id], Meta()))
            assert result_reader.recv_bytes()  # what was sent arrives
        assert events == ["yield after True", "yield after True"]
    finally:
        for conn in (task_reader, task_writer, result_reader, result_writer):
            conn.close()
