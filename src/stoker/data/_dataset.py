"""Datasets: the map-style and iterable bases and the ways to combine, stack and subset them.

Semantics follow ``torch.utils.data.dataset`` (torch 2.13). Where torch raises
``AssertionError`` for a bad argument, stoker raises an error that is both the proper kind
(``ValueError`` or ``TypeError``) and an ``AssertionError``, so code written against either
keeps working.

``__getitems__(indices)`` (a list of samples for a list of indices) is implemented by
:class:`TensorDataset` (one fancy-indexing gather per array), :class:`Subset`,
:class:`ConcatDataset` and :class:`StackDataset` (each forwarding to the inner datasets'
``__getitems__`` when they define one), so batched fetching reaches the innermost dataset.
"""

from __future__ import annotations

import bisect
import itertools
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from stoker import _torch
from stoker.data._errors import TypeAssertionError, ValueAssertionError, ValueIndexError

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_stack = TypeVar("T_stack")  # a tuple or a dict of samples, as in torch


class Dataset(Generic[T_co]):
    """A map-style dataset: samples fetched by key with ``__getitem__``.

    Subclasses implement ``__getitem__`` and usually ``__len__`` (which the default samplers
    and :class:`~stoker.data.DataLoader` need). They may also implement
    ``__getitems__(indices) -> list`` to fetch a whole batch at once; the loader then calls it
    instead of ``__getitem__`` once per index.

    ``dataset_a + dataset_b`` is a :class:`ConcatDataset`.
    """

    def __getitem__(self, index: Any) -> T_co:
        """Return the sample for ``index``; subclasses must override this."""
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        """Concatenate two map-style datasets."""
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """An iterable-style dataset: ``__iter__`` yields samples, e.g. from a stream.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset; use
    :func:`~stoker.data.get_worker_info` inside ``__iter__`` (or in ``worker_init_fn``) to give
    each copy its own shard, otherwise every sample is yielded once per worker.

    ``dataset_a + dataset_b`` is a :class:`ChainDataset`. ``__iter__`` is abstract: a subclass
    without it cannot be instantiated (``TypeError``), as in torch.
    """

    def __add__(self, other: Dataset[T_co]) -> ChainDataset[T_co]:  # type: ignore[override]
        """Chain two iterable datasets."""
        return ChainDataset([self, other])


def _first_dim(array: Any, position: int) -> int:
    shape = getattr(array, "shape", None)
    if shape is None:
        raise TypeError(
            f"tensors[{position}] must be a NumPy array or a torch tensor, got "
            f"{type(array).__name__}; convert it with numpy.asarray first"
        )
    if len(shape) == 0:
        raise ValueError(
            f"tensors[{position}] must have at least one dimension, got shape {tuple(shape)}; "
            "samples are taken along the first dimension"
        )
    return int(shape[0])


class TensorDataset(Dataset[tuple[Any, ...]]):
    """Samples are rows of arrays: ``dataset[i] == tuple(a[i] for a in arrays)``.

    Args:
        *tensors: NumPy arrays (or torch tensors) with the same size of the first dimension.

    Raises:
        ValueError: when no array is given, an array has no dimension, or the first dimensions
            differ (also an ``AssertionError``, as torch raises).
        TypeError: when an argument is not an array.
    """

    tensors: tuple[Any, ...]

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueIndexError(
                "TensorDataset needs at least one array, got none; "
                "pass arrays as TensorDataset(inputs, labels)"
            )
        sizes = [_first_dim(array, i) for i, array in enumerate(tensors)]
        if any(size != sizes[0] for size in sizes):
            raise ValueAssertionError(
                f"Size mismatch between tensors: first dimensions are {sizes}; "
                "every array must hold the same number of samples"
            )
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        """Return the row ``index`` of every array."""
        return tuple(tensor[index] for tensor in self.tensors)

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, ...]]:
        """Return the samples for ``indices`` with one gather per array."""
        if len(indices) == 0:
            return []
        gathered = []
        for tensor in self.tensors:
            if _torch.is_tensor(tensor):
                gathered.append(_torch.index_tensor(tensor, indices))
            else:
                gathered.append(tensor[np.asarray(indices, dtype=np.intp)])
        return list(zip(*gathered, strict=True))

    def __len__(self) -> int:
        """Return the size of the first dimension."""
        return int(self.tensors[0].shape[0])


class StackDataset(Dataset[T_stack]):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of samples.

    ``StackDataset(images, texts)[i] == (images[i], texts[i])`` and
    ``StackDataset(image=images, text=texts)[i] == {"image": images[i], "text": texts[i]}``.

    Args:
        *args: datasets stacked into a tuple.
        **kwargs: datasets stacked into a dict.

    Raises:
        ValueError: when both or neither of ``args`` and ``kwargs`` are given, or the lengths
            differ.
    """

    datasets: tuple[Any, ...] | dict[str, Any]

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given. StackDataset takes datasets either "
                "positionally (samples are tuples) or by keyword (samples are dicts), got "
                f"{len(args)} positional and keywords {sorted(kwargs)}; use one form"
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed to StackDataset, got none")
        named: dict[str, Any] = {str(i): d for i, d in enumerate(args)} if args else dict(kwargs)
        lengths = {name: len(dataset) for name, dataset in named.items()}
        first = next(iter(lengths.values()))
        if any(length != first for length in lengths.values()):
            raise ValueError(
                f"Size mismatch between datasets: lengths are {lengths}; "
                "stacked datasets must have the same length"
            )
        self._length = first
        self.datasets = args if args else dict(kwargs)

    def __getitem__(self, index: Any) -> Any:
        """Return the tuple or dict of the inner datasets' samples at ``index``."""
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Return the samples for ``indices``, using each inner ``__getitems__`` when defined."""
        columns = self.datasets.values() if isinstance(self.datasets, dict) else self.datasets
        fetched = [_fetch_many(dataset, indices) for dataset in columns]
        if isinstance(self.datasets, dict):
            keys = list(self.datasets)
            return [dict(zip(keys, row, strict=True)) for row in zip(*fetched, strict=True)]
        return list(zip(*fetched, strict=True))

    def __len__(self) -> int:
        """Return the common length of the stacked datasets."""
        return self._length


def _fetch_many(dataset: Any, indices: Sequence[int]) -> list[Any]:
    """Fetch ``indices`` from ``dataset``, through ``__getitems__`` when it has one."""
    getitems = getattr(dataset, "__getitems__", None)
    if callable(getitems):
        items = getitems(indices)
        if len(items) != len(indices):
            raise ValueError(
                f"Nested dataset's output size mismatch. Expected {len(indices)}, got "
                f"{len(items)}: {type(dataset).__name__}.__getitems__ must return one sample "
                "per index"
            )
        return list(items)
    return [dataset[index] for index in indices]


class ConcatDataset(Dataset[T_co]):
    """The concatenation of map-style datasets: indices run through each in turn.

    Args:
        datasets: the datasets, in order (a non-empty iterable, none of them iterable-style).

    Raises:
        ValueError: when ``datasets`` is empty.
        TypeError: when one of them is an :class:`IterableDataset`.
    """

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        """Return the running totals of the lengths of ``sequence``'s items."""
        return list(itertools.accumulate(len(item) for item in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueAssertionError(
                "datasets should not be an empty iterable; pass at least one dataset"
            )
        for position, dataset in enumerate(self.datasets):
            if isinstance(dataset, IterableDataset):
                raise TypeAssertionError(
                    f"ConcatDataset does not support IterableDataset, got datasets[{position}] "
                    f"of type {type(dataset).__name__}; use ChainDataset for iterable datasets"
                )
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        """Return the total length."""
        return self.cumulative_sizes[-1]

    def _locate(self, index: int) -> tuple[int, int]:
        total = self.cumulative_sizes[-1]
        if index < 0:
            if -index > total:
                raise ValueError(
                    f"absolute value of index should not exceed dataset length {total}, got {index}"
                )
            index += total
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which >= len(self.datasets):
            raise IndexError(
                f"list index out of range: index {index} is out of range for a ConcatDataset "
                f"of length {total}"
            )
        return which, index - (self.cumulative_sizes[which - 1] if which else 0)

    def __getitem__(self, idx: int) -> T_co:
        """Return the sample ``idx`` of the concatenation."""
        which, local = self._locate(idx)
        return self.datasets[which][local]

    def __getitems__(self, indices: Sequence[int]) -> list[T_co]:
        """Return the samples for ``indices``, one batched fetch per inner dataset."""
        groups: dict[int, list[tuple[int, int]]] = {}
        for position, index in enumerate(indices):
            which, local = self._locate(int(index))
            groups.setdefault(which, []).append((position, local))
        out: list[Any] = [None] * len(indices)
        for which, members in groups.items():
            items = _fetch_many(self.datasets[which], [local for _, local in members])
            for (position, _), item in zip(members, items, strict=True):
                out[position] = item
        return out

    @property
    def cummulative_sizes(self) -> list[int]:
        """Deprecated spelling of :attr:`cumulative_sizes`."""
        warnings.warn(
            "`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
            FutureWarning,
            stacklevel=2,
        )
        return self.cumulative_sizes


class ChainDataset(IterableDataset[T_co]):
    """The chaining of iterable datasets: yields all of the first, then the second, ...

    Args:
        datasets: the :class:`IterableDataset` objects, in order. They are checked when
            iterated, as in torch.
    """

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    @staticmethod
    def _check(dataset: object) -> None:
        if not isinstance(dataset, IterableDataset):
            raise TypeAssertionError(
                "ChainDataset only supports IterableDataset, got "
                f"{type(dataset).__name__}; use ConcatDataset for map-style datasets"
            )

    def __iter__(self) -> Iterator[T_co]:
        """Yield every sample of every dataset in turn."""
        for dataset in self.datasets:
            self._check(dataset)
            yield from dataset  # type: ignore[misc]

    def __len__(self) -> int:
        """Return the sum of the datasets' lengths."""
        total = 0
        for dataset in self.datasets:
            self._check(dataset)
            total += len(dataset)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``: ``subset[i] == dataset[indices[i]]``.

    A subclass that overrides ``__getitem__`` must also override ``__getitems__`` (the loader
    calls ``__getitems__``); otherwise construction raises ``NotImplementedError``, as in
    torch.

    Args:
        dataset: the whole dataset.
        indices: the positions in ``dataset`` selected for the subset.
    """

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing "
                "Subset and overriding __getitem__, you must also override __getitems__ to "
                "ensure DataLoader works correctly with your custom logic. A simple "
                "implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx: Any) -> T_co:
        """Return ``dataset[indices[idx]]`` (a list of positions maps to a list of indices)."""
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: Sequence[int]) -> list[T_co]:
        """Return the samples at ``indices``, forwarding to the inner ``__getitems__``."""
        chosen: Any = self.indices
        if isinstance(chosen, np.ndarray):
            mapped = chosen[np.asarray(indices, dtype=np.intp)].tolist()
        else:
            mapped = [self.indices[i] for i in indices]
        return _fetch_many(self.dataset, mapped)

    def __len__(self) -> int:
        """Return the number of selected indices."""
        return len(self.indices)
