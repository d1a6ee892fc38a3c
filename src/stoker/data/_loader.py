"""DataLoader: checks its arguments, builds the default samplers, plans each iteration.

The argument rules follow torch 2.13's ``torch.utils.data.DataLoader`` (the same exception types
for the same combinations), with torch's message first and, after it, one that names the
argument, the value and what is valid. Deliberate differences, all stricter at construction
rather than later:

* ``prefetch_factor=0`` with workers raises here (torch fails at iteration), a ValueError that
  is also torch's AssertionError;
* ``timeout > 0`` with ``num_workers=0`` raises at iteration a ValueError that is also the
  AssertionError torch raises there;
* ``generator`` is type-checked here (torch fails when first drawing from it);
* the IterableDataset length warning compares batches yielded with ``len(loader)``.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.context import BaseContext
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar

from stoker import _torch
from stoker._checks import check_int, torch_first
from stoker._system import usable_cpu_count
from stoker.data._collate import default_collate, default_convert, map_arrays
from stoker.data._dataset import IterableDataset
from stoker.data._errors import ValueAssertionError, short_repr
from stoker.data._generator import resolve_generator
from stoker.data._iter import InProcessIter, LoaderIter
from stoker.data._iter_workers import WorkerIter
from stoker.data._plan import LoaderPlan
from stoker.data._resume.tracker import ResumeTracker
from stoker.data._samplers.base import BatchSampler, Sampler, SequentialSampler
from stoker.data._samplers.shuffled import RandomSampler
from stoker.data._stats import LoaderStats
from stoker.data._workers import EpochSetup

if TYPE_CHECKING:
    from typing_extensions import Self
    from typing_extensions import TypeVar as _DefaultTypeVar

    # The sample type; a bare ``DataLoader`` annotation means ``DataLoader[Any]``.
    T_co = _DefaultTypeVar("T_co", covariant=True, default=Any)
else:
    T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataLoader", "DatasetAdapter", "LoaderDefaults"]

_FROZEN = frozenset(
    ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
)


class _Indexable(Protocol[T_co]):
    """A map-style dataset as a type checker sees it: ``dataset[index]`` gives a sample."""

    def __getitem__(self, index: Any, /) -> T_co: ...


class _EndlessSampler(Sampler[None]):
    """Yields None forever: an iterable dataset decides itself when it ends."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)  # C-level: batching it costs almost nothing


class DatasetAdapter(Protocol):
    """How a loader takes in datasets of kinds that need more than the dataset protocols.

    The torch door's takes in torch's datapipes, which torch's DataLoader wraps, shuffles,
    seeds and shards.
    """

    def adopt(self, dataset: Any, shuffle: bool | None) -> tuple[Any, bool | None]:
        """Return the dataset the loader keeps and the ``shuffle`` left for it to check."""

    def epoch_setup(self, dataset: Any) -> EpochSetup | None:
        """How each copy of the (adopted) ``dataset`` is made ready for an epoch, or None.

        Asked for every iteration's plan, in the main process.
        """


class LoaderDefaults(NamedTuple):
    """What a DataLoader builds when it is given no sampler, batch sampler or collate_fn.

    ``random(dataset, generator=generator)`` with ``shuffle=True``, ``sequential(dataset)``
    otherwise, ``batch(sampler, batch_size, drop_last)`` for automatic batching, and ``collate``
    (with automatic batching) or ``convert`` (without) as the collate function; ``datasets``
    adopts datasets of special kinds (None: every dataset is taken as it is). A subclass (the
    torch door, through :mod:`stoker.data._door`) sets its own.
    """

    random: Callable[..., Any]
    sequential: Callable[..., Any]
    batch: Callable[..., Any]
    collate: Callable[[Any], Any]
    convert: Callable[[Any], Any]
    datasets: DatasetAdapter | None = None


def _tensors(batch: Any) -> Any:
    """Torch's batch from stoker's collation of it: NumPy leaves as tensors (no copy)."""
    return map_arrays(batch, _torch.as_tensor)


def _is_iterable_dataset(dataset: object) -> bool:
    return isinstance(dataset, IterableDataset) or _torch.is_iterable_dataset(dataset)


class DataLoader(Generic[T_co]):
    """Combines a dataset and a sampler, and iterates over batches, optionally in workers.

    Same signature, defaults and semantics as ``torch.utils.data.DataLoader`` (torch 2.13);
    batches are NumPy arrays (torch tensors when the samples are tensors). Generic in the
    sample type as torch's is: ``DataLoader[int]`` works in annotations and at run time, and a
    type checker infers it from the dataset (``Dataset[T]``, any object with ``__getitem__``,
    or an iterable); a bare ``DataLoader`` means ``DataLoader[Any]``.

    Args:
        dataset: a map-style dataset (``__getitem__``/``__len__``) or an IterableDataset.
        batch_size: samples per batch; None turns automatic batching off.
        shuffle: reshuffle each epoch (map-style only; default False).
        sampler: the order of indices; excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes batch_size, shuffle, sampler, drop_last.
        num_workers: how many workers load batches (processes, or threads with
            ``worker_type="thread"``); 0 loads in the calling thread.
        collate_fn: merges a list of samples into a batch (default: ``default_collate``, or
            ``default_convert`` when automatic batching is off). torch's own
            ``default_collate`` / ``default_convert`` give torch's batches (tensors), made by
            stoker's collation and turned into tensors without a copy.
        pin_memory: pin batches (torch tensors) in page-locked memory; needs torch and an
            accelerator, else warns and does nothing.
        drop_last: drop the last batch when it is short.
        timeout: seconds to wait for one batch from the workers (0: no limit).
        worker_init_fn: called in each worker with its id, after seeding and before loading.
        multiprocessing_context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or a context object.
        generator: an int seed, a ``numpy.random.Generator`` or a ``torch.Generator``; the
            random sampler and the workers' base seed are drawn from it. None draws from the
            program's global generator: torch's (exactly as torch's DataLoader draws) when
            torch is imported, else NumPy's legacy one (``np.random.seed``).
        prefetch_factor: batches loaded in advance per worker (default 2 with workers;
            left unset, process workers whose batches average under 64 KiB go 16 ahead).
        persistent_workers: keep the workers across epochs.
        pin_memory_device: deprecated and ignored, as in torch.
        in_order: yield batches in sampler order (False: as soon as they are ready).
        worker_type: ``"process"`` (default: worker processes, large batches through shared
            memory) or ``"thread"`` (worker threads in this process; same batches and order).
        split_first_batch: load the first batch of each epoch in shares, one per worker
            (each gathers a slice of its samples, the main process collates them), so it comes
            up to ``num_workers`` times sooner; later batches are loaded whole, as usual. The
            batch is the same, and so is every sample whose value depends only on its index
            (``sample_rng``, files); samples drawn from a worker's global generator or from
            ``get_worker_info()`` come from other workers than torch's. Needs a map-style
            dataset and the default ``collate_fn``; with fewer than 2 workers it does nothing.
    """

    dataset: Any
    _initialized = False
    _multiprocessing_context: BaseContext | None = None
    _defaults: ClassVar[LoaderDefaults] = LoaderDefaults(
        RandomSampler, SequentialSampler, BatchSampler, default_collate, default_convert
    )

    def __init__(  # noqa: PLR0917 - the positional signature is torch's
        self,
        dataset: _Indexable[T_co] | Iterable[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[Any] | Iterable[Any] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: str | BaseContext | None = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        worker_type: str = "process",
        split_first_batch: bool = False,
    ) -> None:
        num_workers = check_int(
            num_workers,
            "num_workers",
            minimum=0,
            hint="use 0 to load in the main process",
            torch_text="num_workers option should be non-negative; use num_workers=0 to "
            "disable multiprocessing.",
        )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if timeout < 0:
            raise ValueError(
                f"timeout option should be non-negative: timeout must be >= 0 seconds, got "
                f"{timeout!r}; use 0 to wait without a limit"
            )
        prefetch_factor = check_int(prefetch_factor, "prefetch_factor", allow_none=True)
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to "
                f"None. prefetch_factor must be None when num_workers=0, got "
                f"prefetch_factor={prefetch_factor!r}; it counts batches loaded ahead by each "
                "worker, so set num_workers > 0 or leave prefetch_factor unset"
            )
        self._prefetch_unset = prefetch_factor is None
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 1:
            # torch refuses a negative value here and 0 when iterating, as an AssertionError
            torch_text = (
                "prefetch_factor option should be non-negative"
                if prefetch_factor < 0
                else "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
            raise ValueAssertionError(
                torch_first(
                    torch_text,
                    f"prefetch_factor must be >= 1 with workers, got {prefetch_factor!r}; leave "
                    "it unset for the default of 2",
                )
            )
        if worker_type not in ("process", "thread"):
            raise ValueError(
                f"worker_type must be 'process' or 'thread', got {worker_type!r}; use 'thread' "
                "when __getitem__ releases the GIL (NumPy, I/O), else 'process'"
            )
        if not isinstance(split_first_batch, bool):
            raise TypeError(
                f"split_first_batch must be a bool, got {split_first_batch!r}; pass True to "
                "load each epoch's first batch in shares over the workers"
            )
        default_collation = collate_fn in (None, default_collate) or (
            _torch.batch_collation(collate_fn) == "collate"
        )
        if split_first_batch and (not default_collation or _is_iterable_dataset(dataset)):
            raise ValueError(
                "split_first_batch=True needs a map-style dataset and the default collate_fn, "
                f"got dataset={short_repr(dataset)} and collate_fn={collate_fn!r}: the main "
                "process collates the shares, which only the default collation does as a "
                "worker would; pass split_first_batch=False"
            )
        if persistent_workers and num_workers == 0:
            raise ValueError(
                "persistent_workers option needs num_workers > 0: persistent_workers=True "
                f"needs num_workers > 0, got num_workers={num_workers}; set num_workers > 0 or "
                "persistent_workers=False"
            )

        adapter = self._defaults.datasets
        if adapter is not None:
            dataset, shuffle = adapter.adopt(dataset, shuffle)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.worker_type = worker_type
        self.split_first_batch = split_first_batch
        self._stats = LoaderStats()

        self._iterable_kind = _is_iterable_dataset(dataset)
        if self._iterable_kind:
            if shuffle not in (False, None):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, but "
                    f"got shuffle={shuffle}; an iterable dataset decides its own order, so "
                    "shuffle inside its __iter__ (shuffle must be None or False)"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, but "
                    f"got sampler={sampler}; an iterable dataset yields its own samples in its "
                    "own order (sampler must be None)"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}; use batch_size to size batches "
                    "(batch_sampler must be None)"
                )
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError(
                f"sampler option is mutually exclusive with shuffle: got sampler={sampler!r} "
                f"and shuffle={shuffle!r}; pass a shuffling sampler (e.g. RandomSampler) and "
                "leave shuffle unset"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    f"sampler, and drop_last: got batch_size={batch_size!r}, shuffle={shuffle!r}, "
                    f"sampler={sampler!r}, drop_last={drop_last!r} with "
                    f"batch_sampler={batch_sampler!r}; leave those at their defaults (the batch "
                    "sampler decides batches)"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last: drop_last=True needs automatic batching; set a batch_size or "
                "drop_last=False"
            )

        self._seed_source = resolve_generator(generator)
        defaults = self._defaults
        if sampler is None:
            if self._iterable_kind:
                sampler = _EndlessSampler()
            elif shuffle:
                sampler = defaults.random(self.dataset, generator=generator)
            else:
                sampler = defaults.sequential(self.dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = defaults.batch(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = defaults.collate if self._auto_collation else defaults.convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterable_len_reported: int | None = None
        self._iterator: LoaderIter | None = None
        self._resume = ResumeTracker()
        self._initialized = True
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self) -> BaseContext | None:
        """The multiprocessing context the workers start with (None: the default one)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, value: str | BaseContext | None) -> None:
        if value is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}: got {value!r}; "
                    "set num_workers or leave multiprocessing_context=None"
                )
            if isinstance(value, str):
                methods = multiprocessing.get_all_start_methods()
                if value not in methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method in "
                        f"{methods!r}, but got multiprocessing_context={value!r}; pass one of "
                        "them or a context object"
                    )
                value = multiprocessing.get_context(value)
            if not isinstance(value, BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    f"string specifying the start method, but got multiprocessing_context={value}"
                    f" of type {type(value).__name__}"
                )
        object.__setattr__(self, "_multiprocessing_context", value)

    def __setattr__(self, name: str, value: Any) -> None:
        if self._initialized and name in _FROZEN:
            cls = type(self).__name__
            raise ValueError(
                f"{name} attribute should not be set after {cls} is initialized: got an "
                f"attempt to set it to {value!r}; create a new {cls} instead"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _plan(self) -> LoaderPlan:
        """Snapshot what an iteration (or a state) needs from this loader's current settings."""
        index_sampler = self._index_sampler
        if _torch.is_batch_sampler(index_sampler):
            # torch's BatchSampler batches as stoker's does: stoker's cuts the inner sampler's
            # index lists directly and gives a state the offset to resume at
            index_sampler = BatchSampler(
                index_sampler.sampler, index_sampler.batch_size, index_sampler.drop_last
            )
        collate_fn, finish = self.collate_fn, None
        adapter = self._defaults.datasets
        torch_collation = _torch.batch_collation(collate_fn)
        if torch_collation is not None:
            # torch's batches from stoker's collation: the same values, then tensors
            collate_fn = default_collate if torch_collation == "collate" else default_convert
            finish = _tensors
        return LoaderPlan(
            dataset=self.dataset,
            iterable=self._iterable_kind,
            index_sampler=index_sampler,
            auto_collation=self._auto_collation,
            collate_fn=collate_fn,
            finish=finish,
            drop_last=self.drop_last,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
            prefetch_factor=int(self.prefetch_factor or 2) if self.num_workers else 0,
            prefetch_auto=self._prefetch_unset and self.prefetch_factor == 2,
            in_order=bool(self.in_order),
            persistent_workers=bool(self.persistent_workers),
            timeout=self.timeout,
            worker_init_fn=self.worker_init_fn,
            multiprocessing_context=self.multiprocessing_context,
            worker_type=self.worker_type,
            split_first_batch=self.split_first_batch,
            pin_memory=self.pin_memory,
            pin_memory_device=self.pin_memory_device,
            seed_source=self._seed_source,
            len_reported=self._iterable_len_reported,
            epoch_setup=None if adapter is None else adapter.epoch_setup(self.dataset),
        )

    def _get_iterator(self) -> LoaderIter:
        if self.num_workers == 0:
            return InProcessIter(self._plan(), self._resume)
        self.check_worker_number_rationality()
        return WorkerIter(self._plan(), self._resume, self._stats)

    def __iter__(self) -> LoaderIter:
        """Return an iterator over batches (the same one each epoch with persistent workers)."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator.closed:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self._plan())
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        """Number of batches: from the sampler, or from ``len(dataset)`` for iterable datasets.

        For an IterableDataset the value is remembered; yielding more batches than it warns.
        """
        if self._iterable_kind:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = (
                    length // self.batch_size
                    if self.drop_last
                    else math.ceil(length / self.batch_size)
                )
            self._iterable_len_reported = length
            return length
        return len(self._index_sampler)

    def state_dict(self) -> dict[str, Any]:
        """Return where iteration stands: a small, versioned, JSON-serialisable dict.

        Taken after ``k`` batches of an epoch, loading it into a fresh loader built the same way
        (any ``num_workers`` for a map-style dataset) makes that loader yield the remaining
        batches of the epoch, then the following epochs, exactly as an uninterrupted run. Saved
        after an epoch's last batch, it resumes at the start of the next epoch. Workers do no
        work for it. See docs/design/resume.md for the format and what a custom sampler or an
        IterableDataset needs.
        """
        return self._resume.save(self._plan())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from a :meth:`state_dict`: the next ``iter(loader)`` continues from it.

        Persistent workers are stopped (new ones start with the restored seeds).

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when it does not fit this loader (another format version, dataset
                kind or length, sampler kind, batch size, ...); the message names the field.
        """
        self._resume.load(self._plan(), state)
        self.close()

    def check_worker_number_rationality(self) -> None:
        """Warn when ``num_workers`` exceeds the CPUs this process may use."""
        if not self.num_workers:
            return
        usable = usable_cpu_count()
        if usable is None or self.num_workers > usable:
            if usable is None:
                suggested = (
                    "DataLoader is not able to compute a suggested max number of worker in "
                    "current system."
                )
            else:
                affinity = hasattr(os, "sched_getaffinity")
                unchecked = "" if affinity else " (`cpuset` is not taken into account)"
                suggested = (
                    f"Our suggested max number of worker in current system is {usable}"
                    f"{unchecked}, which is smaller than what this DataLoader is going to create."
                )
            kind = "worker threads" if self.worker_type == "thread" else "worker processes"
            have = "an unknown number of" if usable is None else str(usable)
            warnings.warn(
                torch_first(
                    f"This DataLoader will create {self.num_workers} worker processes in "
                    f"total. {suggested} Please be aware that excessive worker creation might "
                    "get DataLoader running slow or even freeze, lower the worker number to "
                    "avoid potential slowness/freeze if necessary.",
                    f"num_workers={self.num_workers} {kind} for the {have} CPUs this process "
                    "may use; more workers than CPUs usually slows loading down unless the "
                    "dataset waits on I/O",
                ),
                UserWarning,
                stacklevel=3,
            )

    def stats(self) -> dict[str, Any]:
        """Return counters over this loader's worker iterators (see ``LoaderStats.snapshot``).

        Keys: ``batches_served``, ``main_wait_seconds``, ``worker_busy_seconds`` (by worker
        id), ``worker_start_seconds``, ``bytes_inline``, ``bytes_in_slabs``, ``bytes_moved``
        and ``slabs_in_use``; and each process worker's private memory (USS, in bytes, from
        ``/proc/<pid>/smaps_rollup``): ``worker_uss_start`` (at its first batch),
        ``worker_uss`` (at most a second old), ``worker_uss_growth``,
        ``worker_uss_growth_total`` and ``worker_batch_memory`` (the bytes of a worker's
        USS that may serve its batches: slabs, the kept heap). With ``num_workers=0``
        every counter stays at zero and the memory figures are empty (None for the total);
        without ``/proc`` they are None. When the workers' growth beyond their batch memory
        passes ``STOKER_DATA_COPY_WARN_MIB`` (default 256 MiB) the loader warns once with
        :class:`~stoker.data.DatasetCopyWarning`.
        """
        return self._stats.snapshot()

    def close(self) -> None:
        """Stop the persistent workers, if any (a later ``iter()`` starts new ones)."""
        if self._iterator is not None:
            self._iterator.close()
            self._iterator = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
