"""In-process iteration (``num_workers=0``) and the iterator behaviour every loader iterator shares.

:class:`LoaderIter` holds what all iterators do alike: take the index sampler's iterator, draw
the base seed from the loader's generator (once per iterator, after creating the sampler's
iterator, in torch's order, so a shared generator advances the same way), count batches,
warn when an IterableDataset yields more batches than ``len(loader)`` said, pin memory, and
``close()`` / context-manager support. :class:`SingleProcessIter` fetches in the calling thread
through the same fetch path the workers use.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from stoker.data._fetch import DatasetExhausted, IterableFetcher, make_fetcher
from stoker.data._generator import draw_seed
from stoker.data._sample_rng import swap_thread_key

if TYPE_CHECKING:
    from typing_extensions import Self

    from stoker.data._loader import DataLoader
    from stoker.data._state import ResumeTracker

__all__ = ["LoaderIter", "SingleProcessIter", "pin_plan"]


def _accelerator_available(torch: Any) -> bool:
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        return bool(accelerator.is_available())
    return bool(torch.cuda.is_available())


def _pin_tree(torch: Any, data: Any) -> Any:
    if isinstance(data, torch.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = {key: _pin_tree(torch, value) for key, value in data.items()}
        try:
            return type(data)(pinned)  # type: ignore[call-arg]
        except TypeError:
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin_tree(torch, value) for value in data))
    if isinstance(data, Sequence) and isinstance(data, (list, tuple)):
        return type(data)(_pin_tree(torch, value) for value in data)
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


def pin_plan(pin_memory: bool, pin_memory_device: str) -> Callable[[Any], Any] | None:
    """Return the function that pins a batch, or None when pinning is off or impossible.

    Pinning needs torch (already imported by the user: stoker never imports it) and an
    accelerator; otherwise a warning says it has no effect. A non-empty ``pin_memory_device``
    warns that it is ignored, as in torch, where the current accelerator is always used.
    """
    if not pin_memory:
        return None
    if pin_memory_device:
        warnings.warn(
            f"pin_memory_device={pin_memory_device!r} is ignored: pinned memory always targets "
            "the current accelerator (the argument is deprecated in torch too); drop it",
            UserWarning,
            stacklevel=6,
        )
    torch = sys.modules.get("torch")
    if torch is None or not _accelerator_available(torch):
        reason = "torch is not imported" if torch is None else "no accelerator is available"
        warnings.warn(
            f"pin_memory=True has no effect because {reason}; batches are returned unpinned. "
            "Pass pin_memory=False to silence this warning",
            UserWarning,
            stacklevel=6,
        )
        return None
    return lambda batch: _pin_tree(torch, batch)


class LoaderIter:
    """Base of the loader's iterators: sampler, seed, counting, pinning, closing."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._pin = pin_plan(loader.pin_memory, loader.pin_memory_device)
        self._tracker: ResumeTracker = loader._resume
        self._progress, self._sampler_iter = self._tracker.open_epoch(loader, self._num_workers > 0)
        restored = self._tracker.restored_base_seed
        self._base_seed = draw_seed(loader._seed_source) if restored is None else restored
        self._tracker.note_base_seed(self._progress, self._base_seed)
        self._len_reported: int | None = loader._iterable_len_reported
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
            hint = (
                " With worker processes, each worker iterates its own copy of the dataset: shard "
                "it in __iter__ with get_worker_info() so that replicas do not repeat samples."
                if self._num_workers > 0
                else ""
            )
            warnings.warn(
                f"len() of the DataLoader over {self._dataset!r} was {self._len_reported}, but "
                f"{self._num_yielded} batches have been yielded.{hint}",
                UserWarning,
                stacklevel=2,
            )
        if self._pin is not None:
            data = self._pin(data)
        return data

    def _next_data(self) -> Any:
        raise NotImplementedError

    def _reset(self, loader: DataLoader[Any]) -> None:
        """Start a new epoch with the same iterator (persistent workers)."""
        self._progress, self._sampler_iter = self._tracker.open_epoch(loader, True)
        self._tracker.note_base_seed(self._progress, self._base_seed)
        self._num_yielded = 0
        self._len_reported = loader._iterable_len_reported

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
        raise TypeError(
            f"{type(self).__name__} cannot be pickled: it owns an open iteration (and possibly "
            "worker processes); pickle the DataLoader or its dataset instead"
        )


class SingleProcessIter(LoaderIter):
    """Fetches every batch in the calling thread."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise ValueError(
                f"timeout must be 0 when num_workers=0, got timeout={self._timeout!r}; the "
                "timeout bounds the wait for a worker's batch, so set num_workers > 0 or timeout=0"
            )
        self._fetcher = self._new_fetcher()

    def _new_fetcher(self) -> Any:
        return make_fetcher(
            self._dataset,
            iterable=self._iterable,
            auto_collation=self._auto_collation,
            collate_fn=self._collate_fn,
            drop_last=self._drop_last,
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
