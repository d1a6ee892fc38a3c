"""Hugging Face ``datasets`` through stoker's loaders, side by side with torch's.

Map-style datasets (numpy and torch formats) and an iterable dataset whose shards are split
across the workers by torch's ``get_worker_info()``: every sample exactly once, in torch's order.
No network: the hub is offline for the whole module.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from libs_loaders import RUNS, loader_class, make_loader, torch_setting

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

N = 22


@pytest.fixture(scope="module")
def hf() -> Iterator[Any]:
    """The ``datasets`` package, imported offline (HF_DATASETS_OFFLINE=1, HF_HUB_OFFLINE=1)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        datasets = importlib.import_module("datasets")
        patch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
        patch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
        yield datasets


@pytest.fixture(scope="module")
def table(hf: Any) -> Any:
    """An in-memory dataset: row i is ``{"id": i, "x": [i, 2 i]}``."""
    return hf.Dataset.from_dict({"id": list(range(N)), "x": [[i, 2 * i] for i in range(N)]})


def _read(door: str, setting: str, dataset: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every batch of a loader over ``dataset``, as ``{"id", "x"}`` of NumPy values and types."""
    if "shuffle" in kwargs:
        import torch

        kwargs["generator"] = torch.Generator().manual_seed(7)
    loader = make_loader(door, setting, dataset, batch_size=4, **kwargs)
    return [
        {key: (_types(value), _values(value)) for key, value in batch.items()} for batch in loader
    ]


def _types(value: Any) -> Any:
    """The type of a batch field, and of its parts when it is a list (one per position)."""
    return (
        [type(value)] + [type(part) for part in value] if isinstance(value, list) else type(value)
    )


def _values(value: Any) -> Any:
    """A batch field as nested lists, rows first (a list field holds one column per position)."""
    if isinstance(value, list):
        return np.stack([np.asarray(part) for part in value], axis=-1).tolist()
    return np.asarray(value).tolist()


def _check_samples(batches: list[dict[str, Any]]) -> None:
    """Every id once, each with its own x."""
    ids = [i for batch in batches for i in batch["id"][1]]
    assert sorted(ids) == list(range(N))
    rows = [x for batch in batches for x in batch["x"][1]]
    assert rows == [[i, 2 * i] for i in ids]


def _same_as_torch(door: str, ours: list[dict[str, Any]], torch: list[dict[str, Any]]) -> None:
    """The same values in the same order; the torch door also gives torch's types."""
    assert [{k: v for k, (_, v) in b.items()} for b in ours] == [
        {k: v for k, (_, v) in b.items()} for b in torch
    ]
    if door == "stoker.torch.data":
        assert [{k: t for k, (t, _) in b.items()} for b in ours] == [
            {k: t for k, (t, _) in b.items()} for b in torch
        ]


@pytest.mark.parametrize("form", ["numpy", "torch"])
@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_map_style_formats_read_every_row_once_as_torch_does(
    door: str, setting: str, form: str, table: Any
) -> None:
    """A shuffled map-style dataset in the numpy or torch format: every row once, torch's order."""
    loader_class(door)
    dataset = table.with_format(form)
    ours = _read(door, setting, dataset, shuffle=True)
    _check_samples(ours)
    _same_as_torch(door, ours, _read("torch", torch_setting(setting), dataset, shuffle=True))


@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_iterable_shards_are_split_across_workers_as_torch_does(
    door: str, setting: str, table: Any
) -> None:
    """``to_iterable_dataset(num_shards=4)``: each worker reads its shards, every row once."""
    loader_class(door)
    dataset = table.to_iterable_dataset(num_shards=4)
    ours = _read(door, setting, dataset)
    _check_samples(ours)
    _same_as_torch(door, ours, _read("torch", torch_setting(setting), dataset))
