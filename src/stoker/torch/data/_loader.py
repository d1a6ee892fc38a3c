"""The door's DataLoader: stoker's loader that is a ``torch.utils.data.DataLoader``.

:class:`DataLoader` derives from :class:`stoker.data.DataLoader` first and from torch's
DataLoader second. Every method torch's class defines (``__init__``, ``__iter__``, ``__len__``,
``__setattr__``, ``multiprocessing_context``, ``check_worker_number_rationality``) is stoker's,
so iteration runs stoker's engine; ``isinstance(loader, torch.utils.data.DataLoader)`` holds.
What makes the batches and the randomness torch's:

* ``collate_fn`` defaults to torch's own ``default_collate`` (``default_convert`` without
  automatic batching), as in torch; the engine recognises it, collates with stoker's NumPy path
  (into shared-memory slabs with process workers) and turns the batch into tensors in the main
  process with ``torch.from_numpy`` (``torch.as_tensor`` for a read-only array, for torch's
  warning), which maps slab memory without copying;
* ``generator=None`` draws from torch's global generator, as torch draws (a base seed per
  iterator, then the sampler's seed), because the program has imported torch;
* with no sampler given, the samplers are the door's (stoker's and torch's at once) inside
  torch's exact ``BatchSampler``, as torch builds them;
* torch's datapipes are wrapped, shuffled, seeded each epoch and sharded per worker as torch's
  loader does (:mod:`stoker.torch.data._datapipes`).

Re-instantiation works the way trainers do it: every ``__init__`` parameter a loader was given
is an attribute of the same name (``worker_type`` included), so
``type(loader)(**{name: getattr(loader, name) ...}, sampler=new_sampler)`` builds a door loader
again.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch.utils.data as torch_data
import torch.utils.data.dataloader as torch_dataloader

import stoker.data as stoker_data
from stoker.data._door import LoaderDefaults
from stoker.torch.data._datapipes import DataPipes
from stoker.torch.data._samplers import RandomSampler, SequentialSampler

__all__ = ["DataLoader"]

T_co = TypeVar("T_co", covariant=True)


class DataLoader(stoker_data.DataLoader[T_co], torch_data.DataLoader[T_co]):  # type: ignore[misc]
    """``torch.utils.data.DataLoader`` with stoker's engine: same signature, batches and seeds.

    Takes torch 2.13's arguments with torch's defaults, plus ``worker_type`` (``"process"``,
    the default, or ``"thread"``) and ``split_first_batch``. Batches are exactly what torch's
    loader yields (tensors for tensors, NumPy arrays and numbers; lists of strings), and after
    ``torch.manual_seed(s)`` the order, the workers' seeds and the global generator's state
    left for the program equal torch's. Everything :class:`stoker.data.DataLoader` adds is
    here: thread workers, ``state_dict()`` / ``load_state_dict()``, ``stats()``, worker failure
    reports naming the worker, pid and indices, shared-memory slabs, ``sample_rng``.

    Args:
        dataset: a map-style dataset or an IterableDataset.
        batch_size: samples per batch; None turns automatic batching off.
        shuffle: reshuffle each epoch (map-style only).
        sampler: the order of indices; excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes batch_size, shuffle, sampler and
            drop_last.
        num_workers: how many workers load batches; 0 loads in the calling thread.
        collate_fn: merges a list of samples into a batch (default: torch's
            ``default_collate``, or ``default_convert`` without automatic batching).
        pin_memory: pin the batches' tensors (needs an accelerator).
        drop_last: drop the last batch when it is short.
        timeout: seconds to wait for one batch from the workers (0: no limit).
        worker_init_fn: called in each worker with its id, after seeding.
        multiprocessing_context: a start method name or a multiprocessing context.
        generator: a ``torch.Generator`` (or an int seed, or a ``numpy.random.Generator``);
            None draws from torch's global generator, as torch does.
        prefetch_factor: batches loaded in advance per worker (default 2 with workers;
            left unset, process workers whose batches average under 64 KiB go 16 ahead).
        persistent_workers: keep the workers across epochs.
        pin_memory_device: deprecated and ignored, as in torch.
        in_order: yield batches in sampler order.
        worker_type: ``"process"`` or ``"thread"``.
        split_first_batch: load each epoch's first batch in shares over the workers (see
            :class:`stoker.data.DataLoader`).
    """

    _defaults = LoaderDefaults(
        RandomSampler,
        SequentialSampler,
        torch_data.BatchSampler,
        torch_data.default_collate,
        torch_data.default_convert,
        DataPipes(),
    )
    # torch's attribute, read by code written against torch: len(dataset) of an
    # IterableDataset as the last len(loader) saw it (torch annotates it as None)
    _IterableDataset_len_called: int | None = None  # type: ignore[assignment]

    @property
    def _dataset_kind(self) -> Any:
        """Torch's ``_DatasetKind`` of the dataset (read by code written against torch)."""
        kinds = torch_dataloader._DatasetKind
        iterable = isinstance(
            self.dataset, (torch_data.IterableDataset, stoker_data.IterableDataset)
        )
        return kinds.Iterable if iterable else kinds.Map

    @_dataset_kind.setter
    def _dataset_kind(self, value: Any) -> None:
        raise AttributeError(
            f"_dataset_kind is derived from the dataset, got an attempt to set it to {value!r}"
        )

    def __len__(self) -> int:
        """Number of batches, as torch counts them.

        ``len(dataset)`` for an IterableDataset is kept in ``_IterableDataset_len_called``,
        torch's attribute.
        """
        length = super().__len__()
        if self._dataset_kind == torch_dataloader._DatasetKind.Iterable:
            self._IterableDataset_len_called = len(self.dataset)
        return length
