"""DataLoader against torch.utils.data with two worker processes: same batches, seeds, errors.

The comparisons of test_data_differential_loader.py with ``num_workers=2`` (stoker's process
workers and torch's): map-style and iterable datasets, persistent workers, worker seeds and
draws, a dataset's error, tensor samples. Batches are compared as NumPy (torch tensors
converted, tuples and lists alike). Runs when torch is installed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.utils.data as tud  # noqa: E402 - only after the importorskip above

import stoker.data as sd  # noqa: E402

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


def to_numpy(value: Any) -> Any:
    """Turn a batch into NumPy arrays and plain lists/dicts for comparison."""
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, dict):
        return {key: to_numpy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_numpy(item) for item in value]
    if isinstance(value, (int, float, np.number)):
        return np.asarray(value)
    return value


def assert_same(left: Any, right: Any) -> None:
    """Assert two converted batches are equal in structure, dtype kind and values."""
    if isinstance(left, dict):
        assert isinstance(right, dict)
        assert left.keys() == right.keys()
        for key in left:
            assert_same(left[key], right[key])
    elif isinstance(left, list):
        assert isinstance(right, list)
        assert len(left) == len(right)
        for a, b in zip(left, right, strict=True):
            assert_same(a, b)
    elif isinstance(left, np.ndarray):
        assert isinstance(right, np.ndarray), (left, right)
        assert left.shape == right.shape
        assert left.dtype.kind == right.dtype.kind
        np.testing.assert_array_equal(left, right)
    else:
        assert left == right


class Records:
    """A plain map-style dataset (valid for both libraries): dict samples with arrays."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"x": np.arange(3, dtype=np.float32) + index, "y": index, "name": f"r{index}"}


class Pairs(Records):
    """Tuple samples (array, int)."""

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        return np.full((2, 2), index, dtype=np.int64), index


def both(make: Callable[[Any], Any], **kwargs: Any) -> tuple[list[Any], list[Any]]:
    """Iterate the loader built by ``make(library)`` with each library; return both batch lists."""
    results = []
    for lib in (tud, sd):
        loader = lib.DataLoader(make(lib), **kwargs)
        results.append([to_numpy(batch) for batch in loader])
    return results[0], results[1]


@pytest.mark.parametrize("num_workers", [2])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"batch_size": 3},
        {"batch_size": 3, "drop_last": True},
        {"batch_size": None},
        {"batch_size": 4, "shuffle": True},
    ],
    ids=["default", "batch3", "drop-last", "unbatched", "shuffle"],
)
@pytest.mark.parametrize("dataset", [Records, Pairs])
def test_map_style_batches_equal_torch(
    dataset: type[Records], kwargs: dict[str, Any], num_workers: int
) -> None:
    """Batches equal torch's, with shuffling driven by equally seeded torch generators."""
    results = []
    for lib in (tud, sd):
        extra = {}
        if kwargs.get("shuffle"):
            extra["generator"] = torch.Generator().manual_seed(17)
        loader = lib.DataLoader(dataset(10), num_workers=num_workers, **kwargs, **extra)
        results.append([to_numpy(batch) for batch in loader])
        assert len(loader) == len(results[-1])
    assert_same(results[0], results[1])


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


def make_stream(lib: Any, n: int, claimed: int | None = None) -> Any:
    """An IterableDataset of ``lib`` that shards range(n) by that library's worker info."""

    class Stream(lib.IterableDataset):  # type: ignore[misc, name-defined]
        def __len__(self) -> int:
            return n if claimed is None else claimed

        def __iter__(self) -> Iterator[int]:
            info = lib.get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, n, step))

    return Stream()


@pytest.mark.parametrize("num_workers", [2])
@pytest.mark.parametrize(
    "kwargs",
    [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}],
    ids=["batch3", "drop-last", "unbatched"],
)
def test_iterable_dataset_batches_equal_torch(kwargs: dict[str, Any], num_workers: int) -> None:
    """Iterable datasets give torch's batches and len(), with and without workers."""
    torch_batches, stoker_batches = both(
        lambda lib: make_stream(lib, 11), num_workers=num_workers, **kwargs
    )
    assert_same(torch_batches, stoker_batches)
    lengths = [len(lib.DataLoader(make_stream(lib, 11), **kwargs)) for lib in (tud, sd)]
    assert lengths[0] == lengths[1]


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


class Faulty(Records):
    """Raises ValueError at index 3."""

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index == 3:
            raise ValueError("faulty sample 3")
        return super().__getitem__(index)


@pytest.mark.parametrize("num_workers", [2])
def test_dataset_errors_have_torchs_type(num_workers: int) -> None:
    """A dataset error surfaces with the same type and original message in both libraries."""
    for lib in (tud, sd):
        iterator = iter(lib.DataLoader(Faulty(6), batch_size=2, num_workers=num_workers))
        with pytest.raises(ValueError, match="faulty sample 3"):
            list(iterator)
        # torch's iterator, when left to the garbage collector after a worker error, waits
        # 5 s per worker; stopping it explicitly keeps this test fast.
        stop = getattr(iterator, "_shutdown_workers", None) or getattr(iterator, "close", list)
        stop()


class TensorSamples:
    """Samples are torch tensors (a user who has torch gets tensors back)."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> Any:
        return torch.full((2, 3), float(index)), torch.tensor(index)


@pytest.mark.parametrize("num_workers", [2])
def test_torch_tensor_samples_come_back_as_tensors(num_workers: int) -> None:
    """Tensor samples are collated into tensors, through workers too, equal to torch's."""
    torch_batches, stoker_batches = both(
        lambda lib: TensorSamples(), batch_size=4, num_workers=num_workers
    )
    assert_same(torch_batches, stoker_batches)
    batch = next(iter(sd.DataLoader(TensorSamples(), batch_size=4, num_workers=num_workers)))
    assert isinstance(batch[0], torch.Tensor)
