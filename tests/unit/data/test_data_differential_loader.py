"""DataLoader against torch.utils.data: same datasets, samplers and arguments, same batches/errors.

Batches are compared as NumPy (torch tensors converted, tuples and lists alike). Runs when torch
is installed. Known, documented differences are tested as such at the end of the module. The
same comparisons with two worker processes (``num_workers=2``, stoker's and torch's) are in
tests/integration/data/test_data_differential_loader_workers.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

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
    make_stream,
    to_numpy,
)

import stoker.data as sd  # noqa: E402


@pytest.mark.parametrize("num_workers", [0])
@pytest.mark.parametrize("kwargs", MAP_STYLE_KWARGS)
@pytest.mark.parametrize("dataset", [Records, Pairs])
def test_map_style_batches_equal_torch(
    dataset: type[Records], kwargs: dict[str, Any], num_workers: int
) -> None:
    """Batches equal torch's, with shuffling driven by equally seeded torch generators."""
    check_map_style_batches_equal_torch(dataset, kwargs, num_workers)


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


@pytest.mark.parametrize("num_workers", [0])
@pytest.mark.parametrize("kwargs", ITERABLE_KWARGS)
def test_iterable_dataset_batches_equal_torch(kwargs: dict[str, Any], num_workers: int) -> None:
    """Iterable datasets give torch's batches and len(), with and without workers."""
    check_iterable_dataset_batches_equal_torch(kwargs, num_workers)


def test_unbatched_iterable_length_warning_like_torch() -> None:
    """Without batching, both warn when more samples come than len() said."""
    for lib in (tud, sd):
        loader = lib.DataLoader(make_stream(lib, 3, claimed=2), batch_size=None)
        assert len(loader) == 2
        with pytest.warns(UserWarning, match=r"2.*3"):
            list(loader)


@pytest.mark.parametrize("num_workers", [0])
def test_dataset_errors_have_torchs_type(num_workers: int) -> None:
    """A dataset error surfaces with the same type and original message in both libraries."""
    check_dataset_errors_have_torchs_type(num_workers)


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


@pytest.mark.parametrize("num_workers", [0])
def test_torch_tensor_samples_come_back_as_tensors(num_workers: int) -> None:
    """Tensor samples are collated into tensors, through workers too, equal to torch's."""
    check_torch_tensor_samples_come_back_as_tensors(num_workers)
