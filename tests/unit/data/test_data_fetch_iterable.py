"""Tests for the iterable fetch path: how many samples a batch takes and when a replica ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stoker.data._fetch import DatasetExhausted, IterableFetcher


def _identity(samples: list[int]) -> list[int]:
    return samples


def _fetcher(data: object, *, drop_last: bool = False) -> IterableFetcher:
    return IterableFetcher(data, auto_collation=True, collate_fn=_identity, drop_last=drop_last)


@pytest.mark.parametrize(
    ("length", "batch", "batches", "ended_after"),
    [
        (10, 4, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]], [False, False, True]),
        (8, 4, [[0, 1, 2, 3], [4, 5, 6, 7]], [False, False]),  # full last batch: not known yet
        (3, 5, [[0, 1, 2]], [True]),
    ],
)
def test_batches_and_ended_flag(
    length: int, batch: int, batches: list[list[int]], ended_after: list[bool]
) -> None:
    """Each fetch takes a batch's worth of samples in order; ``ended`` turns True only once
    the iterator ran out during a fetch, and the next fetch raises DatasetExhausted."""
    fetcher = _fetcher(range(length))
    for expected, ended in zip(batches, ended_after, strict=True):
        assert fetcher.fetch([None] * batch) == expected
        assert fetcher.ended is ended
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None] * batch)
    assert fetcher.ended


def test_short_last_batch_is_dropped_with_drop_last() -> None:
    """With drop_last, a short final batch is not returned: the fetch raises DatasetExhausted."""
    fetcher = _fetcher(range(6), drop_last=True)
    assert fetcher.fetch([None] * 4) == [0, 1, 2, 3]
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None] * 4)
    assert fetcher.ended


def test_error_mid_batch_propagates_and_does_not_end() -> None:
    """An exception from the dataset's iterator reaches the caller unchanged; the replica is
    not marked ended, so the next fetch goes on with the samples after the failure."""

    def stream() -> Iterator[int]:
        yield 0
        yield 1
        raise KeyError("bad sample")

    class Resumable:
        def __init__(self) -> None:
            self.inner = stream()
            self.failed = False

        def __iter__(self) -> Iterator[int]:
            return self

        def __next__(self) -> int:
            if self.failed:
                return 7
            try:
                return next(self.inner)
            except KeyError:
                self.failed = True
                raise

    fetcher = _fetcher(Resumable())
    with pytest.raises(KeyError, match="bad sample"):
        fetcher.fetch([None] * 4)
    assert not fetcher.ended
    assert fetcher.fetch([None] * 2) == [7, 7]
