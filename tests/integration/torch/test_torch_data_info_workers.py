"""stoker.torch.data.get_worker_info in worker processes: stoker's workers answer, torch's too.

In a process worker of the door's or stoker.data's loader the answer is stoker's WorkerInfo,
in a worker of torch's own DataLoader torch's; each names the worker's id.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch.utils.data as torch_data
from torch_door_helpers import check_every_worker_knows_its_id

import stoker.data as stoker_data
import stoker.torch.data as door


@pytest.mark.parametrize(
    ("loader_class", "kwargs", "answers"),
    [
        (door.DataLoader, {}, "stoker"),
        (stoker_data.DataLoader, {}, "stoker"),
        (torch_data.DataLoader, {}, "torch"),
    ],
)
def test_every_worker_knows_its_id(loader_class: Any, kwargs: dict[str, Any], answers: str) -> None:
    """The answer is stoker's WorkerInfo in a stoker worker and torch's in a torch worker."""
    check_every_worker_knows_its_id(loader_class, kwargs, answers)
