"""DataLoader against torch.utils.data with two worker processes: same batches, seeds, errors.

The comparisons of test_data_differential_loader.py with ``num_workers=2`` (stoker's process
workers and torch's): map-style and iterable datasets, persistent workers, worker seeds and
draws, a dataset's error, tensor samples. Batches are compared as NumPy (torch tensors
converted, tuples and lists alike). Runs when torch is installed.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.utils.data as tud  # noqa: E402 - only after the importorskip above
from data_differential_helpers import (  # noqa: E402 - torch is there (importorskip above)
    ITERABLE_KWARGS,
    MAP_STYLE_KWARGS,
    Pairs,
    Records,
    assert_same,
    check_dataset_errors_have_torchs_type,
    check_iterable_dataset_batches_equal_torch,
    check_map_style_batches_equal_torch,
    check_torch_tensor_samples_come_back_as_tensors,
    to_numpy,
)

import stoker.data as sd  # noqa: E402

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


@pytest.mark.parametrize("num_workers", [2])
@pytest.mark.parametrize("kwargs", MAP_STYLE_KWARGS)
@pytest.mark.parametrize("dataset", [Records, Pairs])
def test_map_style_batches_equal_torch(
    dataset: type[Records], kwargs: dict[str, Any], num_workers: int
) -> None:
    """Batches equal torch's, with shuffling driven by equally seeded torch generators."""
    check_map_style_batches_equal_torch(dataset, kwargs, num_workers)


def test_persistent_workers_epochs_follow_torch() -> None:
    """With persistent workers the per-epoch orders (one base-seed draw) equal torch's."""
    results = []
    for lib in (tud, sd):
        loader = lib.DataLoader(
            Records(8),
            batch_size=3,
            shuffle=True,
            num_workers=2,
            persistent_workers=True,
            generator=torch.Generator().manual_seed(23),
        )
        results.append([[to_numpy(b) for b in loader] for _ in range(3)])
        del loader
    assert_same(results[0], results[1])


@pytest.mark.parametrize("num_workers", [2])
@pytest.mark.parametrize("kwargs", ITERABLE_KWARGS)
def test_iterable_dataset_batches_equal_torch(kwargs: dict[str, Any], num_workers: int) -> None:
    """Iterable datasets give torch's batches and len(), with and without workers."""
    check_iterable_dataset_batches_equal_torch(kwargs, num_workers)


class Who:
    """Reports the worker's seed and its random, NumPy and torch draws."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> dict[str, Any]:
        info = self.lib.get_worker_info()
        return {
            "id": info.id,
            "seed": info.seed,
            "random": random.random(),
            "numpy": float(np.random.random_sample()),
            "torch": float(torch.rand(())),
            "same_library": info.dataset.lib is self.lib,
        }


def test_worker_seeds_equal_torchs_for_the_same_generator() -> None:
    """Worker seeds and random/NumPy/torch draws equal torch's for equal generators."""
    torch_batches, stoker_batches = (
        [
            to_numpy(batch)
            for batch in lib.DataLoader(
                Who(lib), num_workers=2, generator=torch.Generator().manual_seed(99)
            )
        ]
        for lib in (tud, sd)
    )
    assert_same(torch_batches, stoker_batches)
    assert len({int(b["seed"][0]) for b in stoker_batches}) == 2


@pytest.mark.parametrize("num_workers", [2])
def test_dataset_errors_have_torchs_type(num_workers: int) -> None:
    """A dataset error surfaces with the same type and original message in both libraries."""
    check_dataset_errors_have_torchs_type(num_workers)


@pytest.mark.parametrize("num_workers", [2])
def test_torch_tensor_samples_come_back_as_tensors(num_workers: int) -> None:
    """Tensor samples are collated into tensors, through workers too, equal to torch's."""
    check_torch_tensor_samples_come_back_as_tensors(num_workers)
