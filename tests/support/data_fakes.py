"""Small datasets for the one-process tests of the fetch path and the worker loop."""

from __future__ import annotations

from collections.abc import Iterator

from stoker.data import Dataset, IterableDataset


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
