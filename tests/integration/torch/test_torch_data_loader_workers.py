"""stoker.torch.data's DataLoader with worker processes: torch's batches, torch's randomness.

The checks of test_torch_data_loader.py with 2 process workers, and those compared with torch's
DataLoader with workers (torch's workers are processes, so stoker's thread workers are
compared with them here too): batches, seeds and the global state, resuming, a trainer's
rebuild, batches on the shared-memory slab, a worker's failure, attributes set between epochs.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.utils.data as torch_data
from torch_door_helpers import (
    SAMPLE_KINDS,
    Samples,
    SeedRecorder,
    assert_same_batch,
    batches_as_lists,
    check_batches_are_exactly_torchs,
    check_lightning_style_reinstantiation,
    check_mnist_targets_and_one_element_batches,
    check_seeds_and_global_state_after_manual_seed,
    check_state_dict_resumes_a_shuffled_torch_program,
)

import stoker.torch.data as door

PROCESSES = [pytest.param({"num_workers": 2}, id="2-processes")]
COMPARED_WITH_TORCH_WORKERS = [
    *PROCESSES,
    pytest.param({"num_workers": 2, "worker_type": "thread"}, id="2-threads"),
]
"""Stoker's workers against torch's loader with ``num_workers=2`` (its workers: processes)."""


@pytest.mark.parametrize("worker_type", ["process"])
def test_lightning_style_reinstantiation_gives_a_stoker_loader_with_the_new_sampler(
    worker_type: str,
) -> None:
    """A trainer's DistributedSampler injection rebuilds a door loader yielding the new shard."""
    check_lightning_style_reinstantiation(worker_type)


@pytest.mark.parametrize("kwargs", COMPARED_WITH_TORCH_WORKERS)
@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_batches_are_exactly_torchs(kind: str, kwargs: dict[str, Any]) -> None:
    """Batches equal torch's default_collate output."""
    check_batches_are_exactly_torchs(kind, kwargs)


@pytest.mark.parametrize("kwargs", PROCESSES)
def test_mnist_targets_are_tensors_and_one_element_batches_convert_to_int(
    kwargs: dict[str, Any],
) -> None:
    """(tensor, int) samples give an int64 target tensor; int() of a one-element batch works."""
    check_mnist_targets_and_one_element_batches(kwargs)


def _slab_ranges() -> list[tuple[int, int]]:
    """Address ranges of this process's mappings of stoker's shared-memory slabs."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "stoker" in fields[5] and fields[5].startswith("/dev/shm"):
                begin, end = (int(part, 16) for part in fields[0].split("-"))
                ranges.append((begin, end))
    return ranges


@pytest.mark.parametrize("kind", ["numpy", "tensor_int"])
def test_large_batches_are_tensors_on_the_shared_memory_slab_without_a_copy(kind: str) -> None:
    """With process workers, a large batch becomes a tensor on the slab it was collated into.

    With process workers, a large batch of NumPy arrays or of tensors becomes a tensor whose
    memory is the slab the worker collated into (its address lies in a /dev/shm mapping of
    stoker's), equal to torch's batch.
    """
    dataset = Samples(kind, length=8, size=128)  # 16 KiB (uint8) or 64 KiB (float) per sample
    loader = door.DataLoader(dataset, batch_size=4, num_workers=1)
    batches = list(loader)
    images = batches[1][0]
    assert isinstance(images, torch.Tensor)
    address = images.data_ptr()
    assert any(begin <= address < end for begin, end in _slab_ranges())
    assert loader.stats()["bytes_in_slabs"] >= images.numel()
    theirs = list(torch_data.DataLoader(dataset, batch_size=4))
    for mine, other in zip(batches, theirs, strict=True):
        assert_same_batch(mine, other)


@pytest.mark.parametrize("kwargs", COMPARED_WITH_TORCH_WORKERS)
def test_after_manual_seed_order_worker_seeds_and_global_state_equal_torchs(
    kwargs: dict[str, Any],
) -> None:
    """generator=None draws from torch's global generator as torch does."""
    check_seeds_and_global_state_after_manual_seed(kwargs)


@pytest.mark.parametrize("persistent", [False, True])
def test_torch_generator_and_persistent_workers_follow_torch(persistent: bool) -> None:
    """With a torch.Generator and persistent workers, batches and worker draws equal torch's.

    With a torch.Generator, and with persistent workers over two epochs (the base seed is
    drawn once), the batches and worker draws equal torch's.
    """

    def run(module: Any) -> list[Any]:
        generator = torch.Generator().manual_seed(4)
        loader = module.DataLoader(
            SeedRecorder(),
            batch_size=3,
            shuffle=True,
            num_workers=2,
            generator=generator,
            persistent_workers=persistent,
        )
        return batches_as_lists(loader) + batches_as_lists(loader)

    assert run(door) == run(torch_data)


@pytest.mark.parametrize("kwargs", PROCESSES)
def test_state_dict_resumes_a_shuffled_torch_program_exactly(kwargs: dict[str, Any]) -> None:
    """Stoker's resume state works through the door."""
    check_state_dict_resumes_a_shuffled_torch_program(kwargs)


def test_a_worker_failure_names_the_worker_and_index_with_torchs_words() -> None:
    """A dataset error in a worker re-raises with its type, torch's text and stoker's details.

    A dataset error in a worker re-raises with its type, torch's "Caught ... in DataLoader
    worker process" text and stoker's worker id and dataset index.
    """
    loader = door.DataLoader(Failing(), batch_size=2, num_workers=1)
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0") as info:
        list(loader)
    assert "dataset index 3" in str(info.value)


class Failing(torch_data.Dataset[int]):
    """Index 3 raises KeyError."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        if index == 3:
            raise KeyError("missing")
        return index


def test_attributes_torch_freezes_stay_frozen_and_the_others_take_effect() -> None:
    """Setting batch_size later raises ValueError; collate_fn and num_workers may change.

    Setting batch_size after construction raises ValueError starting with torch's text;
    collate_fn and num_workers may change between epochs, as in torch.
    """
    loader = door.DataLoader(Samples("numpy", 4), batch_size=2)
    with pytest.raises(
        ValueError, match=r"^batch_size attribute should not be set after DataLoader is initialized"
    ):
        loader.batch_size = 3
    loader.collate_fn = len
    loader.num_workers = 1
    assert list(loader) == [2, 2]
