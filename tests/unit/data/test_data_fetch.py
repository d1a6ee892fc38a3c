"""Tests for the one fetch path, for map-style and iterable datasets.

Tests for the one fetch path: map-style indices to a batch, and an iterable dataset's batches
(how many samples a batch takes, when a replica ends).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from data_fakes import Counting, Numbers, Restarting

from stoker.data._fetch import DatasetExhausted, IterableFetcher, MapFetcher, make_fetcher


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
    """Each fetch takes a batch's worth of samples in order until the iterator runs out.

    Each fetch takes a batch's worth of samples in order; ``ended`` turns True only once
    the iterator ran out during a fetch, and the next fetch raises DatasetExhausted.
    """
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
    """An exception from the dataset's iterator reaches the caller unchanged.

    An exception from the dataset's iterator reaches the caller unchanged; the replica is
    not marked ended, so the next fetch goes on with the samples after the failure.
    """

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


def test_map_fetcher_paths() -> None:
    """Single index, list of indices, __getitems__ and a disabled __getitems__."""
    assert MapFetcher(Numbers(3), auto_collation=False, collate_fn=str).fetch(2) == "20"
    assert MapFetcher(Numbers(3), auto_collation=True, collate_fn=list).fetch([2, 0]) == [20, 0]

    class Batched(Numbers):
        def __getitems__(self, indices: list[int]) -> list[int]:
            return [-i for i in indices]

    batched = Batched(3)
    assert make_fetcher(
        batched, iterable=False, auto_collation=True, collate_fn=list, drop_last=False
    ).fetch([1, 2]) == [-1, -2]
    batched.__getitems__ = None  # type: ignore[assignment, method-assign]
    assert MapFetcher(batched, auto_collation=True, collate_fn=list).fetch([1, 2]) == [10, 20]


@pytest.mark.parametrize(("auto", "index"), [(True, [0, 3, 1]), (False, 3)])
def test_map_fetcher_marks_the_failing_index(auto: bool, index: Any) -> None:
    """The exception from dataset[i] propagates unchanged, marked with i."""
    fetcher = MapFetcher(Numbers(5, bad=3), auto_collation=auto, collate_fn=list)
    with pytest.raises(ValueError, match="bad index 3") as caught:
        fetcher.fetch(index)
    assert getattr(caught.value, "_stoker_dataset_index", None) == 3


@pytest.mark.parametrize(("drop_last", "sizes"), [(False, [2, 2, 1]), (True, [2, 2])])
def test_iterable_fetcher_short_batch_and_end(drop_last: bool, sizes: list[int]) -> None:
    """The iterable fetcher fills batches, keeps or drops the short one, then is exhausted."""
    fetcher = IterableFetcher(
        Counting(5), auto_collation=True, collate_fn=list, drop_last=drop_last
    )
    got = [fetcher.fetch([None, None]) for _ in sizes]
    assert [len(b) for b in got] == sizes
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None, None])
    with pytest.raises(DatasetExhausted):
        fetcher.fetch([None])
    single = IterableFetcher(Counting(1), auto_collation=False, collate_fn=str, drop_last=False)
    assert single.fetch(None) == "0"
    with pytest.raises(DatasetExhausted):
        single.fetch(None)


@pytest.mark.parametrize(
    ("index", "expected"), [([None] * 3, [[0, 1, 2], [3, 4, 5], [6]]), (None, list(range(7)))]
)
def test_iterable_fetcher_calls_iter_once_then_only_next(index: Any, expected: list[Any]) -> None:
    """An iterator whose ``__iter__`` restarts it is asked for ``iter()`` once.

    An iterator whose ``__iter__`` restarts it is asked for ``iter()`` once, when the fetcher
    is made: batched or not, its samples come once each, in order, then it is exhausted.
    """
    source = Restarting(list(range(7)))
    fetcher = IterableFetcher(
        source, auto_collation=index is not None, collate_fn=_identity, drop_last=False
    )
    got = [fetcher.fetch(index) for _ in expected]
    with pytest.raises(DatasetExhausted):
        fetcher.fetch(index)
    assert got == expected
    assert source.iter_calls == 1
