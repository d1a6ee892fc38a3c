"""The resume contracts: which samplers are Stateful, and which resume at an offset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stoker.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from stoker.data._samplers.stateful import OffsetStateful, Stateful, is_stateful

SAMPLERS = {
    "sequential": lambda: SequentialSampler(range(6)),
    "random": lambda: RandomSampler(range(6), generator=1),
    "subset": lambda: SubsetRandomSampler([1, 3, 5], generator=1),
    "weighted": lambda: WeightedRandomSampler([1.0, 2.0, 3.0], 3, generator=1),
    "distributed": lambda: DistributedSampler(range(6), num_replicas=2, rank=0),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_stoker_samplers_resume_at_an_offset(name: str) -> None:
    """Every stoker sampler keeps the offset contract, alone and under a BatchSampler."""
    sampler = SAMPLERS[name]()
    assert isinstance(sampler, OffsetStateful)
    assert sampler.resumes_at_offset
    assert isinstance(BatchSampler(sampler, 2, False), Stateful)


class ReversedRandom(RandomSampler):
    """A RandomSampler subclass with its own order."""

    def __iter__(self) -> Iterator[int]:
        return reversed(list(super().__iter__()))


class ShiftedDistributed(DistributedSampler[int]):
    """A DistributedSampler subclass with its own order."""

    def __iter__(self) -> Iterator[int]:
        return (index + 1 for index in super().__iter__())


@pytest.mark.parametrize("cls", [ReversedRandom, ShiftedDistributed])
def test_a_subclass_with_its_own_iter_does_not_claim_offsets(cls: type[Any]) -> None:
    """Overriding __iter__ keeps the state methods but turns offset resumption off."""
    sampler = cls(range(6)) if cls is ReversedRandom else cls(range(6), num_replicas=1, rank=0)
    assert isinstance(sampler, Stateful)
    assert not sampler.resumes_at_offset


class OnlySaves(Sampler[int]):
    """A sampler with state_dict but no load_state_dict."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(3))

    def state_dict(self) -> dict[str, Any]:
        return {}


def test_half_a_contract_is_no_contract() -> None:
    """A sampler lacking load_state_dict is not Stateful; BatchSampler refuses to save it."""
    assert not isinstance(OnlySaves(), Stateful)
    with pytest.raises(TypeError, match="OnlySaves has no state_dict"):
        BatchSampler(OnlySaves(), 2, False).state_dict()


class _Both:
    def state_dict(self, detail: bool = False) -> dict[str, Any]:
        return {"detail": detail}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class _NeedsArguments(_Both):
    def state_dict(self, num_samples_yielded: int) -> dict[str, Any]:  # type: ignore[override]
        return {"yielded": num_samples_yielded}


class _NoLoad:
    def state_dict(self) -> dict[str, Any]:
        return {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (_Both(), True),
        (RandomSampler(range(3)), True),
        (_NeedsArguments(), False),
        (_NoLoad(), False),
        (object(), False),
    ],
    ids=["optional-argument", "stoker-sampler", "needs-arguments", "no-load", "neither"],
)
def test_is_stateful_wants_both_methods_and_a_state_dict_without_arguments(
    value: object, expected: bool
) -> None:
    """Stateful means load_state_dict and a state_dict callable with no arguments.

    Stateful means load_state_dict and a state_dict callable with no arguments: one that
    needs arguments (litdata's StreamingDataset) keeps another contract.
    """
    assert is_stateful(value) is expected
