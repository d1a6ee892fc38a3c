"""DataLoader against torch.utils.data: same datasets, samplers and arguments, same batches/errors.

Batches are compared as NumPy (torch tensors converted, tuples and lists alike). Runs when torch
is installed. Known, documented differences are tested as such at the end of the module. The
same comparisons with two worker processes (``num_workers=2``, stoker's and torch's) are in
tests/integration/data/test_data_differential_loader_workers.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.utils.data as tud  # noqa: E402 - only after the importorskip above

import stoker.data as sd  # noqa: E402


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


@pytest.mark.parametrize("num_workers", [0])
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


@pytest.mark.parametrize(
    "sampler",
    [
        lambda lib, ds, g: {"sampler": lib.RandomSampler(ds, generator=g)},
        lambda lib, ds, g: {"sampler": lib.RandomSampler(ds, True, 7, generator=g)},
        lambda lib, ds, g: {
            "sampler": lib.WeightedRandomSampler([0.1, 0.5, 2.0, 1.0] * 3, 9, generator=g)
        },
        lambda lib, ds, g: {
            "batch_sampler": lib.BatchSampler(lib.SequentialSampler(ds), 5, drop_last=False)
        },
        lambda lib, ds, g: {"sampler": lib.SubsetRandomSampler([1, 3, 5, 7], generator=g)},
    ],
    ids=["random", "replacement", "weighted", "batch-sampler", "subset-random"],
)
def test_samplers_give_torchs_batches(sampler: Callable[..., dict[str, Any]]) -> None:
    """Each library's samplers, seeded alike, give the same batches through its own loader."""
    results = []
    for lib in (tud, sd):
        dataset = Records(12)
        extra = sampler(lib, dataset, torch.Generator().manual_seed(3))
        size = {} if "batch_sampler" in extra else {"batch_size": 2}
        loader = lib.DataLoader(dataset, **size, **extra)
        results.append([[to_numpy(b) for b in loader] for _ in range(2)])
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


@pytest.mark.parametrize("num_workers", [0])
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


def test_unbatched_iterable_length_warning_like_torch() -> None:
    """Without batching, both warn when more samples come than len() said."""
    for lib in (tud, sd):
        loader = lib.DataLoader(make_stream(lib, 3, claimed=2), batch_size=None)
        assert len(loader) == 2
        with pytest.warns(UserWarning, match=r"2.*3"):
            list(loader)


class Faulty(Records):
    """Raises ValueError at index 3."""

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index == 3:
            raise ValueError("faulty sample 3")
        return super().__getitem__(index)


@pytest.mark.parametrize("num_workers", [0])
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


BAD_ARGUMENTS: list[dict[str, Any]] = [
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1},
    {"persistent_workers": True},
    {"multiprocessing_context": "fork"},
    {"num_workers": 1, "multiprocessing_context": "nope"},
    {"num_workers": 1, "multiprocessing_context": 5},
    {"sampler": [0], "shuffle": True},
    {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "drop_last": True},
    {"batch_size": None, "drop_last": True},
    {"batch_size": 0},
    {"batch_size": -2},
]


@pytest.mark.parametrize("kwargs", BAD_ARGUMENTS, ids=[str(k) for k in BAD_ARGUMENTS])
def test_bad_arguments_raise_torchs_exception_types(kwargs: dict[str, Any]) -> None:
    """Every argument torch rejects is rejected with an exception of torch's type."""
    with pytest.raises((ValueError, TypeError)) as torch_error:
        tud.DataLoader(Records(4), **kwargs)
    with pytest.raises((ValueError, TypeError)) as stoker_error:
        sd.DataLoader(Records(4), **kwargs)
    assert isinstance(stoker_error.value, type(torch_error.value))


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_argument_errors_match(kwargs: dict[str, Any]) -> None:
    """Both libraries reject order arguments for an IterableDataset with ValueError."""
    for lib in (tud, sd):
        with pytest.raises(ValueError, match="IterableDataset"):
            lib.DataLoader(make_stream(lib, 3), **kwargs)


@pytest.mark.parametrize("name", ["batch_size", "sampler", "dataset", "persistent_workers"])
def test_frozen_attributes_match(name: str) -> None:
    """The same attributes are frozen after construction, with ValueError."""
    for lib in (tud, sd):
        loader = lib.DataLoader(Records(4))
        with pytest.raises(ValueError, match=name):
            setattr(loader, name, None)


def test_documented_differences() -> None:
    """prefetch_factor=0 and a timeout without workers raise ValueError (torch: AssertionError).

    prefetch_factor=0 (torch: AssertionError when iterating) and a timeout without workers
    (torch: AssertionError) raise ValueError, at construction and at iteration respectively.
    """
    with pytest.raises(ValueError, match="prefetch_factor must be >= 1"):
        sd.DataLoader(Records(4), num_workers=1, prefetch_factor=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            iter(tud.DataLoader(Records(4), timeout=1))
    with pytest.raises(ValueError, match="timeout must be 0 when num_workers=0"):
        iter(sd.DataLoader(Records(4), timeout=1))


class TensorSamples:
    """Samples are torch tensors (a user who has torch gets tensors back)."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> Any:
        return torch.full((2, 3), float(index)), torch.tensor(index)


@pytest.mark.parametrize("num_workers", [0])
def test_torch_tensor_samples_come_back_as_tensors(num_workers: int) -> None:
    """Tensor samples are collated into tensors, through workers too, equal to torch's."""
    torch_batches, stoker_batches = both(
        lambda lib: TensorSamples(), batch_size=4, num_workers=num_workers
    )
    assert_same(torch_batches, stoker_batches)
    batch = next(iter(sd.DataLoader(TensorSamples(), batch_size=4, num_workers=num_workers)))
    assert isinstance(batch[0], torch.Tensor)
