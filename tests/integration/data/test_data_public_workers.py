"""stoker.data's public names in spawn workers: datasets unpickled and errors re-raised by them.

A spawn worker imports what it unpickles by its public path; the stoker.data exception it
raises comes back in the main process with its own type.
"""

from __future__ import annotations

import numpy as np
import pytest
from data_workers_helpers import FailingDataset

from stoker.data import ConcatDataset, DataLoader, SharedMemoryFullError, TensorDataset


def test_spawn_workers_load_public_classes_and_reraise_public_errors() -> None:
    """Spawn workers unpickle datasets by public path; their exceptions re-raise with their type.

    A spawn worker unpickles stoker.data datasets by their public path, and a stoker.data
    exception it raises re-raises in the main process with its own type.
    """
    dataset = ConcatDataset([TensorDataset(np.arange(4)), FailingDataset(4, bad=1, kind="public")])
    loader = DataLoader(
        dataset, batch_size=2, num_workers=1, multiprocessing_context="spawn", timeout=60
    )
    iterator = iter(loader)
    first = next(iterator)
    np.testing.assert_array_equal(first[0], [0, 1])
    np.testing.assert_array_equal(next(iterator)[0], [2, 3])
    with pytest.raises(SharedMemoryFullError, match="no room for sample 1") as caught:
        next(iterator)
    assert type(caught.value) is SharedMemoryFullError
    assert caught.value.worker_id == 0  # type: ignore[attr-defined]
    iterator.close()
