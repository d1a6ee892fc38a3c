"""Tests for a worker's identity: WorkerInfo, get_worker_info, and torch's get_worker_info()."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import pytest
from data_torch_info_helpers import check_torch_get_worker_info_answers

from stoker.data import DataLoader, Dataset, WorkerInfo, get_worker_info

torch = pytest.importorskip("torch")
torch_data = pytest.importorskip("torch.utils.data")


def test_worker_info_is_frozen_and_absent_in_main() -> None:
    """WorkerInfo has torch's fields and cannot be changed; get_worker_info() is None here."""
    info = WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    assert info.worker_method == "multiprocessing"
    assert info.rng is None
    with pytest.raises(AttributeError):
        info.id = 3  # type: ignore[misc]
    assert get_worker_info() is None


# process workers of each start method: tests/integration/data/test_data_workers_info_processes.py
@pytest.mark.parametrize("kind", ["thread"])
def test_torch_get_worker_info_answers_in_every_worker(kind: str) -> None:
    """In each worker, torch's get_worker_info() is a torch WorkerInfo equal to stoker's answer."""
    check_torch_get_worker_info_answers(kind)


class _Pause(Dataset[int]):
    """Sample i is i; reading a sample waits until ``go`` is set (holds the workers busy)."""

    def __init__(self, go: threading.Event) -> None:
        self.go = go

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        self.go.wait(10)
        return index


def test_torch_answer_outside_worker_threads_is_falsy_and_raises_then_is_restored() -> None:
    """While thread workers run, another thread reads no wrong answer from torch.

    The answer is falsy (as None is) and reading a field raises a RuntimeError that names the
    problem and the fix; once the iterator ends, torch answers None again.
    """
    go = threading.Event()
    loader = DataLoader(_Pause(go), batch_size=1, num_workers=2, worker_type="thread")
    iterator = iter(loader)
    answer = torch_data.get_worker_info()
    assert not answer
    assert "not a stoker worker thread" in repr(answer)
    with pytest.raises(RuntimeError, match=r"not a DataLoader worker.*worker_type=\"process\""):
        _ = answer.id
    go.set()
    assert sorted(int(batch[0]) for batch in iterator) == [0, 1, 2, 3]
    del iterator
    loader.close()
    assert torch_data.get_worker_info() is None


class _KeepsAnswer(Dataset[Any]):
    """Sample i: torch's answer pickled in the worker thread (a plain torch WorkerInfo)."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> bytes:
        return pickle.dumps(torch_data.get_worker_info())


def test_torch_answer_in_a_worker_thread_pickles_as_a_plain_worker_info() -> None:
    """A worker thread's torch answer pickles as torch's own WorkerInfo with its values."""
    loader = DataLoader(
        _KeepsAnswer(), batch_size=None, num_workers=2, worker_type="thread", collate_fn=None
    )
    answers = [pickle.loads(blob) for blob in loader]
    assert [type(answer) for answer in answers] == [torch_data._utils.worker.WorkerInfo] * 2
    assert sorted(answer.id for answer in answers) == [0, 1]
    assert {answer.num_workers for answer in answers} == {2}
