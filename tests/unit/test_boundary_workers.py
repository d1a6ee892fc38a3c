"""The torch boundary's worker side: the import hook, and torch's answer per worker thread."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from typing import Any

import pytest

from stoker._torch import _workers

torch = pytest.importorskip("torch")
torch_data = pytest.importorskip("torch.utils.data")


@pytest.fixture(autouse=True)
def _no_finder_left() -> Any:
    yield
    _workers._unwatch_import()
    assert _workers._finder not in sys.meta_path


def test_the_finder_is_put_first_once_and_taken_away() -> None:
    _workers._watch_import()
    _workers._watch_import()
    assert sys.meta_path[0] is _workers._finder
    assert sys.meta_path.count(_workers._finder) == 1
    _workers._unwatch_import()
    _workers._unwatch_import()  # a second time is no error
    assert _workers._finder not in sys.meta_path


@pytest.mark.parametrize("name", ["numpy", "torch.utils", "torchvision", "torch_geometric"])
def test_the_finder_leaves_every_other_module_to_the_other_finders(name: str) -> None:
    assert _workers._finder.find_spec(name, None) is None


def test_the_finder_wraps_torchs_own_loader_without_running_it() -> None:
    spec = _workers._finder.find_spec("torch", None)
    assert isinstance(spec, importlib.machinery.ModuleSpec)
    assert isinstance(spec.loader, _workers._AnswerAfterExec)
    assert spec.origin == torch.__spec__.origin
    assert type(spec.loader.loader) is type(torch.__spec__.loader)


class _Loader(importlib.abc.Loader):
    def __init__(self) -> None:
        self.ran: list[str] = []

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        self.ran.append(module.__name__)


def test_after_the_import_the_module_keeps_its_own_loader_and_the_finder_goes() -> None:
    inner = _Loader()
    wrapped = _workers._AnswerAfterExec(inner)
    module = types.ModuleType("fake_torch")
    module.__spec__ = importlib.machinery.ModuleSpec("fake_torch", wrapped)
    _workers._watch_import()
    wrapped.exec_module(module)
    assert inner.ran == ["fake_torch"]
    assert module.__loader__ is inner
    assert module.__spec__.loader is inner
    assert _workers._finder not in sys.meta_path


def test_each_worker_thread_gets_its_own_answer_and_the_others_get_none() -> None:
    before = torch_data.get_worker_info()
    seen: dict[int, Any] = {}
    entered, release = threading.Barrier(3), threading.Event()

    def worker(worker_id: int) -> None:
        _workers.enter_thread_worker(worker_id, 2, 100 + worker_id, "data", "threading")
        try:
            entered.wait(10)
            info = torch_data.get_worker_info()
            seen[worker_id] = (info.id, info.num_workers, info.seed, info.dataset)
            release.wait(10)
        finally:
            _workers.leave_thread_worker()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    entered.wait(10)
    try:
        answer = torch_data.get_worker_info()
        assert not answer  # falsy here, as None is
        with pytest.raises(RuntimeError, match="not a DataLoader worker"):
            _ = answer.id
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
    assert seen == {0: (0, 2, 100, "data"), 1: (1, 2, 101, "data")}
    assert torch_data.get_worker_info() is before  # the last to leave put it back


def test_leaving_without_entering_changes_nothing() -> None:
    before = torch_data.get_worker_info()
    _workers.leave_thread_worker()
    assert torch_data.get_worker_info() is before
