"""Per-sample randomness: a NumPy generator keyed by ``(seed, epoch, index)``, whoever loads it.

:func:`sample_rng` gives ``__getitem__`` a generator that depends only on the loader's sample
seed, the loader's epoch and the sample's index, never on which worker (thread or process) or
how many workers load it, nor on whether the iteration was resumed from a checkpoint. So
randomly augmented batches are bit-identical for any ``num_workers``.

How the key reaches the code that loads a sample (no change to the worker loop needed):

* ``num_workers=0``: the in-process iterator installs the key in the calling thread around
  each fetch (:func:`swap_thread_key`).
* workers: the loader hands the workers each batch of indices as a :class:`KeyedIndices` (a
  ``list``) or :class:`KeyedIndex` (an ``int``) that carries the key. A process worker receives
  it pickled: unpickling installs the key in the worker process and gives the dataset a plain
  ``list``/``int``, exactly what it would get otherwise. A thread worker receives the object
  itself: iterating a :class:`KeyedIndices` in a thread other than the main thread installs
  the key in that thread, and a :class:`KeyedIndex` carries it to :func:`sample_rng` directly.

A worker handles one batch at a time, so the key installed last is the key of the batch being
loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from stoker._checks import check_int
from stoker.data._generator import make_rng

__all__ = [
    "KeyedIndex",
    "KeyedIndices",
    "current_key",
    "keyed",
    "sample_rng",
    "swap_thread_key",
]

_SAMPLE_TAG = 0x5341_4D50  # keys the per-sample streams apart from the samplers'

_local = threading.local()
_process_key: tuple[int, int] | None = None


def _install_process_key(key: tuple[int, int]) -> None:
    global _process_key
    _process_key = key
    _local.key = None  # a thread-local key inherited through fork must not shadow it


def current_key() -> tuple[int, int] | None:
    """Return the ``(seed, epoch)`` installed for the calling thread (or process), if any."""
    key: tuple[int, int] | None = getattr(_local, "key", None)
    return key if key is not None else _process_key


def swap_thread_key(key: tuple[int, int] | None) -> tuple[int, int] | None:
    """Install ``key`` for the calling thread and return the key it replaces."""
    previous: tuple[int, int] | None = getattr(_local, "key", None)
    _local.key = key
    return previous


def _restore_indices(key: tuple[int, int], items: list[Any]) -> list[Any]:
    _install_process_key(key)
    return items


def _restore_index(key: tuple[int, int], value: int) -> int:
    _install_process_key(key)
    return value


class KeyedIndices(list[Any]):
    """A batch of indices that carries the loader's ``(seed, epoch)`` to the worker loading it."""

    __slots__ = ("key",)

    def __init__(self, items: list[Any], key: tuple[int, int]) -> None:
        super().__init__(items)
        self.key = key

    def __iter__(self) -> Iterator[Any]:
        if threading.current_thread() is not threading.main_thread():
            _local.key = self.key  # a thread worker is about to load these indices
        return super().__iter__()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_indices, (self.key, self[:]))


class KeyedIndex(int):
    """One index (``batch_size=None``) that carries the loader's ``(seed, epoch)``."""

    key: tuple[int, int]

    def __new__(cls, value: int, key: tuple[int, int]) -> KeyedIndex:
        self = super().__new__(cls, value)
        self.key = key
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_index, (self.key, int(self)))


def keyed(item: Any, key: tuple[int, int]) -> Any:
    """Wrap an index-sampler item so that it carries ``key``; other kinds pass unchanged.

    Only plain lists (what :class:`~stoker.data.BatchSampler` yields) and plain ints are
    wrapped, so a custom sampler's tuples or arrays reach the dataset untouched (per-sample
    keys then need ``num_workers=0``).
    """
    kind = type(item)
    if kind is list:
        return KeyedIndices(item, key)
    if kind is int:
        return KeyedIndex(item, key)
    return item


def sample_rng(
    index: int, *, seed: int | None = None, epoch: int | None = None
) -> np.random.Generator:
    """Return a NumPy generator for one sample, keyed by ``(seed, epoch, index)``.

    Call it inside ``__getitem__`` (or ``__getitems__``) while a :class:`~stoker.data.DataLoader`
    iterates: ``seed`` and ``epoch`` then come from the loader (the base seed of its first
    epoch, drawn from ``generator=``, and the number of epochs it started before this one), so
    the draws do not depend on ``num_workers``, on thread or process workers, or on resuming.

    Example::

        class Augmented(stoker.data.Dataset):
            def __getitem__(self, index):
                rng = stoker.data.sample_rng(index)
                return self.images[index] + rng.normal(0, 0.1, self.images[index].shape)

    Args:
        index: the sample's index (an int, as ``__getitem__`` receives it).
        seed: overrides the loader's sample seed (required outside a loader).
        epoch: overrides the loader's epoch (required outside a loader).

    Returns:
        A new :class:`numpy.random.Generator`; the same key always gives the same stream.

    Raises:
        TypeError: when ``index`` (or ``seed``/``epoch``) is not an int.
        RuntimeError: when no loader is loading this sample and ``seed``/``epoch`` are not given.
    """
    check_int(index, "index", hint="pass the index __getitem__ received")
    if seed is None or epoch is None:
        key = index.key if isinstance(index, KeyedIndex) else current_key()
        if key is None:
            raise RuntimeError(
                "sample_rng() found no loader key: call it while a stoker.data.DataLoader loads "
                "the sample (inside __getitem__), or pass seed= and epoch= explicitly"
            )
        seed = key[0] if seed is None else seed
        epoch = key[1] if epoch is None else epoch
    return make_rng(_SAMPLE_TAG, seed, epoch, int(index))
