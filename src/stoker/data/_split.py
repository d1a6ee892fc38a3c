"""random_split: dividing a dataset at random into non-overlapping Subsets of given lengths."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from stoker import _torch
from stoker.data._dataset import Dataset, Subset
from stoker.data._generator import check_generator, make_rng

__all__ = ["random_split"]

T = TypeVar("T")

_SPLIT_TAG = 0x5350_4C49_54  # keys random_split's stream apart from the samplers'


def _split_lengths(total: int, lengths: Sequence[int | float]) -> list[int]:
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
        raise TypeError(
            f"lengths must be a sequence of ints or of fractions, got {lengths!r}; "
            "pass e.g. [800, 200] or [0.8, 0.2]"
        )
    for position, value in enumerate(lengths):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(
                f"lengths[{position}] must be an int or a float, got {value!r}; "
                "pass lengths such as [800, 200] or fractions such as [0.8, 0.2]"
            )
    summed = math.fsum(float(v) for v in lengths)
    if math.isclose(summed, 1) and summed <= 1:
        counts = []
        for position, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(
                    f"Fraction at index {position} is not between 0 and 1, got {fraction!r}"
                )
            counts.append(math.floor(total * fraction))
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        for position, count in enumerate(counts):
            if count == 0:
                warnings.warn(
                    f"Length of split at index {position} is 0. "
                    "This might result in an empty dataset.",
                    UserWarning,
                    stacklevel=3,
                )
        return counts
    counts = []
    for position, value in enumerate(lengths):
        if int(value) != value or value < 0:
            raise ValueError(
                f"lengths[{position}] must be a non-negative int (or all lengths fractions "
                f"summing to 1), got {value!r}"
            )
        counts.append(int(value))
    if sum(counts) != total:
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset! "
            f"lengths sum to {sum(counts)}, the dataset has {total} samples"
        )
    return counts


def random_split(
    dataset: Dataset[T],
    lengths: Sequence[int | float],
    generator: Any = None,
) -> list[Subset[T]]:
    """Split ``dataset`` at random into non-overlapping subsets of the given lengths.

    With fractions summing to 1, each split gets ``floor(fraction * len(dataset))`` samples
    and the remainder is dealt one at a time, round-robin from the first split (a split of
    length 0 warns).

    Args:
        dataset: the dataset to split.
        lengths: lengths (ints summing to ``len(dataset)``) or fractions summing to 1.
        generator: ``None`` (the global generator: torch's, drawn as torch's default draws,
            when the program has imported torch, else NumPy's legacy one), an int seed, a
            :class:`numpy.random.Generator` or a ``torch.Generator`` (which gives the same split
            as torch for the same generator state).

    Returns:
        One :class:`Subset` per length, whose ``indices`` are lists of ints.

    Raises:
        ValueError: when the lengths do not add up to the dataset's length or a fraction is
            outside ``[0, 1]``.
        TypeError: when ``lengths`` or ``generator`` has the wrong type.
    """
    checked = check_generator(generator)
    total = len(dataset)  # type: ignore[arg-type]
    counts = _split_lengths(total, lengths)
    if _torch.is_generator(checked) or (checked is None and _torch.loaded() is not None):
        order = _torch.randperm(total, checked)  # None: torch's global generator, as torch
    elif isinstance(checked, np.random.Generator):
        order = checked.permutation(total).tolist()
    elif checked is None:
        order = np.random.permutation(total).tolist()  # NumPy's legacy global generator
    else:
        order = make_rng(checked, _SPLIT_TAG).permutation(total).tolist()
    ends = itertools.accumulate(counts)
    return [
        Subset(dataset, order[end - count : end]) for end, count in zip(ends, counts, strict=True)
    ]
