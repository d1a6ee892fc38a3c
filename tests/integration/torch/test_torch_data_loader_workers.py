"""stoker.torch.data's DataLoader with worker processes: torch's batches, torch's randomness.

The checks of test_torch_data_loader.py with 2 process workers, and those compared with torch's
DataLoader with workers (torch's workers are processes, so stoker's thread workers are
compared with them here too): batches, seeds and the global state, resuming, a trainer's
rebuild, batches on the shared-memory slab, a worker's failure, attributes set between epochs.
"""

from __future__ import annotations

import inspect
import random
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as torch_data
from torch_door_helpers import (
    SAMPLE_KINDS,
    Samples,
    SeedRecorder,
    assert_same_batch,
    batches_as_lists,
)

import stoker.torch.data as door

PROCESSES = [pytest.param({"num_workers": 2}, id="2-processes")]
COMPARED_WITH_TORCH_WORKERS = [
    *PROCESSES,
    pytest.param({"num_workers": 2, "worker_type": "thread"}, id="2-threads"),
]
"""Stoker's workers against torch's loader with ``num_workers=2`` (its workers: processes)."""


def _torch_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in kwargs.items() if key != "worker_type"}


def _lightning_reinstantiate(loader: Any, sampler: Any) -> Any:
    """Rebuild ``loader`` around ``sampler`` as PyTorch Lightning 2.x does.

    Rebuild ``loader`` around ``sampler`` as PyTorch Lightning 2.x does (its
    ``_get_dataloader_init_args_and_kwargs`` and ``_dataloader_init_kwargs_resolve_sampler``
    for a loader whose ``__init__`` was not wrapped): the public instance attributes that name
    ``__init__`` parameters and differ from their defaults become keyword arguments, the
    sampler is replaced, and ``type(loader)(**kwargs)`` is called.
    """
    if not isinstance(loader, torch_data.DataLoader):
        raise ValueError(f"The dataloader {loader} needs to subclass `torch.utils.data.DataLoader`")
    attrs = {k: v for k, v in vars(loader).items() if not k.startswith("_")}
    attrs["multiprocessing_context"] = loader.multiprocessing_context
    params = dict(inspect.signature(loader.__init__).parameters)
    non_defaults = {n for n, p in params.items() if n in attrs and p.default is not attrs[n]}
    non_defaults.add("dataset")
    kwargs = {k: v for k, v in attrs.items() if k in non_defaults}
    batch_sampler = loader.batch_sampler
    if batch_sampler is not None and type(batch_sampler) is not torch_data.BatchSampler:
        batch_sampler = type(batch_sampler)(
            sampler, batch_size=batch_sampler.batch_size, drop_last=batch_sampler.drop_last
        )
        kwargs.update(sampler=None, shuffle=False, batch_sampler=batch_sampler)
        kwargs.update(batch_size=1, drop_last=False)
    else:
        kwargs.update(sampler=sampler, shuffle=False, batch_sampler=None)
    missing = set(kwargs) - params.keys()
    assert not missing, f"the signature lacks {missing}"
    return type(loader)(**kwargs)


@pytest.mark.parametrize("worker_type", ["process"])
def test_lightning_style_reinstantiation_gives_a_stoker_loader_with_the_new_sampler(
    worker_type: str,
) -> None:
    """A trainer's DistributedSampler injection rebuilds a door loader yielding the new shard.

    A trainer's DistributedSampler injection rebuilds a door loader (stoker's engine, the
    same settings, worker_type kept) that yields exactly the new sampler's shard; the shuffle
    check trainers make on loader.sampler sees a torch RandomSampler.
    """
    dataset = Samples("tensor_int", length=12)
    loader = door.DataLoader(
        dataset, batch_size=3, shuffle=True, num_workers=2, worker_type=worker_type
    )
    assert isinstance(loader.sampler, torch_data.RandomSampler)  # Lightning: shuffled
    shard = torch_data.DistributedSampler(dataset, num_replicas=2, rank=1, shuffle=False)
    rebuilt = _lightning_reinstantiate(loader, shard)
    assert type(rebuilt) is door.DataLoader
    assert (rebuilt.num_workers, rebuilt.worker_type, rebuilt.batch_size) == (2, worker_type, 3)
    assert rebuilt.sampler is shard
    iterator = iter(rebuilt)
    assert len(iterator.worker_pids) == 2  # stoker's worker iterator, not torch's
    labels = [index for _, batch in iterator for index in batch.tolist()]
    assert labels == [index % 10 for index in range(1, 12, 2)]
    assert rebuilt.stats()["batches_served"] == 2  # stoker's engine ran it


@pytest.mark.parametrize("kwargs", COMPARED_WITH_TORCH_WORKERS)
@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_batches_are_exactly_torchs(kind: str, kwargs: dict[str, Any]) -> None:
    """Batches equal torch's default_collate output.

    Batches equal torch's default_collate output: NumPy arrays, NumPy scalars and Python
    numbers become tensors of torch's dtypes, strings and bytes stay lists, containers keep
    their types (namedtuples, dicts, lists for tuples).
    """
    dataset = Samples(kind)
    ours = list(door.DataLoader(dataset, batch_size=4, **kwargs))
    theirs = list(torch_data.DataLoader(dataset, batch_size=4, **_torch_kwargs(kwargs)))
    assert len(ours) == len(theirs) == 3
    if kind == "nested":  # the last field holds unseeded draws: compared in the seed tests
        ours, theirs = [b[:2] for b in ours], [b[:2] for b in theirs]
    for position, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        assert_same_batch(mine, other, f"batch {position}")


@pytest.mark.parametrize("kwargs", PROCESSES)
def test_mnist_targets_are_tensors_and_one_element_batches_convert_to_int(
    kwargs: dict[str, Any],
) -> None:
    """(tensor, int) samples give an int64 target tensor; int() of a one-element batch works.

    (tensor, int) samples give an int64 target tensor (target.to(device) works), and
    int() of a one-element batch works as on torch's tensor.
    """
    loader = door.DataLoader(Samples("tensor_int", length=5), batch_size=4, **kwargs)
    data, target = next(iter(loader))
    assert target.dtype == torch.int64
    assert target.to("cpu").shape == (4,)
    assert data.dtype == torch.float32
    assert data.shape == (4, 1, 3, 3)
    (_, last), *_ = list(door.DataLoader(Samples("tensor_int", 5), batch_size=None))[4:]
    assert int(last) == 4
    single = next(iter(door.DataLoader(Samples("numpy", 1), batch_size=1, **kwargs)))
    assert int(single[1]) == 0


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
    """generator=None draws from torch's global generator as torch does.

    generator=None draws from torch's global generator as torch does: after
    torch.manual_seed(s) the shuffled batches, each worker's seed (and its random, NumPy and
    torch draws, with process workers), and the state left for the program equal torch's.
    """
    threads = kwargs.get("worker_type") == "thread"  # they share the process's generators

    def run(module: Any, loader_kwargs: dict[str, Any]) -> tuple[list[Any], list[int]]:
        torch.manual_seed(13)
        random.seed(13)  # the main process's other generators, which torch leaves alone
        np.random.seed(13)
        dataset = SeedRecorder(draws=not threads)
        loader = module.DataLoader(dataset, batch_size=4, shuffle=True, **loader_kwargs)
        seen = batches_as_lists(loader) + batches_as_lists(loader)  # two epochs
        return seen, torch.get_rng_state().tolist()

    ours, state = run(door, kwargs)
    theirs, torch_state = run(torch_data, _torch_kwargs(kwargs))
    assert state == torch_state
    assert ours == theirs


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
    """Stoker's resume state works through the door.

    Stoker's resume state works through the door: after k batches of a torch-seeded
    shuffle, a fresh loader loaded with the state yields the same remaining batches.
    """
    torch.manual_seed(2)
    loader = door.DataLoader(Samples("tensor_int", 20), batch_size=3, shuffle=True, **kwargs)
    iterator = iter(loader)
    [next(iterator) for _ in range(3)]
    state = loader.state_dict()
    rest = [batch[1].tolist() for batch in iterator]
    fresh = door.DataLoader(Samples("tensor_int", 20), batch_size=3, shuffle=True, **kwargs)
    fresh.load_state_dict(state)
    assert [batch[1].tolist() for batch in fresh] == rest


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
