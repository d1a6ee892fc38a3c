"""Datasets and comparisons for the torch door's tests, importable by spawn and forkserver workers.

:func:`assert_same_batch` compares a batch from ``stoker.torch.data`` with torch's for the same
samples: the same container types all the way down, and tensors equal in dtype, shape and
values. The datasets return the sample kinds torch programs use: ``(tensor, int)`` as in
pytorch/examples' mnist, NumPy arrays (``np.load``, ``np.asarray(image)``), dicts with strings,
namedtuples, NumPy scalars, Python floats and bools. Each records the worker's seeds, so that
the tests compare them with torch's too.

The ``check_*`` functions are test bodies that run with several worker settings: the unit tests
call them with settings that start no process (no workers, thread workers), the integration
tests with process workers.
"""

from __future__ import annotations

import collections
import inspect
import random
from typing import Any

import numpy as np
import torch
import torch.utils.data as torch_data

import stoker.torch.data as door

Point = collections.namedtuple("Point", ["x", "y"])

SAMPLE_KINDS = ["tensor_int", "numpy", "dict", "namedtuple", "scalars", "nested"]


def _seeds() -> list[float]:
    """One draw from each generator a worker seeds: random, NumPy's legacy global, torch."""
    return [random.random(), float(np.random.rand()), float(torch.rand(()))]


class Samples(torch_data.Dataset[Any]):
    """``length`` samples of one kind (see :data:`SAMPLE_KINDS`)."""

    def __init__(self, kind: str, length: int = 10, size: int = 3) -> None:
        self.kind = kind
        self.length = length
        self.size = size

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        kind = self.kind
        if kind == "tensor_int":
            return torch.full((1, self.size, self.size), float(index)), index % 10
        if kind == "numpy":
            image = np.arange(self.size * self.size, dtype=np.uint8).reshape(self.size, -1)
            return image + index, np.float32(index) / 2
        if kind == "dict":
            return {"x": np.full(self.size, index, np.int16), "name": f"s{index}", "ok": True}
        if kind == "namedtuple":
            return Point(torch.tensor([index, -index]), float(index))
        if kind == "scalars":
            return np.int32(index), np.float64(index) / 3, np.bool_(index % 2), index * 1.5
        return [{"a": (index, [np.float16(index)])}, b"raw", _seeds()]


def assert_same_batch(ours: Any, theirs: Any, where: str = "batch") -> None:
    """Assert that two batches have the same structure, types, dtypes, shapes and values."""
    assert type(ours) is type(theirs), f"{where}: {type(ours)} != {type(theirs)}"
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} != {theirs.dtype}"
        assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} != {theirs.shape}"
        assert torch.equal(ours, theirs), f"{where}: {ours} != {theirs}"
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs), f"{where}: keys"
        for key in theirs:
            assert_same_batch(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), f"{where}: length"
        for position, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            assert_same_batch(mine, other, f"{where}[{position}]")
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


class SeedRecorder(torch_data.Dataset[Any]):
    """Sample ``i`` is ``i``, the worker seed and the worker's draws (unless ``draws=False``).

    Sample ``i`` is ``(i, worker seed, random, NumPy and torch draws in the worker)``; the
    draws are left out with ``draws=False`` (thread workers share the process's generators).
    """

    def __init__(self, length: int = 12, draws: bool = True) -> None:
        self.length = length
        self.draws = draws

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        info = torch_data.get_worker_info()
        if info is None:
            from stoker.data import get_worker_info

            info = get_worker_info()
        seed = -1 if info is None else info.seed
        return (index, seed, _seeds()) if self.draws else (index, seed)


def batches_as_lists(loader: Any) -> list[Any]:
    """Every batch of one epoch, tensors as nested lists (comparable across loaders)."""
    return [_plain(batch) for batch in loader]


def _plain(batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, dict):
        return {key: _plain(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_plain(value) for value in batch]
    return batch


class TensorHolder(torch_data.Dataset[Any]):
    """A dataset holding a tensor: sample ``i`` is row ``i`` of it (2 floats)."""

    def __init__(self, length: int = 12) -> None:
        self.rows = torch.arange(2 * length, dtype=torch.float32).reshape(length, 2)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Any:
        return self.rows[index]


class Counted(torch_data.Dataset[int]):
    """Counts its fetches in a multiprocessing Value, under a Lock, both of the loader's context."""

    def __init__(self, context: Any, length: int = 12) -> None:
        self.length = length
        self.count = context.Value("i", 0)
        self.lock = context.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.count.value += 1
        return index


class Troubled(torch_data.Dataset[int]):
    """Index 2 raises ValueError, exits the process (``exit``) or sleeps 30 s (``sleep``)."""

    def __init__(self, trouble: str) -> None:
        self.trouble = trouble

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        if index == 2:
            if self.trouble == "raise":
                raise ValueError("index 2 is bad")
            if self.trouble == "exit":
                import os

                os._exit(3)
            import time

            time.sleep(30)
        return index


def torch_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of stoker's loader without ``worker_type``, for torch's loader."""
    return {key: value for key, value in kwargs.items() if key != "worker_type"}


def lightning_reinstantiate(loader: Any, sampler: Any) -> Any:
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


def check_lightning_style_reinstantiation(worker_type: str) -> None:
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
    rebuilt = lightning_reinstantiate(loader, shard)
    assert type(rebuilt) is door.DataLoader
    assert (rebuilt.num_workers, rebuilt.worker_type, rebuilt.batch_size) == (2, worker_type, 3)
    assert rebuilt.sampler is shard
    iterator = iter(rebuilt)
    assert len(iterator.worker_pids) == 2  # stoker's worker iterator, not torch's
    labels = [index for _, batch in iterator for index in batch.tolist()]
    assert labels == [index % 10 for index in range(1, 12, 2)]
    assert rebuilt.stats()["batches_served"] == 2  # stoker's engine ran it


def check_batches_are_exactly_torchs(kind: str, kwargs: dict[str, Any]) -> None:
    """Batches equal torch's default_collate output.

    Batches equal torch's default_collate output: NumPy arrays, NumPy scalars and Python
    numbers become tensors of torch's dtypes, strings and bytes stay lists, containers keep
    their types (namedtuples, dicts, lists for tuples).
    """
    dataset = Samples(kind)
    ours = list(door.DataLoader(dataset, batch_size=4, **kwargs))
    theirs = list(torch_data.DataLoader(dataset, batch_size=4, **torch_kwargs(kwargs)))
    assert len(ours) == len(theirs) == 3
    if kind == "nested":  # the last field holds unseeded draws: compared in the seed tests
        ours, theirs = [b[:2] for b in ours], [b[:2] for b in theirs]
    for position, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        assert_same_batch(mine, other, f"batch {position}")


def check_mnist_targets_and_one_element_batches(kwargs: dict[str, Any]) -> None:
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


def check_seeds_and_global_state_after_manual_seed(kwargs: dict[str, Any]) -> None:
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
    theirs, torch_state = run(torch_data, torch_kwargs(kwargs))
    assert state == torch_state
    assert ours == theirs


def check_state_dict_resumes_a_shuffled_torch_program(kwargs: dict[str, Any]) -> None:
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


class WhoAmI(torch_data.Dataset[Any]):
    """Sample ``i`` is ``(i, worker id, type name of the info)`` as door.get_worker_info says."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> Any:
        info = door.get_worker_info()
        return index, info.id, type(info).__module__.split(".")[0]


def check_every_worker_knows_its_id(
    loader_class: Any, kwargs: dict[str, Any], answers: str
) -> None:
    """The answer is stoker's WorkerInfo in a stoker worker and torch's in a torch worker.

    In a stoker worker (process or thread) the answer is stoker's WorkerInfo, in a worker of
    torch's own DataLoader torch's; each names the worker's id. ``answers`` is the top-level
    package of the info's type (``"stoker"`` or ``"torch"``).
    """
    loader = loader_class(WhoAmI(), batch_size=None, num_workers=2, **kwargs)
    seen = list(loader)
    assert sorted(int(index) for index, _, _ in seen) == [0, 1, 2, 3]
    assert {int(worker) for _, worker, _ in seen} == {0, 1}
    assert {kind for _, _, kind in seen} == {answers}
