"""Tests for stoker.data.random_split: lengths and fractions, randomness sources, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stoker.data import Subset, random_split


def _all_indices(subsets: list[Subset[int]]) -> list[int]:
    return sorted(i for subset in subsets for i in subset.indices)


@pytest.mark.parametrize(
    ("total", "lengths", "expected"),
    [
        (10, [3, 7], [3, 7]),
        (10, [0.5, 0.5], [5, 5]),
        (11, [0.3, 0.3, 0.4], [4, 3, 4]),
        (5, [0.25, 0.25, 0.25, 0.25], [2, 1, 1, 1]),
    ],
)
def test_random_split_lengths(total: int, lengths: list[float], expected: list[int]) -> None:
    """Lengths are used as given; fractions floor and deal the remainder round-robin."""
    subsets = random_split(range(total), lengths, generator=0)
    assert [len(s) for s in subsets] == expected
    assert _all_indices(subsets) == list(range(total))


def test_random_split_is_reproducible_with_a_seed_and_fresh_without() -> None:
    """The same int seed gives the same split; None draws anew from the global generator."""
    first = random_split(range(50), [25, 25], generator=3)[0].indices
    assert first == random_split(range(50), [25, 25], generator=3)[0].indices
    unseeded = {tuple(random_split(range(50), [25, 25])[0].indices) for _ in range(3)}
    assert len(unseeded) == 3


def test_random_split_with_numpy_generator_advances_it() -> None:
    """A NumPy generator is drawn from, so two calls with it give different splits."""
    generator = np.random.default_rng(0)
    first = random_split(range(20), [10, 10], generator=generator)[0].indices
    second = random_split(range(20), [10, 10], generator=generator)[0].indices
    assert first != second


def test_random_split_zero_length_fraction_warns() -> None:
    """A split that gets zero samples from fractions warns."""
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(1), [0.5, 0.5], generator=1)


@pytest.mark.parametrize(
    ("lengths", "error", "match"),
    [
        ([3, 3], ValueError, "lengths sum to 6, the dataset has 5"),
        ([0.5, 0.75, -0.25], ValueError, "Fraction at index 2 is not between 0 and 1"),
        ([6, -1], ValueError, r"lengths\[1\] must be a non-negative int"),
        ([2.5, 2.5], ValueError, r"lengths\[0\] must be a non-negative int"),
        ("ab", TypeError, "lengths must be a sequence"),
        ([1, None], TypeError, r"lengths\[1\] must be an int or a float"),
    ],
)
def test_random_split_errors(lengths: Any, error: type[Exception], match: str) -> None:
    """Bad lengths raise errors naming the problem."""
    with pytest.raises(error, match=match):
        random_split(range(5), lengths, generator=0)


def test_random_split_rejects_bad_generator() -> None:
    """A generator of the wrong type is a TypeError."""
    with pytest.raises(TypeError, match="generator must be"):
        random_split(range(4), [2, 2], generator="seed")
