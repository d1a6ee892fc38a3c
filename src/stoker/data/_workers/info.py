"""A worker's identity and seeds: :class:`WorkerInfo`, :func:`get_worker_info`, seeding.

Each worker, thread or process, installs its :class:`WorkerInfo` before it touches the dataset,
so ``get_worker_info()`` answers in ``worker_init_fn``, in ``__getitem__`` and in an
``IterableDataset.__iter__``. A process worker installs it process-wide; a thread worker
installs it for its own thread (thread-local), so the main thread still gets None.

Seeds: worker ``i`` of an iterator whose base seed is ``b`` gets ``seed = b + i``. A process
worker seeds Python's :mod:`random` with it and, when torch is already imported in the worker,
``torch.manual_seed`` (through :mod:`stoker._torch`). NumPy's legacy global state
(``np.random.seed``) is seeded with four 32-bit words that
``numpy.random.SeedSequence([i, b % 2**32, b // 2**32, 0])`` generates, the same words torch's
DataLoader uses, so ``np.random`` draws in a worker equal torch's for the same base seed.
Thread workers share the process's generators and reseed none of them: their ``WorkerInfo.rng``
holds generators of their own instead.

torch's ``torch.utils.data.get_worker_info()`` answers too, so datasets written for torch
(webdataset's ``split_by_worker``, Hugging Face ``datasets``' iterable datasets) shard by
worker: with torch's own ``WorkerInfo`` holding the same id, number of workers, seed and dataset
(:func:`torch_answers_process`, :func:`torch_answers_thread`). torch is never imported for it:
a worker tells torch when it starts if torch is imported by then, else the moment torch is
imported in the worker (by the dataset's unpickling, ``worker_init_fn`` or a sample), before any
code can ask. torch keeps one answer per process; while thread workers run, that answer is
looked up per thread (each worker thread gets its own; any other thread gets what it got
before, or a RuntimeError that names the problem and the fix when that was None).
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.random  # imported here, once: forked workers then seed it without importing it

from stoker import _torch

__all__ = [
    "WorkerInfo",
    "get_worker_info",
    "numpy_seed_words",
    "seed_process_rngs",
    "set_process_worker_info",
    "set_thread_worker_info",
    "torch_answers_process",
    "torch_answers_thread",
]

_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a DataLoader worker knows about itself; see :func:`get_worker_info`.

    Attributes:
        id: the worker's id, from 0 to ``num_workers - 1``.
        num_workers: how many workers the iterator runs.
        seed: the seed this worker's random generators were seeded with (base seed + id).
        dataset: this worker's copy of the dataset (a different object from the main
            process's dataset when the worker is a process).
        rng: per-worker random state for workers that cannot seed process-wide generators;
            None for process workers.
        worker_method: ``"multiprocessing"`` for process workers, ``"threading"`` for threads.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_process_info: WorkerInfo | None = None
_thread_info = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """Return the current DataLoader worker's :class:`WorkerInfo`, or None outside a worker.

    In a worker, the result names the worker's ``id``, ``num_workers``, its ``seed`` and its
    copy of the ``dataset``; use it in ``worker_init_fn`` or in an ``IterableDataset.__iter__``
    to give each worker its own shard. In the main process it returns None.

    Returns:
        The worker's information, or None in the main process.
    """
    info: WorkerInfo | None = getattr(_thread_info, "info", None)
    return info if info is not None else _process_info


def set_thread_worker_info(info: WorkerInfo | None) -> None:
    """Install ``info`` as the calling thread's worker information (thread workers only).

    ``None`` ends the thread's time as a worker: torch's answer for it goes too.
    """
    _thread_info.info = info
    if info is None:
        _torch.leave_thread_worker()


def set_process_worker_info(info: WorkerInfo | None) -> None:
    """Install ``info`` as this process's worker information (process workers only)."""
    global _process_info
    _process_info = info


def torch_answers_process(info: WorkerInfo) -> None:
    """Make torch's ``get_worker_info()`` answer ``info`` in this (worker) process.

    Now if torch is imported, else the moment it is.
    """
    _torch.set_worker_info(info.id, info.num_workers, info.seed, info.dataset)


def torch_answers_thread(info: WorkerInfo) -> None:
    """Make torch's ``get_worker_info()`` answer ``info`` in the calling worker thread.

    Now if torch is imported, else the moment it is; undone by ``set_thread_worker_info(None)``
    when the thread stops being a worker.
    """
    _torch.enter_thread_worker(
        info.id, info.num_workers, info.seed, info.dataset, info.worker_method or "threading"
    )


_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875  # NumPy's SeedSequence (bit_generator.pyx)
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715


def numpy_seed_words(base_seed: int, worker_id: int) -> list[int]:
    """Return the four 32-bit words that seed NumPy's legacy global state in a worker.

    They are ``np.random.SeedSequence([worker_id, low, high, 0]).generate_state(4)`` for the
    two 32-bit halves of ``base_seed``, computed here in Python: NumPy's own, in a freshly
    forked worker, wrote to enough of its copied pages to cost 0.45 ms of the first batch
    (against 0.03 ms for this). The test suite compares the two.
    """
    entropy = (worker_id & _MASK32, base_seed & _MASK32, (base_seed >> 32) & _MASK32, 0)
    hash_const = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * _MULT_A) & _MASK32
        value = (value * hash_const) & _MASK32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        result = (_MIX_L * x - _MIX_R * y) & _MASK32
        return result ^ (result >> 16)

    pool = [hashmix(word) for word in entropy]
    for source in range(4):
        for target in range(4):
            if source != target:
                pool[target] = mix(pool[target], hashmix(pool[source]))
    words = []
    hash_const = _INIT_B
    for word in pool:
        mixed = word ^ hash_const
        hash_const = (hash_const * _MULT_B) & _MASK32
        mixed = (mixed * hash_const) & _MASK32
        words.append(mixed ^ (mixed >> 16))
    return words


def seed_process_rngs(base_seed: int, worker_id: int) -> int:
    """Seed this process's global generators for worker ``worker_id``; return its seed.

    Python's :mod:`random` and torch (only when already imported; it is then also limited to
    one intra-op thread, as torch's workers are) get ``base_seed + worker_id``; NumPy's legacy
    global state gets :func:`numpy_seed_words`.
    """
    seed = base_seed + worker_id
    random.seed(seed)
    np.random.seed(numpy_seed_words(base_seed, worker_id))
    _torch.seed_worker(seed)
    return seed
