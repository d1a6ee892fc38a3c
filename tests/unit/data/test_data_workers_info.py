"""Tests for a worker's identity: WorkerInfo and get_worker_info outside a worker."""

from __future__ import annotations

import pytest

from stoker.data import WorkerInfo, get_worker_info


def test_worker_info_is_frozen_and_absent_in_main() -> None:
    """WorkerInfo has torch's fields and cannot be changed; get_worker_info() is None here."""
    info = WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    assert info.worker_method == "multiprocessing"
    assert info.rng is None
    with pytest.raises(AttributeError):
        info.id = 3  # type: ignore[misc]
    assert get_worker_info() is None
