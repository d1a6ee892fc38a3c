"""The behaviour every loader iterator shares, and in-process iteration (``num_workers=0``).

:class:`LoaderIter` holds what all iterators do alike: take the index stream of the epoch from
the resume tracker, draw the base seed from the loader's generator (once per iterator, after
creating the sampler's iterator, in torch's order, so a shared generator advances the same
way), count batches, warn when an IterableDataset yields more batches than ``len(loader)`` said,
finish each batch in this process (tensors for torch's collation) and pin memory
(:mod:`stoker.data._pin`), and ``close()`` / context-manager support. With an epoch setup in
the plan (the torch door's datapipes) that is seeded, each epoch first draws a seed shared by
every copy of the dataset, before anything else, as torch draws it. It works from
the loader's :class:`~stoker.data._plan.LoaderPlan`, never from the loader itself.
:class:`InProcessIter` fetches in the calling thread through the same fetch path the workers
use; the iterator with workers is :class:`~stoker.data._iter_workers.WorkerIter`.
"""

from __future__ import annotations

import warnings
from types import TracebackType
from typing import TYPE_CHECKING, Any

from stoker._checks import torch_first
from stoker.data._errors import TypeNotImplementedError, ValueAssertionError
from stoker.data._fetch import DatasetExhausted, IterableFetcher, make_fetcher
from stoker.data._generator import draw_seed
from stoker.data._pin import pin_plan
from stoker.data._plan import LoaderPlan
from stoker.data._resume.tracker import ResumeTracker
from stoker.data._sample_rng import swap_thread_key

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["InProcessIter", "LoaderIter"]


def _draw_shared_seed(plan: LoaderPlan) -> int | None:
    """The epoch's seed shared by every copy of the dataset, or None.

    The seed is drawn from the loader's generator when the plan's epoch setup asks for one;
    otherwise nothing is drawn and the result is None.
    """
    setup = plan.epoch_setup
    return draw_seed(plan.seed_source) if setup is not None and setup.seeded else None


class LoaderIter:
    """Base of the loader's iterators: sampler, seed, counting, pinning, closing."""

    def __init__(self, plan: LoaderPlan, tracker: ResumeTracker) -> None:
        """Open an epoch of ``plan`` with the loader's resume ``tracker``."""
        self._shared_seed = _draw_shared_seed(plan)
        self._dataset = plan.dataset
        self._iterable = plan.iterable
        self._index_sampler = plan.index_sampler
        self._num_workers = plan.num_workers
        self._timeout = plan.timeout
        self._finish = plan.finish
        self._pin = pin_plan(plan.pin_memory, plan.pin_memory_device)
        self._tracker = tracker
        self._progress, self._sampler_iter = tracker.open_epoch(plan, plan.num_workers > 0)
        restored = tracker.restored_base_seed
        self._base_seed = draw_seed(plan.seed_source) if restored is None else restored
        tracker.note_base_seed(self._progress, self._base_seed)
        self._len_reported = plan.len_reported
        self._num_yielded = 0
        self._closed = False

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        progress = self._progress
        try:
            while progress.skip:  # an IterableDataset resumed by fast-forward: drop batches
                self._next_data()
                progress.skip -= 1
            data = self._next_data()
        except StopIteration:
            progress.finished = True
            raise
        progress.yielded += 1
        self._num_yielded += 1
        if (
            self._iterable
            and self._len_reported is not None
            and self._num_yielded > self._len_reported
        ):
            torch_text = (
                f"Length of IterableDataset {self._dataset} was reported to be "
                f"{self._len_reported}(when accessing len(dataloader)), but {self._num_yielded} "
                "samples have been fetched."
            )
            ours = (
                f"batches are counted: len(DataLoader) was {self._len_reported} and "
                f"{self._num_yielded} batches have been yielded"
            )
            if self._num_workers > 0:
                torch_text += (
                    " For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                    "for examples."
                )
                ours += (
                    "; with workers, processes or threads, each iterates its own copy of the "
                    "dataset: shard it in __iter__ with get_worker_info() so that replicas do "
                    "not repeat samples"
                )
            warnings.warn(
                torch_first(torch_text, ours),
                UserWarning,
                stacklevel=2,
            )
        if self._finish is not None:
            data = self._finish(data)
        if self._pin is not None:
            data = self._pin(data)
        return data

    def _next_data(self) -> Any:
        raise NotImplementedError

    def _reset(self, plan: LoaderPlan) -> None:
        """Start a new epoch of ``plan`` with the same iterator (persistent workers)."""
        self._progress, self._sampler_iter = self._tracker.open_epoch(plan, True)
        self._shared_seed = _draw_shared_seed(plan)
        self._tracker.note_base_seed(self._progress, self._base_seed)
        self._num_yielded = 0
        self._len_reported = plan.len_reported

    def __len__(self) -> int:
        return len(self._index_sampler)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (or the iterator ended its workers)."""
        return self._closed

    def close(self) -> None:
        """Stop iterating and release workers; later ``next()`` raises StopIteration."""
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getstate__(self) -> Any:
        raise TypeNotImplementedError(
            f"{type(self).__name__} cannot be pickled: it owns an open iteration (and possibly "
            "workers); pickle the DataLoader or its dataset instead"
        )


class InProcessIter(LoaderIter):
    """Fetches every batch in the calling thread."""

    def __init__(self, plan: LoaderPlan, tracker: ResumeTracker) -> None:
        """Open an epoch of ``plan`` and its fetcher (``iter(dataset)`` for an iterable one)."""
        super().__init__(plan, tracker)
        if self._timeout != 0:
            raise ValueAssertionError(
                "_SingleProcessDataLoaderIter requires timeout == 0: timeout must be 0 when "
                f"num_workers=0, got timeout={self._timeout!r}; the "
                "timeout bounds the wait for a worker's batch, so set num_workers > 0 or timeout=0"
            )
        dataset = plan.dataset
        if plan.epoch_setup is not None:
            dataset = plan.epoch_setup.prepare(dataset, self._shared_seed, 0, 1)
        self._fetcher = make_fetcher(
            dataset,
            iterable=plan.iterable,
            auto_collation=plan.auto_collation,
            collate_fn=plan.collate_fn,
            drop_last=plan.drop_last,
        )

    def _next_data(self) -> Any:
        index = next(self._sampler_iter)
        previous = swap_thread_key(self._progress.key)
        try:
            return self._fetcher.fetch(index)
        except DatasetExhausted:
            raise StopIteration from None
        finally:
            swap_thread_key(previous)

    def close(self) -> None:
        """Stop iterating; an iterable dataset's generator is closed (its ``finally`` runs)."""
        if not self._closed and isinstance(self._fetcher, IterableFetcher):
            self._fetcher.close()
        super().close()
