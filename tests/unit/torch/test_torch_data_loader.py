"""Tests for stoker.torch.data's DataLoader: torch's class, torch's batches, torch's randomness.

Each behaviour is checked side by side with ``torch.utils.data.DataLoader`` on the same dataset,
with 0 workers and 2 thread workers where it applies. With 2 process workers, and against
torch's loader with workers (its workers are processes), the checks are in
tests/integration/torch/test_torch_data_loader_workers.py.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as torch_data
from torch_door_helpers import (
    SAMPLE_KINDS,
    Samples,
    assert_same_batch,
    check_batches_are_exactly_torchs,
    check_lightning_style_reinstantiation,
    check_mnist_targets_and_one_element_batches,
    check_seeds_and_global_state_after_manual_seed,
    check_state_dict_resumes_a_shuffled_torch_program,
)

import stoker._torch as stoker_torch
import stoker.data as stoker_data
import stoker.torch.data as door

IN_PROCESS = [pytest.param({"num_workers": 0}, id="0-workers")]
"""No workers: torch's loader, compared, starts no process either."""
WORKERS = [*IN_PROCESS, pytest.param({"num_workers": 2, "worker_type": "thread"}, id="2-threads")]
"""Worker settings of stoker's loader that start no process."""


def test_the_door_loader_is_a_torch_dataloader() -> None:
    """The door loader is a torch DataLoader and builds torch's kinds of samplers.

    isinstance(loader, torch.utils.data.DataLoader) holds (stoker.data's loader is not one),
    and the samplers it builds are torch's kinds: RandomSampler inside torch's BatchSampler.
    """
    dataset = Samples("tensor_int")
    loader = door.DataLoader(dataset, batch_size=4, shuffle=True)
    assert isinstance(loader, torch_data.DataLoader)
    assert isinstance(loader, stoker_data.DataLoader)
    assert not isinstance(stoker_data.DataLoader(dataset), torch_data.DataLoader)
    assert isinstance(loader.sampler, torch_data.RandomSampler)
    assert type(loader.batch_sampler) is torch_data.BatchSampler
    assert isinstance(door.DataLoader(dataset).sampler, torch_data.SequentialSampler)
    assert loader.collate_fn is torch_data.default_collate
    assert door.DataLoader(dataset, batch_size=None).collate_fn is torch_data.default_convert
    assert loader._dataset_kind == torch_data.dataloader._DatasetKind.Map
    stream = door.DataLoader(Stream(), batch_size=2)
    assert stream._dataset_kind == torch_data.dataloader._DatasetKind.Iterable
    assert stream._IterableDataset_len_called is None
    assert len(stream) == 2
    assert stream._IterableDataset_len_called == 3  # torch's: len(dataset), not of the loader
    assert repr(type(loader)) == "<class 'stoker.torch.data.DataLoader'>"


class Stream(torch_data.IterableDataset[int]):
    """Three samples; its len() says so."""

    def __iter__(self) -> Any:
        return iter(range(3))

    def __len__(self) -> int:
        return 3


@pytest.mark.parametrize("worker_type", ["thread"])
def test_lightning_style_reinstantiation_gives_a_stoker_loader_with_the_new_sampler(
    worker_type: str,
) -> None:
    """A trainer's DistributedSampler injection rebuilds a door loader yielding the new shard."""
    check_lightning_style_reinstantiation(worker_type)


@pytest.mark.parametrize("kwargs", IN_PROCESS)
@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_batches_are_exactly_torchs(kind: str, kwargs: dict[str, Any]) -> None:
    """Batches equal torch's default_collate output."""
    check_batches_are_exactly_torchs(kind, kwargs)


@pytest.mark.parametrize("kwargs", WORKERS)
def test_mnist_targets_are_tensors_and_one_element_batches_convert_to_int(
    kwargs: dict[str, Any],
) -> None:
    """(tensor, int) samples give an int64 target tensor; int() of a one-element batch works."""
    check_mnist_targets_and_one_element_batches(kwargs)


def test_without_batching_samples_convert_as_torchs_default_convert() -> None:
    """batch_size=None: NumPy arrays and scalars become tensors, Python numbers stay numbers."""
    for kind in ("numpy", "scalars", "dict"):
        ours = list(door.DataLoader(Samples(kind, 3), batch_size=None))
        theirs = list(torch_data.DataLoader(Samples(kind, 3), batch_size=None))
        for mine, other in zip(ours, theirs, strict=True):
            assert_same_batch(mine, other)


_ARRAYS = {
    "float32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "bool": np.array([True, False]),
    "uint16": np.arange(3, dtype=np.uint16),
    "complex64": np.ones(2, dtype=np.complex64),
    "0-d": np.array(3.5),
    "strided": np.arange(16.0).reshape(4, 4)[:, ::2],
    "negative strides": np.arange(5)[::-1],
    "big-endian": np.arange(3, dtype=">i4"),
    "datetime": np.zeros(2, dtype="M8[s]"),
    "read-only": np.frombuffer(bytes(16), dtype=np.float32),
    "scalar": np.float32(2.5),
}


def _conversion(convert: Any, value: Any) -> Any:
    """What a conversion gives: the tensor's dtype, shape, strides and memory, or its error."""
    try:
        tensor = convert(value)
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    assert torch.equal(tensor, torch.as_tensor(value))
    same_memory = isinstance(value, np.ndarray) and tensor.data_ptr() == value.ctypes.data
    return tensor.dtype, tuple(tensor.shape), tensor.stride(), same_memory


@pytest.mark.parametrize("name", list(_ARRAYS))
def test_the_doors_array_conversion_is_torchs_as_tensor(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The door's NumPy-to-tensor shortcut gives what as_tensor gives.

    The door turns each NumPy leaf into a tensor by a shortcut (from_numpy for a writable
    array); the tensor, the memory it shares and the error are as_tensor's, and a read-only
    array still goes through as_tensor, for its warning (torch gives it once a process).
    """
    value = _ARRAYS[name]
    warnings.simplefilter("ignore")  # the read-only array's (this test's scope: pytest resets)
    assert _conversion(stoker_torch.as_tensor, value) == _conversion(torch.as_tensor, value)
    calls: list[Any] = []
    real = torch.as_tensor
    monkeypatch.setattr(torch, "as_tensor", lambda array: calls.append(array) or real(array))
    with contextlib.suppress(TypeError, ValueError):
        stoker_torch.as_tensor(value)
    shortcut = isinstance(value, np.ndarray) and value.flags.writeable
    assert len(calls) == (0 if shortcut else 1)


@pytest.mark.parametrize("kwargs", IN_PROCESS)
def test_after_manual_seed_order_worker_seeds_and_global_state_equal_torchs(
    kwargs: dict[str, Any],
) -> None:
    """generator=None draws from torch's global generator as torch does."""
    check_seeds_and_global_state_after_manual_seed(kwargs)


def test_pin_memory_without_an_accelerator_warns_torchs_text_and_returns_tensors() -> None:
    """pin_memory=True without an accelerator: torch's warning, unpinned tensor batches."""
    expected = "'pin_memory' argument is set as true but no accelerator is found"
    if torch.accelerator.is_available():  # pragma: no cover - the test machines have none
        batch = next(iter(door.DataLoader(Samples("numpy"), batch_size=2, pin_memory=True)))
        assert batch[0].is_pinned()
        return
    with pytest.warns(UserWarning, match=expected):
        batch = next(iter(door.DataLoader(Samples("numpy"), batch_size=2, pin_memory=True)))
    assert isinstance(batch[0], torch.Tensor)


@pytest.mark.parametrize("kwargs", WORKERS)
def test_state_dict_resumes_a_shuffled_torch_program_exactly(kwargs: dict[str, Any]) -> None:
    """Stoker's resume state works through the door."""
    check_state_dict_resumes_a_shuffled_torch_program(kwargs)
