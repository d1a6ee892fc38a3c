"""Drop-in parity with torch 2.13: the same public names take the same arguments.

stoker may add to torch's API (a keyword-only argument with a default, a method) but never
change what torch code passes: every torch parameter exists with the same name, kind and default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch.utils.data as torch_data
import torch.utils.tensorboard as torch_tb

import stoker.data as stoker_data
import stoker.tensorboard as stoker_tb
import stoker.torch.data as door

DATA_NAMES = sorted(set(stoker_data.__all__) & set(dir(torch_data)))
# Defaults that differ on purpose: torch's is its global generator object, stoker's None means
# "the global generator": torch's when torch is imported (drawn as torch draws), else NumPy's.
DIFFERENT_DEFAULTS = {("stoker.data.random_split", "generator")}


def _callable_of(obj: Any) -> Callable[..., Any]:
    """The constructor of a class, or the function itself."""
    return obj.__init__ if inspect.isclass(obj) else obj  # type: ignore[no-any-return]


def _check_extends(ours: Callable[..., Any], theirs: Callable[..., Any], where: str) -> None:
    """Assert that ``ours`` accepts every call ``theirs`` accepts, with the same defaults."""
    mine = inspect.signature(ours).parameters
    torch_params = inspect.signature(theirs).parameters
    for name, param in torch_params.items():
        assert name in mine, f"{where}: torch's parameter {name!r} is missing"
        assert mine[name].kind == param.kind, f"{where}: {name!r} is {mine[name].kind}"
        if param.default is not inspect.Parameter.empty and (where, name) not in DIFFERENT_DEFAULTS:
            assert mine[name].default == param.default, f"{where}: default of {name!r}"
    assert list(mine)[: len(torch_params)] == list(torch_params), f"{where}: parameter order"
    for name in list(mine)[len(torch_params) :]:
        extra = mine[name]
        assert extra.kind in (extra.KEYWORD_ONLY, extra.VAR_KEYWORD), (
            f"{where}: added parameter {name!r} must be keyword-only"
        )
        assert extra.kind is extra.VAR_KEYWORD or extra.default is not extra.empty, (
            f"{where}: added parameter {name!r} needs a default"
        )


def test_every_torch_data_name_exists() -> None:
    """stoker.data exports every public name of torch.utils.data that it promises."""
    promised = {
        "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
        "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler",
        "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
        "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split",
    }  # fmt: skip
    assert promised <= set(stoker_data.__all__)


@pytest.mark.parametrize("name", DATA_NAMES)
def test_data_signatures_extend_torchs(name: str) -> None:
    """Each class or function takes torch's parameters in torch's order with torch's defaults."""
    ours, theirs = getattr(stoker_data, name), getattr(torch_data, name)
    if name == "WorkerInfo":
        return  # torch's takes **kwargs; checked by the worker tests instead
    _check_extends(_callable_of(ours), _callable_of(theirs), f"stoker.data.{name}")


@pytest.mark.parametrize("name", DATA_NAMES)
def test_data_generics_subscript_like_torchs(name: str) -> None:
    """`Name[int]` works in stoker wherever it works in torch, so annotations keep working."""
    theirs = getattr(torch_data, name)
    try:
        theirs[int]
    except TypeError:
        return  # not generic in torch either
    getattr(stoker_data, name)[int]


@pytest.mark.parametrize("cls", ["SummaryWriter", "FileWriter"])
def test_writer_methods_extend_torchs(cls: str) -> None:
    """Every public method of torch's writer exists in stoker's with a compatible signature."""
    ours, theirs = getattr(stoker_tb, cls), getattr(torch_tb, cls)
    methods = [m for m in dir(theirs) if not m.startswith("_") and callable(getattr(theirs, m))]
    assert methods, "torch's writer has no public methods?"
    for method in ["__init__", *methods]:
        assert hasattr(ours, method), f"{cls}.{method} is missing"
        _check_extends(getattr(ours, method), getattr(theirs, method), f"{cls}.{method}")


TORCH_DATA_PUBLIC = sorted(name for name in torch_data.__all__ if not name.startswith("_"))


def test_the_torch_door_has_every_public_name_of_torch_utils_data() -> None:
    """stoker.torch.data exports every public name of torch.utils.data (torch 2.13)."""
    assert set(TORCH_DATA_PUBLIC) <= set(door.__all__)


@pytest.mark.parametrize("name", TORCH_DATA_PUBLIC)
def test_the_torch_doors_names_are_torchs_or_extend_them(name: str) -> None:
    """Each door name is torch's own object or a subclass taking torch's constructor parameters.

    Each door name is torch's own object, or a subclass of torch's class whose constructor
    takes torch's parameters (names, kinds, order, defaults).
    """
    ours, theirs = getattr(door, name), getattr(torch_data, name)
    if ours is theirs:
        return
    assert inspect.isclass(ours) == inspect.isclass(theirs)
    if inspect.isclass(ours):
        assert issubclass(ours, theirs)
    _check_extends(_callable_of(ours), _callable_of(theirs), f"stoker.torch.data.{name}")
