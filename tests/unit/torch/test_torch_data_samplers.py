"""Tests for stoker.torch.data's samplers: torch's classes, torch's orders, stoker's state.

Tests for stoker.torch.data's samplers: torch's classes by isinstance, torch's orders, stoker's
resume state.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torch.utils.data as torch_data

import stoker.data as stoker_data
import stoker.torch.data as door

MAKERS = {
    "RandomSampler": lambda m, g: m.RandomSampler(range(10), generator=g),
    "RandomSampler with replacement": lambda m, g: m.RandomSampler(
        range(10), replacement=True, num_samples=45, generator=g
    ),
    "SequentialSampler": lambda m, g: m.SequentialSampler(range(10)),
    "SubsetRandomSampler": lambda m, g: m.SubsetRandomSampler([5, 7, 9, 11], generator=g),
    "WeightedRandomSampler": lambda m, g: m.WeightedRandomSampler([0.1, 1, 2, 3], 9, generator=g),
    "DistributedSampler": lambda m, g: m.DistributedSampler(range(10), num_replicas=3, rank=1),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_door_samplers_are_torchs_and_stokers(name: str) -> None:
    """Each door sampler is an instance of torch's class and of stoker's, and runs stoker's code.

    Each door sampler is an instance of torch's class of its name and of stoker's, and
    iterates with stoker's code (torch's __iter__ never runs).
    """
    sampler = MAKERS[name](door, None)
    cls = name.split(" ", maxsplit=1)[0]
    assert isinstance(sampler, getattr(torch_data, cls))
    assert isinstance(sampler, getattr(stoker_data, cls))
    assert type(sampler).__iter__ is not getattr(torch_data, cls).__iter__
    assert hasattr(sampler, "state_dict")


@pytest.mark.parametrize("seeded", ["manual_seed", "generator"])
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_door_samplers_draw_torchs_orders(name: str, seeded: str) -> None:
    """Two seeded epochs of each door sampler equal torch's, leaving the global generator alike.

    After torch.manual_seed (generator=None) or with a torch.Generator, two epochs of each
    door sampler equal torch's, and torch's global generator ends in the same state.
    """

    def epochs(module: Any) -> tuple[list[list[int]], list[int]]:
        torch.manual_seed(5)
        generator = torch.Generator().manual_seed(6) if seeded == "generator" else None
        sampler = MAKERS[name](module, generator)
        if name == "DistributedSampler":
            drawn = [list(sampler)]
            sampler.set_epoch(1)
            drawn.append(list(sampler))
        else:
            drawn = [list(sampler), list(sampler)]
        return drawn, torch.get_rng_state().tolist()

    assert epochs(door) == epochs(torch_data)


@pytest.mark.parametrize("name", ["RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler"])
def test_door_samplers_resume_from_a_state_mid_epoch(name: str) -> None:
    """Stoker's state_dict works on the door's samplers: the rest of the epoch comes back."""
    torch.manual_seed(1)
    sampler = MAKERS[name](door, None)
    iterator = iter(sampler)
    [next(iterator) for _ in range(3)]
    state = json.loads(json.dumps(sampler.state_dict()))
    rest = list(iterator)
    fresh = MAKERS[name](door, None)
    fresh.load_state_dict(state)
    assert list(fresh) == rest
