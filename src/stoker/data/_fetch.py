"""The one path from indices to a batch, shared by the in-process iterator and every worker.

A *fetcher* turns what the index sampler yields into what the loader yields:

* map-style datasets: a list of indices (auto-collation) becomes ``collate_fn([dataset[i] ...])``,
  or one call ``dataset.__getitems__(indices)`` when the dataset defines it; a single index
  (``batch_size=None``) becomes ``collate_fn(dataset[index])``;
* iterable-style datasets: the sampler yields placeholders whose only meaning is "one batch" (a
  list as long as the batch) or "one sample" (``None``); the fetcher pulls that many samples from
  ``iter(dataset)``. When the iterator ends, the last short batch is collated unless
  ``drop_last`` is set, and any later fetch raises :class:`DatasetExhausted`. As in torch,
  ``iter(dataset)`` is called once per epoch (per worker) and its result only gets ``next()``
  (:func:`take`): an iterator whose ``__iter__`` restarts it and returns itself (litdata's
  ``StreamingDataset``) would otherwise yield its first batch forever.

The gathering step (:meth:`gather`) and the collation step are separate so that a transport can
collate into its own buffers. A failing ``dataset[i]`` is marked with ``i`` (see
:func:`stoker.data._errors.mark_index`) and re-raised unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from stoker.data._errors import mark_index

__all__ = ["DatasetExhausted", "Fetcher", "IterableFetcher", "MapFetcher", "make_fetcher", "take"]

T = TypeVar("T")


def take(iterator: Iterator[T], count: int) -> list[T]:
    """Return the next ``count`` items of ``iterator`` (fewer when it ends), by ``next()`` alone.

    ``itertools.islice(iterator, count)`` calls ``iter(iterator)`` first, which restarts an
    iterator whose ``__iter__`` resets it and returns itself; this never calls ``iter()``.
    """
    # map(next, ...) stops where next() raises StopIteration, keeping the items before it
    return list(map(next, itertools.repeat(iterator, count)))


class DatasetExhausted(Exception):
    """An iterable-style dataset has no more samples for this iterator (or worker)."""


class Fetcher(Protocol):
    """Turns one item of the index sampler into one batch."""

    collate_fn: Callable[[Any], Any]

    def gather(self, index: Any) -> Any:
        """Return the samples for ``index``, before collation."""

    def fetch(self, index: Any) -> Any:
        """Return the collated batch for ``index``."""


class MapFetcher:
    """Fetches from a map-style dataset by index, through ``__getitems__`` when it exists."""

    __slots__ = ("auto_collation", "collate_fn", "dataset", "getitems")

    def __init__(
        self, dataset: Any, *, auto_collation: bool, collate_fn: Callable[[Any], Any]
    ) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        # A dataset can switch the batched path off by setting __getitems__ to None.
        self.getitems: Callable[[Any], Any] | None = getitems if getitems else None

    def gather(self, index: Any) -> Any:
        """Return ``[dataset[i] for i in index]`` (or one sample when not auto-collating)."""
        dataset = self.dataset
        if not self.auto_collation:
            try:
                return dataset[index]
            except Exception as err:
                mark_index(err, index)
                raise
        if self.getitems is not None:
            return self.getitems(index)
        samples: list[Any] = []
        append = samples.append
        position = None
        try:
            for position in index:
                append(dataset[position])
        except Exception as err:
            mark_index(err, position)
            raise
        return samples

    def fetch(self, index: Any) -> Any:
        """Return ``collate_fn(gather(index))``."""
        return self.collate_fn(self.gather(index))


class IterableFetcher:
    """Pulls samples from ``iter(dataset)``; the sampler's items only say how many."""

    __slots__ = ("auto_collation", "collate_fn", "drop_last", "ended", "iterator")

    def __init__(
        self,
        dataset: Any,
        *,
        auto_collation: bool,
        collate_fn: Callable[[Any], Any],
        drop_last: bool,
    ) -> None:
        self.iterator: Iterator[Any] = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def gather(self, index: Any) -> Any:
        """Return up to ``len(index)`` samples (one sample when not auto-collating).

        Raises:
            DatasetExhausted: when the iterator has ended, or the batch would be empty, or it
                would be short and ``drop_last`` is set.
        """
        if self.ended:
            raise DatasetExhausted
        iterator = self.iterator
        if not self.auto_collation:
            try:
                return next(iterator)
            except StopIteration:
                self.ended = True
                raise DatasetExhausted from None
        wanted = len(index)
        samples = take(iterator, wanted)
        if len(samples) < wanted:
            self.ended = True  # take stops early only when the iterator has ended
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise DatasetExhausted
        return samples

    def fetch(self, index: Any) -> Any:
        """Return ``collate_fn(gather(index))``."""
        return self.collate_fn(self.gather(index))

    def close(self) -> None:
        """Close the dataset's iterator when it is a generator (runs its ``finally`` blocks)."""
        self.ended = True
        close = getattr(self.iterator, "close", None)
        if close is not None:
            close()


def make_fetcher(
    dataset: Any,
    *,
    iterable: bool,
    auto_collation: bool,
    collate_fn: Callable[[Any], Any],
    drop_last: bool,
) -> MapFetcher | IterableFetcher:
    """Return the fetcher for ``dataset`` (this calls ``iter(dataset)`` for iterable ones).

    Args:
        dataset: the dataset (the worker's copy inside a worker).
        iterable: whether the dataset is iterable-style.
        auto_collation: whether the sampler yields batches (lists) rather than single items.
        collate_fn: the function applied to the gathered samples.
        drop_last: drop a short last batch of an iterable dataset.

    Returns:
        A :class:`MapFetcher` or an :class:`IterableFetcher`.
    """
    if iterable:
        return IterableFetcher(
            dataset, auto_collation=auto_collation, collate_fn=collate_fn, drop_last=drop_last
        )
    return MapFetcher(dataset, auto_collation=auto_collation, collate_fn=collate_fn)
