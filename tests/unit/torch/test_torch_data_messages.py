"""Errors and warnings: wherever torch raises or warns, stoker's text holds torch's.

Each case runs the same code three times, with ``torch.utils.data``, ``stoker.data`` and
``stoker.torch.data`` as the module, and compares: the exception stoker raises is an instance
of torch's exception's type and its message contains torch's message (stoker's explanation
follows it); a warning's text likewise. Cases that only concern dataset classes run for
``stoker.data`` alone (the torch door re-exports torch's own dataset classes).
"""

from __future__ import annotations

import gc
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as torch_data

import stoker.data as stoker_data
import stoker.torch.data as door

BOTH = ("stoker.data", "stoker.torch.data")
DATA = ("stoker.data",)
MODULES = {"stoker.data": stoker_data, "stoker.torch.data": door}


@dataclass(frozen=True)
class Case:
    """One condition: ``run(module)`` triggers it with the module's classes."""

    name: str
    run: Callable[[Any], Any]
    modules: tuple[str, ...] = BOTH
    expected: str | None = None  # a fixed text to look for, where torch's message varies


def _iterable(module: Any, length: int = 2, samples: int = 3) -> Any:
    class Stream(module.IterableDataset):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[int]:
            return iter(range(samples))

        def __len__(self) -> int:
            return length

        def __repr__(self) -> str:
            return "Stream()"

    return Stream()


def _length_warning(module: Any) -> None:
    loader = module.DataLoader(_iterable(module), batch_size=1)
    len(loader)
    list(loader)


def _set_frozen(module: Any) -> None:
    loader = module.DataLoader(range(4))
    loader.batch_size = 2


def _iterate(module: Any, *args: Any, **kwargs: Any) -> None:
    list(module.DataLoader(*args, **kwargs))


def _bad_samples(samples: list[Any]) -> Callable[[Any], Any]:
    return lambda module: _iterate(module, samples, batch_size=len(samples))


def _too_many_workers(module: Any) -> None:
    module.DataLoader(range(4), num_workers=999)


class _Nested:
    """Stands for a dataset whose __getitems__ returns one sample too few."""

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index: int) -> int:
        return index

    def __getitems__(self, indices: list[int]) -> list[int]:
        return list(indices)[:-1]


def _subset_subclass(module: Any) -> None:
    class Doubled(module.Subset):  # type: ignore[name-defined,misc]
        def __getitem__(self, index: int) -> Any:
            return 2 * super().__getitem__(index)

    Doubled(range(4), [0, 1])


def _abstract_iterable(module: Any) -> None:
    class NoIter(module.IterableDataset):  # type: ignore[name-defined,misc]
        pass

    NoIter()


def _map_dataset(module: Any) -> Any:
    class Map(module.Dataset):  # type: ignore[name-defined,misc]
        def __getitem__(self, index: int) -> int:
            return index

        def __len__(self) -> int:
            return 2

    return Map()


NESTED = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
SPARSE = torch.zeros(2, 2).to_sparse()

CASES = [
    Case("negative num_workers", lambda m: m.DataLoader(range(4), num_workers=-1)),
    Case("negative timeout", lambda m: m.DataLoader(range(4), timeout=-1)),
    Case("prefetch_factor without workers", lambda m: m.DataLoader(range(4), prefetch_factor=2)),
    Case(
        "negative prefetch_factor",
        lambda m: m.DataLoader(range(4), num_workers=2, prefetch_factor=-1),
    ),
    Case(
        "zero prefetch_factor",
        lambda m: _iterate(m, range(4), num_workers=1, prefetch_factor=0),
    ),
    Case(
        "persistent_workers without workers",
        lambda m: m.DataLoader(range(4), persistent_workers=True),
    ),
    Case("IterableDataset and shuffle", lambda m: m.DataLoader(_iterable(m), shuffle=True)),
    Case("IterableDataset and sampler", lambda m: m.DataLoader(_iterable(m), sampler=[0, 1])),
    Case(
        "IterableDataset and batch_sampler",
        lambda m: m.DataLoader(_iterable(m), batch_sampler=[[0]]),
    ),
    Case("sampler and shuffle", lambda m: m.DataLoader(range(4), sampler=[0], shuffle=True)),
    Case(
        "batch_sampler and batch_size",
        lambda m: m.DataLoader(range(4), batch_sampler=[[0]], batch_size=2),
    ),
    Case(
        "batch_size=None and drop_last",
        lambda m: m.DataLoader(range(4), batch_size=None, drop_last=True),
    ),
    Case(
        "unknown start method",
        lambda m: m.DataLoader(range(4), num_workers=2, multiprocessing_context="nope"),
    ),
    Case(
        "context of a wrong type",
        lambda m: m.DataLoader(range(4), num_workers=2, multiprocessing_context=5),
    ),
    Case(
        "context without workers",
        lambda m: m.DataLoader(range(4), multiprocessing_context="spawn"),
    ),
    Case("setting a frozen attribute", _set_frozen),
    Case("more workers than CPUs", _too_many_workers),
    Case(
        "pin_memory_device is deprecated",
        lambda m: _iterate(m, range(2), pin_memory=True, pin_memory_device="cuda"),
    ),
    Case("pin_memory without an accelerator", lambda m: _iterate(m, range(2), pin_memory=True)),
    Case("IterableDataset longer than its len", _length_warning),
    Case("timeout without workers", lambda m: _iterate(m, range(2), timeout=1)),
    Case("unequal sequence lengths", _bad_samples([[1, 2], [1]])),
    Case("unsupported sample type", _bad_samples([object(), object()])),
    Case("NumPy strings", _bad_samples([np.array(["a"]), np.array(["b"])])),
    Case("NumPy arrays of unequal shapes", _bad_samples([np.zeros(3), np.zeros(4)])),
    Case("tensors of unequal shapes", _bad_samples([torch.zeros(3), torch.zeros(2, 2)])),
    Case("nested tensors", _bad_samples([NESTED, NESTED])),
    Case("sparse tensors", _bad_samples([SPARSE, SPARSE])),
    Case(
        "RandomSampler replacement not a bool",
        lambda m: m.RandomSampler(range(3), replacement="yes"),
    ),
    Case("RandomSampler num_samples=0", lambda m: m.RandomSampler(range(3), num_samples=0)),
    Case("RandomSampler num_samples a str", lambda m: m.RandomSampler(range(3), num_samples="3")),
    Case("RandomSampler of nothing", lambda m: m.RandomSampler([])),
    Case("WeightedRandomSampler num_samples=0", lambda m: m.WeightedRandomSampler([1.0], 0)),
    Case("WeightedRandomSampler num_samples=True", lambda m: m.WeightedRandomSampler([1.0], True)),
    Case(
        "WeightedRandomSampler replacement=1",
        lambda m: m.WeightedRandomSampler([1.0], 1, replacement=1),
    ),
    Case(
        "WeightedRandomSampler weights 2-d",
        lambda m: m.WeightedRandomSampler([[1.0, 2.0], [3.0, 4.0]], 2),
    ),
    Case(
        "WeightedRandomSampler weights all zero",
        lambda m: list(m.WeightedRandomSampler([0.0, 0.0], 2)),
    ),
    Case(
        "WeightedRandomSampler negative weight",
        lambda m: list(m.WeightedRandomSampler([1.0, -1.0], 2)),
    ),
    Case(
        "WeightedRandomSampler too few weights without replacement",
        lambda m: list(m.WeightedRandomSampler([1.0, 1.0], 3, replacement=False)),
    ),
    Case("BatchSampler batch_size=0", lambda m: m.BatchSampler(range(3), 0, False)),
    Case("BatchSampler drop_last not a bool", lambda m: m.BatchSampler(range(3), 2, "x")),
    Case(
        "DistributedSampler rank out of range",
        lambda m: m.DistributedSampler(range(4), num_replicas=2, rank=2),
    ),
    Case(
        "DistributedSampler without a process group",
        lambda m: m.DistributedSampler(range(4)),
    ),
    Case(
        "TensorDataset size mismatch",
        lambda m: m.TensorDataset(torch.zeros(2), torch.zeros(3)),
        DATA,
    ),
    Case("StackDataset both forms", lambda m: m.StackDataset(range(2), a=range(2)), DATA),
    Case("StackDataset of nothing", lambda m: m.StackDataset(), DATA),
    Case("StackDataset lengths", lambda m: m.StackDataset(range(2), range(3)), DATA),
    Case("StackDataset keyword lengths", lambda m: m.StackDataset(a=range(2), b=range(3)), DATA),
    Case(
        "StackDataset nested __getitems__",
        lambda m: m.StackDataset(_Nested()).__getitems__([0, 1]),
        DATA,
    ),
    Case(
        "StackDataset keyword nested __getitems__",
        lambda m: m.StackDataset(a=_Nested()).__getitems__([0, 1]),
        DATA,
    ),
    Case("ConcatDataset of nothing", lambda m: m.ConcatDataset([]), DATA),
    Case("ConcatDataset of an iterable", lambda m: m.ConcatDataset([_iterable(m)]), DATA),
    Case("ConcatDataset index below", lambda m: m.ConcatDataset([range(2)])[-3], DATA),
    Case("ConcatDataset index above", lambda m: m.ConcatDataset([range(2)])[2], DATA),
    Case(
        "ChainDataset of a map dataset",
        lambda m: list(m.ChainDataset([_map_dataset(m)])),
        DATA,
    ),
    Case("Subset subclass without __getitems__", _subset_subclass, DATA),
    Case("Dataset without __getitem__", lambda m: m.Dataset()[0], DATA),
    Case("IterableDataset without __iter__", _abstract_iterable, DATA),
    Case("random_split fraction", lambda m: m.random_split(range(4), [1.5, -0.5]), DATA),
    Case("random_split empty split", lambda m: m.random_split(range(1), [0.5, 0.5]), DATA),
    Case("random_split lengths", lambda m: m.random_split(range(4), [1, 2]), DATA),
    Case(
        "pickling an iterator",
        lambda m: pickle.dumps(iter(m.DataLoader(range(2)))),
        expected="cannot be pickled",
    ),
]


def _outcome(run: Callable[[Any], Any], module: Any) -> tuple[str, Any]:
    """("raise", exception) or ("warn", [warnings]) of ``run(module)``.

    Objects the run left behind are collected here, with unraisable errors ignored: torch's
    worker iterator whose ``__init__`` failed (prefetch_factor=0) raises AttributeError in its
    ``__del__``, which would otherwise surface in a later test.
    """
    raised: Exception | None = None
    hook = sys.unraisablehook
    sys.unraisablehook = hook if module is not torch_data else lambda _: None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run(module)
            except Exception as err:  # the condition under test
                raised = err.with_traceback(None)  # its frames hold what the run left behind
        gc.collect()
    finally:
        sys.unraisablehook = hook
    return ("raise", raised) if raised is not None else ("warn", list(caught))


def _texts(caught: list[warnings.WarningMessage]) -> list[tuple[type[Warning], str]]:
    return [(w.category, str(w.message)) for w in caught]


PAIRS = [
    pytest.param(case, module, id=f"{case.name}-{module}")
    for case in CASES
    for module in case.modules
]


@pytest.mark.parametrize(("case", "module"), PAIRS)
def test_stoker_says_what_torch_says(case: Case, module: str) -> None:
    """Stoker raises or warns where torch does, with a subtype and torch's message.

    Stoker raises (or warns) where torch does, with a subtype of torch's exception (or
    warning category) whose message contains torch's message.
    """
    kind, theirs = _outcome(case.run, torch_data)
    ours_kind, ours = _outcome(case.run, MODULES[module])
    if kind == "raise":
        assert ours_kind == "raise", f"torch raised {theirs!r}; stoker did not"
        assert isinstance(ours, type(theirs)), f"{type(ours)} is not a {type(theirs)}"
        expected = case.expected or str(theirs)
        assert expected in str(ours), f"\ntorch:  {theirs}\nstoker: {ours}"
        return
    torch_warnings = _texts(theirs)
    assert torch_warnings, "torch neither raised nor warned: the case is wrong"
    assert ours_kind == "warn", f"stoker raised {ours!r}"
    for category, text in torch_warnings:
        matches = [t for c, t in _texts(ours) if issubclass(c, category) and text in t]
        assert matches, f"\ntorch warned: {text}\nstoker warned: {_texts(ours)}"
