"""Small datasets for the one-process tests of the fetch path and the worker loop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stoker.data import Dataset, IterableDataset, Sampler


class Numbers(Dataset[int]):
    """Sample i is 10 * i; index ``bad`` raises ValueError."""

    def __init__(self, n: int, bad: int = -1) -> None:
        self.n = n
        self.bad = bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if index == self.bad:
            raise ValueError(f"bad index {index}")
        return 10 * index


class Counting(IterableDataset[int]):
    """Yields 0..n-1 and counts how often iteration started."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started = 0

    def __iter__(self) -> Iterator[int]:
        self.started += 1
        return iter(range(self.n))


class Restarting(Sampler[Any]):
    """An iterator that is its own iterable: ``iter()`` restarts it and is counted.

    An iterator that is its own iterable: ``iter()`` restarts it at ``items[0]`` and is
    counted in ``iter_calls`` (litdata's StreamingDataset is written so). Usable as a sampler,
    a batch sampler or an iterable of samples.
    """

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.iter_calls = 0
        self._position = 0

    def __iter__(self) -> Restarting:
        self.iter_calls += 1
        self._position = 0
        return self

    def __next__(self) -> Any:
        if self._position >= len(self.items):
            raise StopIteration
        self._position += 1
        return self.items[self._position - 1]

    def __len__(self) -> int:
        return len(self.items)
