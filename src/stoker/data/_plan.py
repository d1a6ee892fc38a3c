"""The loader's plan: a frozen snapshot of what one iteration of a DataLoader needs.

``iter(loader)`` builds a :class:`LoaderPlan` from the loader's current settings and hands it to
the iterator (and ``state_dict()`` / ``load_state_dict()`` hand one to the resume tracker), so
neither reads the loader's attributes: what they use is listed here, checked once by the
DataLoader, and cannot change under them while they run. Settings a user changes between
epochs reach the next plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any

from stoker.data._workers import EpochSetup

__all__ = ["LoaderPlan"]


@dataclass(frozen=True, slots=True)
class LoaderPlan:
    """What an iteration of a DataLoader works from.

    Attributes:
        dataset: the dataset.
        iterable: whether it is an IterableDataset (stoker's or torch's).
        index_sampler: what the iterator draws items from: the batch sampler with automatic
            batching, else the sampler.
        auto_collation: whether automatic batching is on (the items are lists of indices).
        collate_fn: the collate function the fetch path calls (``default_collate``,
            ``default_convert`` or the user's; stoker's own when the loader was given torch's,
            see ``finish``).
        finish: applied to each batch in the main process before pinning: torch's
            ``default_convert``, turning NumPy leaves into tensors, when the loader was given
            torch's ``default_collate`` or ``default_convert`` (stoker collates, so large
            batches still travel in slabs and become tensors without a copy); else None.
        drop_last: drop a short last batch.
        batch_size: the batch size (None without automatic batching or with a batch sampler).
        num_workers: how many workers (0: load in the calling thread).
        prefetch_factor: batches loaded ahead per worker (0 without workers).
        prefetch_auto: the user left ``prefetch_factor`` unset, so process workers whose first
            batches are small may go deeper (see :mod:`stoker.data._iter_workers`).
        in_order: yield batches in sampler order.
        persistent_workers: keep the workers across epochs.
        timeout: seconds to wait for one batch (0: no limit).
        worker_init_fn: called in each worker with its id.
        multiprocessing_context: the start method's context (None: the default).
        worker_type: ``"process"`` or ``"thread"``.
        split_first_batch: load each epoch's first batch in shares, one per worker.
        pin_memory: pin batches.
        pin_memory_device: the (ignored) device argument, kept for its warning.
        seed_source: the resolved ``generator=`` each iterator draws its base seed from.
        len_reported: ``len(loader)`` as last reported for an IterableDataset, or None.
        epoch_setup: how each copy of the dataset is made ready for an epoch, and whether each
            epoch draws a seed shared by the copies (torch's datapipes through the door; see
            :class:`~stoker.data._workers.protocol.EpochSetup`); None for other datasets.
    """

    dataset: Any
    iterable: bool
    index_sampler: Any
    auto_collation: bool
    collate_fn: Callable[[Any], Any]
    finish: Callable[[Any], Any] | None
    drop_last: bool
    batch_size: int | None
    num_workers: int
    prefetch_factor: int
    prefetch_auto: bool
    in_order: bool
    persistent_workers: bool
    timeout: float
    worker_init_fn: Callable[[int], None] | None
    multiprocessing_context: BaseContext | None
    worker_type: str
    split_first_batch: bool
    pin_memory: bool
    pin_memory_device: str
    seed_source: Any
    len_reported: int | None
    epoch_setup: EpochSetup | None = None
