"""Tests for stoker.torch.data.get_worker_info: stoker's workers answer, and torch's do too."""

from __future__ import annotations

from typing import Any

import pytest
from torch_door_helpers import check_every_worker_knows_its_id

import stoker.torch.data as door


def test_outside_a_worker_it_is_none() -> None:
    """In the main process get_worker_info() is None."""
    assert door.get_worker_info() is None


# process workers (the door's, stoker.data's, torch's) are in
# tests/integration/torch/test_torch_data_info_workers.py
@pytest.mark.parametrize(
    ("loader_class", "kwargs", "answers"), [(door.DataLoader, {"worker_type": "thread"}, "stoker")]
)
def test_every_worker_knows_its_id(loader_class: Any, kwargs: dict[str, Any], answers: str) -> None:
    """The answer is stoker's WorkerInfo in a stoker worker and torch's in a torch worker."""
    check_every_worker_knows_its_id(loader_class, kwargs, answers)
