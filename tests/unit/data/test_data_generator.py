"""Tests for stoker.data._generator: checking generator=, drawing seeds, keyed streams."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stoker._torch import is_generator as is_torch_generator
from stoker.data._generator import (
    SEED_MASK,
    GeneratorState,
    check_generator,
    derive_seed,
    draw_seed,
    make_rng,
    resolve_generator,
    restore_generator,
    save_generator,
)


@pytest.mark.parametrize("bad", [True, 1.5, "3", [1], object()])
def test_check_generator_rejects_other_types(bad: object) -> None:
    """A bool, float, str, list or arbitrary object is a TypeError naming the argument."""
    with pytest.raises(TypeError, match=r"seed must be None, an int seed"):
        check_generator(bad, "seed")


def test_check_generator_accepts_the_four_kinds() -> None:
    """None, ints (NumPy ints become int), NumPy and torch generators are accepted."""
    import torch

    numpy_generator = np.random.default_rng(0)
    torch_generator = torch.Generator()
    assert check_generator(None) is None
    assert check_generator(np.int32(7)) == 7
    assert type(check_generator(np.int32(7))) is int
    assert check_generator(numpy_generator) is numpy_generator
    assert check_generator(torch_generator) is torch_generator


def test_is_torch_generator_is_false_for_lookalikes() -> None:
    """Only real torch.Generator objects count, not NumPy generators or plain objects."""
    import torch

    assert is_torch_generator(torch.Generator())
    assert not is_torch_generator(np.random.default_rng(0))
    assert not is_torch_generator(torch.zeros(1))


def test_resolve_generator_turns_an_int_into_a_reproducible_stream() -> None:
    """Two generators resolved from the same int give the same sequence of seeds."""
    first = resolve_generator(5)
    second = resolve_generator(5)
    assert isinstance(first, np.random.Generator)
    draws = [draw_seed(first) for _ in range(3)]
    assert draws == [draw_seed(second) for _ in range(3)]
    assert len(set(draws)) == 3


def test_draw_seed_ranges_and_sources() -> None:
    """Seeds are in [0, 2**63); None draws from the global generator, an int gives a fixed seed.

    Seeds are in [0, 2**63); None draws new values from the global generator; an int
    gives a fixed derived seed.
    """
    seeds = {draw_seed(None) for _ in range(4)}
    assert len(seeds) == 4
    assert all(0 <= seed <= SEED_MASK for seed in seeds)
    assert draw_seed(3) == draw_seed(3) == derive_seed(3)
    assert draw_seed(3) != draw_seed(4)


def test_draw_seed_from_torch_matches_torch_dataloader_base_seed() -> None:
    """A torch.Generator yields the value torch's DataLoader would draw as its base seed."""
    import torch

    mine = torch.Generator().manual_seed(11)
    theirs = torch.Generator().manual_seed(11)
    expected = int(torch.empty((), dtype=torch.int64).random_(generator=theirs).item())
    assert draw_seed(mine) == expected


def test_make_rng_is_keyed_by_the_whole_tuple() -> None:
    """Same key, same stream; a different or longer key, a different stream; negatives work."""
    assert make_rng(1, 2).integers(1 << 62) == make_rng(1, 2).integers(1 << 62)
    assert make_rng(1, 2).integers(1 << 62) != make_rng(2, 1).integers(1 << 62)
    assert make_rng(1, 2).integers(1 << 62) != make_rng(1, 2, 0).integers(1 << 62)
    assert make_rng(-1).integers(1 << 62) == make_rng((1 << 64) - 1).integers(1 << 62)
    assert make_rng(1 << 32).integers(1 << 62) != make_rng(0, 1).integers(1 << 62)
    with pytest.raises(TypeError, match="key parts must be ints"):
        make_rng(1.5)  # type: ignore[arg-type]


def test_generator_state_round_trips_and_refuses_another_kind() -> None:
    """A NumPy or torch generator's saved state puts it back; another kind's is a ValueError."""
    import torch

    numpy_generator = np.random.default_rng(3)
    saved = save_generator(numpy_generator)
    first = numpy_generator.integers(1 << 30)
    restore_generator(numpy_generator, saved, "this test")
    assert numpy_generator.integers(1 << 30) == first
    torch_generator = torch.Generator().manual_seed(4)
    saved_torch = save_generator(torch_generator)
    assert saved_torch.numpy is None
    assert isinstance(saved_torch.torch, str)
    drawn = torch.randint(100, (3,), generator=torch_generator).tolist()
    restore_generator(torch_generator, saved_torch, "this test")
    assert torch.randint(100, (3,), generator=torch_generator).tolist() == drawn
    assert save_generator(None) == save_generator(5) == GeneratorState()
    with pytest.raises(ValueError, match=r"fit this test: it holds a numpy\.random\.Generator"):
        restore_generator(torch_generator, saved, "this test")


def test_generator_none_draws_exactly_as_torch_when_torch_is_imported() -> None:
    """After torch.manual_seed, stoker.data's samplers and random_split act as torch's do.

    After torch.manual_seed, stoker.data's samplers and random_split with generator=None
    give torch's orders and leave torch's global generator where torch's leave it.
    """
    import torch
    import torch.utils.data as torch_data

    import stoker.data as stoker_data

    def draws(module: Any) -> tuple[list[Any], list[int]]:
        torch.manual_seed(21)
        orders = [
            list(module.RandomSampler(range(9))),
            list(module.RandomSampler(range(9), replacement=True, num_samples=40)),
            list(module.SubsetRandomSampler([3, 5, 7, 9])),
            list(module.WeightedRandomSampler([0.5, 1.0, 2.0], 7)),
            [list(s.indices) for s in module.random_split(range(6), [0.5, 0.5])],
        ]
        return orders, torch.get_rng_state().tolist()

    assert draws(stoker_data) == draws(torch_data)
