"""stoker.torch.data.get_worker_info in worker processes: stoker's workers answer, torch's too.

In a process worker of the door's or stoker.data's loader the answer is stoker's WorkerInfo,
in a worker of torch's own DataLoader torch's; each names the worker's id.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch.utils.data as torch_data

import stoker.data as stoker_data
import stoker.torch.data as door


class WhoAmI(torch_data.Dataset[Any]):
    """Sample ``i`` is ``(i, worker id, type name of the info)`` as door.get_worker_info says."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> Any:
        info = door.get_worker_info()
        return index, info.id, type(info).__module__.split(".")[0]


@pytest.mark.parametrize(
    ("loader_class", "kwargs", "answers"),
    [
        (door.DataLoader, {}, "stoker"),
        (stoker_data.DataLoader, {}, "stoker"),
        (torch_data.DataLoader, {}, "torch"),
    ],
)
def test_every_worker_knows_its_id(loader_class: Any, kwargs: dict[str, Any], answers: str) -> None:
    """The answer is stoker's WorkerInfo in a stoker worker and torch's in a torch worker.

    In a stoker worker (process or thread) the answer is stoker's WorkerInfo, in a worker of
    torch's own DataLoader torch's; each names the worker's id.
    """
    loader = loader_class(WhoAmI(), batch_size=None, num_workers=2, **kwargs)
    seen = list(loader)
    assert sorted(int(index) for index, _, _ in seen) == [0, 1, 2, 3]
    assert {int(worker) for _, worker, _ in seen} == {0, 1}
    assert {kind for _, _, kind in seen} == {answers}
