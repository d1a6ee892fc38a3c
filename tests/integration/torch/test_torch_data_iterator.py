"""torch's private iterator attributes that code written against torch reads, on stoker's loaders.

torch's own tests and trainers look at ``iter(loader)._workers`` (the worker processes: alive,
their pid, their exit code once joined) and call ``_shutdown_workers()``. The door's iterator
answers both from stoker's pool, as read-only views, and the answers are compared with those of
torch's own loader on the same dataset.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch.utils.data as torch_data

import stoker.torch.data as door

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)
JOIN = 30.0
LOADERS = [
    pytest.param(torch_data.DataLoader, {}, id="torch"),
    pytest.param(door.DataLoader, {}, id="door-process"),
    pytest.param(door.DataLoader, {"worker_type": "thread"}, id="door-thread"),
]


def _iterator(loader_class: Any, kwargs: dict[str, Any]) -> Any:
    loader = loader_class(list(range(12)), batch_size=2, num_workers=2, **kwargs)
    return iter(loader)


def _assert_ended(workers: list[Any]) -> None:
    for worker in workers:
        worker.join(JOIN)
        assert not worker.is_alive()
        assert getattr(worker, "exitcode", 0) == 0


@pytest.mark.parametrize(("loader_class", "kwargs"), LOADERS)
def test_workers_lists_live_workers_that_end_when_the_iterator_goes(
    loader_class: Any, kwargs: dict[str, Any]
) -> None:
    """``_workers`` holds one live worker per id, each ending once the iterator is dropped.

    ``_workers`` holds one live worker per id while batches come; once the iterator is
    dropped mid-epoch, each ends within the join (exit code 0 for processes), as in torch.
    """
    iterator = _iterator(loader_class, kwargs)
    assert next(iterator).tolist() == [0, 1]
    workers = iterator._workers
    assert len(workers) == 2
    assert all(worker.is_alive() for worker in workers)
    if kwargs.get("worker_type") != "thread":
        pids = [worker.pid for worker in workers]
        assert len(set(pids)) == 2
        if loader_class is door.DataLoader:
            assert pids == iterator.worker_pids
    del iterator
    gc.collect()
    _assert_ended(workers)


@pytest.mark.parametrize(("loader_class", "kwargs"), LOADERS)
def test_shutdown_workers_stops_them_as_torchs_does(
    loader_class: Any, kwargs: dict[str, Any]
) -> None:
    """``_shutdown_workers()`` stops every worker; ``_workers`` still lists them, ended."""
    iterator = _iterator(loader_class, kwargs)
    next(iterator)
    iterator._shutdown_workers()
    workers = iterator._workers
    assert len(workers) == 2
    _assert_ended(workers)


def test_workers_is_a_view_that_cannot_be_changed() -> None:
    """``_workers`` cannot be assigned, and changing the list read leaves the pool's list alone.

    Assigning ``_workers`` raises AttributeError, and changing the list read leaves the
    pool's own list as it was.
    """
    iterator = _iterator(door.DataLoader, {})
    workers = iterator._workers
    with pytest.raises(AttributeError):
        iterator._workers = []
    workers.clear()
    assert len(iterator._workers) == 2
    assert [batch.tolist() for batch in iterator] == [[i, i + 1] for i in range(0, 12, 2)]
