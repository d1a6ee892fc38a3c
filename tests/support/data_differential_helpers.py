"""Datasets and comparisons for the tests of stoker.data's DataLoader against torch.utils.data.

Batches are compared as NumPy (:func:`to_numpy`: torch tensors converted, tuples and lists
alike) by :func:`assert_same`. The ``check_*`` functions are test bodies run with
``num_workers=0`` by the unit tests and with two worker processes by the integration tests.
Importing this module imports torch: test modules skip first when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import stoker.data as sd

MAP_STYLE_KWARGS = [
    pytest.param({}, id="default"),
    pytest.param({"batch_size": 3}, id="batch3"),
    pytest.param({"batch_size": 3, "drop_last": True}, id="drop-last"),
    pytest.param({"batch_size": None}, id="unbatched"),
    pytest.param({"batch_size": 4, "shuffle": True}, id="shuffle"),
]
"""Loader arguments of the map-style comparisons (parametrize ``kwargs`` with them)."""
ITERABLE_KWARGS = [
    pytest.param({"batch_size": 3}, id="batch3"),
    pytest.param({"batch_size": 3, "drop_last": True}, id="drop-last"),
    pytest.param({"batch_size": None}, id="unbatched"),
]
"""Loader arguments of the iterable-dataset comparisons."""


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


class Faulty(Records):
    """Raises ValueError at index 3."""

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index == 3:
            raise ValueError("faulty sample 3")
        return super().__getitem__(index)


class TensorSamples:
    """Samples are torch tensors (a user who has torch gets tensors back)."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> Any:
        return torch.full((2, 3), float(index)), torch.tensor(index)


def both(make: Callable[[Any], Any], **kwargs: Any) -> tuple[list[Any], list[Any]]:
    """Iterate the loader built by ``make(library)`` with each library; return both batch lists."""
    results = []
    for lib in (tud, sd):
        loader = lib.DataLoader(make(lib), **kwargs)
        results.append([to_numpy(batch) for batch in loader])
    return results[0], results[1]


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


def check_map_style_batches_equal_torch(
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


def check_iterable_dataset_batches_equal_torch(kwargs: dict[str, Any], num_workers: int) -> None:
    """Iterable datasets give torch's batches and len(), with and without workers."""
    torch_batches, stoker_batches = both(
        lambda lib: make_stream(lib, 11), num_workers=num_workers, **kwargs
    )
    assert_same(torch_batches, stoker_batches)
    lengths = [len(lib.DataLoader(make_stream(lib, 11), **kwargs)) for lib in (tud, sd)]
    assert lengths[0] == lengths[1]


def check_dataset_errors_have_torchs_type(num_workers: int) -> None:
    """A dataset error surfaces with the same type and original message in both libraries."""
    for lib in (tud, sd):
        iterator = iter(lib.DataLoader(Faulty(6), batch_size=2, num_workers=num_workers))
        with pytest.raises(ValueError, match="faulty sample 3"):
            list(iterator)
        # torch's iterator, when left to the garbage collector after a worker error, waits
        # 5 s per worker; stopping it explicitly keeps this test fast.
        stop = getattr(iterator, "_shutdown_workers", None) or getattr(iterator, "close", list)
        stop()


def check_torch_tensor_samples_come_back_as_tensors(num_workers: int) -> None:
    """Tensor samples are collated into tensors, through workers too, equal to torch's."""
    torch_batches, stoker_batches = both(
        lambda lib: TensorSamples(), batch_size=4, num_workers=num_workers
    )
    assert_same(torch_batches, stoker_batches)
    batch = next(iter(sd.DataLoader(TensorSamples(), batch_size=4, num_workers=num_workers)))
    assert isinstance(batch[0], torch.Tensor)
