"""The one worker loop (indices in, batches out) with the worker's identity and seeds.

:func:`worker_loop` runs in every worker, whatever runs it. It talks to the main process only
through a :class:`WorkerHost`, which decides how messages travel and how per-worker state is
installed. The process host lives in :mod:`stoker.data._transport`; another host (threads,
shared-memory batches) plugs in without touching the loop.

Messages from the main process are ``(task_id, index)`` tuples, :data:`RESET` (start a new
epoch on persistent workers) and :data:`STOP`. Every task is answered exactly once with
``(task_id, status, payload, meta)`` where status is :data:`BATCH`, :data:`FAILED` (payload: a
:class:`~stoker.data._errors.WorkerFailure`) or :data:`EXHAUSTED` (the worker's iterable
dataset replica has ended); a reset is answered with ``(-1, RESET_DONE, None, None)``. ``meta``
is a small dict: ``"busy"`` (seconds the worker spent on the task), ``"ended"`` (True with an
iterable replica's last batch, when the worker already knows it is the last) and, for an
IterableDataset that defines ``state_dict()``, ``"worker_state"`` (its state taken right after
the batch). A replica resumed from a checkpoint gets its saved state through
``WorkerSetup.resume_state`` (see docs/design/resume.md).

Seeds: worker ``i`` of an iterator whose base seed is ``b`` gets ``seed = b + i``, which seeds
Python's :mod:`random` and, when torch is already imported in the worker, ``torch.manual_seed``.
NumPy's legacy global state (``np.random.seed``) is seeded with four 32-bit words that
``numpy.random.SeedSequence([i, b % 2**32, b // 2**32, 0])`` generates, the same words torch's
DataLoader uses, so ``np.random`` draws in a worker equal torch's for the same base seed.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.random  # imported here, once: forked workers then seed it without importing it

from stoker.data._errors import WorkerFailure
from stoker.data._fetch import DatasetExhausted, IterableFetcher, MapFetcher, make_fetcher

__all__ = [
    "BATCH",
    "EXHAUSTED",
    "FAILED",
    "RESET",
    "RESET_DONE",
    "STOP",
    "Reply",
    "WorkerHost",
    "WorkerInfo",
    "WorkerSetup",
    "get_worker_info",
    "numpy_seed_words",
    "seed_process_rngs",
    "set_process_worker_info",
    "set_thread_worker_info",
    "worker_loop",
]

STOP = "stop"
RESET = "reset"
BATCH = 0
FAILED = 1
EXHAUSTED = 2
RESET_DONE = 3

_MASK32 = 0xFFFFFFFF

Reply = tuple[int, int, Any, "dict[str, Any] | None"]
"""``(task_id, status, payload, meta)``: one answer from a worker."""


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
    """Install ``info`` as the calling thread's worker information (thread workers only)."""
    _thread_info.info = info


def set_process_worker_info(info: WorkerInfo | None) -> None:
    """Install ``info`` as this process's worker information (process workers only)."""
    global _process_info
    _process_info = info


def numpy_seed_words(base_seed: int, worker_id: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """Return the four 32-bit words that seed NumPy's legacy global state in a worker."""
    entropy = [worker_id, base_seed & _MASK32, (base_seed >> 32) & _MASK32, 0]
    words: np.ndarray[Any, np.dtype[np.uint32]] = np.random.SeedSequence(entropy).generate_state(
        4, np.uint32
    )  # type: ignore[assignment]
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
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.set_num_threads(1)
        torch.manual_seed(seed)
    return seed


@dataclass(frozen=True)
class WorkerSetup:
    """Everything a worker needs, sent once when it starts.

    Attributes:
        dataset: the dataset (pickled for spawn and forkserver, inherited for fork).
        iterable: whether the dataset is iterable-style.
        auto_collation: whether the sampler yields lists of indices.
        collate_fn: the collation function.
        drop_last: drop a short last batch of an iterable dataset.
        base_seed: the iterator's base seed; the worker's seed is ``base_seed + worker_id``.
        worker_id: this worker's id.
        num_workers: the number of workers.
        init_fn: the user's ``worker_init_fn``, called with the worker id.
        resume_state: an IterableDataset replica's saved state: handed to its
            ``load_state_dict()`` once, after ``worker_init_fn`` and before the first
            ``iter(dataset)``; None starts the replica afresh.
    """

    dataset: Any
    iterable: bool
    auto_collation: bool
    collate_fn: Callable[[Any], Any]
    drop_last: bool
    base_seed: int
    worker_id: int
    num_workers: int
    init_fn: Callable[[int], None] | None
    resume_state: Any = None


class WorkerHost(Protocol):
    """How a worker receives tasks, sends results and installs its identity and seeds.

    Two members are optional (looked up with ``getattr``): ``carries_meta`` (True: replies are
    4-tuples ending with ``meta``; a host without it gets 3-tuples ``(task_id, status,
    payload)``) and ``prepare_collate(collate_fn) -> collate_fn`` (a transport that collates
    into its own memory).
    """

    worker_method: str

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        """Seed the worker's generators, make :func:`get_worker_info` answer, return the info."""

    def receive(self) -> Any:
        """Block until the next message; return :data:`STOP` when the main process is gone."""

    def send(self, message: Reply) -> None:
        """Send one reply; raise OSError when the main process cannot be reached."""


def _new_fetcher(
    setup: WorkerSetup, dataset: Any, collate_fn: Callable[[Any], Any]
) -> MapFetcher | IterableFetcher:
    return make_fetcher(
        dataset,
        iterable=setup.iterable,
        auto_collation=setup.auto_collation,
        collate_fn=collate_fn,
        drop_last=setup.drop_last,
    )


def _start(
    setup: WorkerSetup, dataset: Any, collate_fn: Callable[[Any], Any], *, first: bool
) -> tuple[MapFetcher | IterableFetcher | None, WorkerFailure | None]:
    """Run ``worker_init_fn`` and restore a saved state (first epoch only), create the fetcher.

    Failures are captured, not raised: they answer every task of the epoch.
    """
    where = "in worker_init_fn"
    try:
        if first and setup.init_fn is not None:
            setup.init_fn(setup.worker_id)
        if first and setup.resume_state is not None:
            where = "in the IterableDataset's load_state_dict()"
            dataset.load_state_dict(setup.resume_state)
        where = "while calling iter(dataset)" if setup.iterable else "while starting"
        return _new_fetcher(setup, dataset, collate_fn), None
    except Exception as err:
        return None, WorkerFailure.capture(err, setup.worker_id, where=where)


def _state_getter(setup: WorkerSetup, dataset: Any) -> Callable[[], Any] | None:
    """Return the IterableDataset replica's ``state_dict`` method, or None when it has none."""
    if not setup.iterable:
        return None
    getter = getattr(dataset, "state_dict", None)
    return getter if callable(getter) else None


def _answer(
    fetcher: MapFetcher | IterableFetcher, setup: WorkerSetup, task_id: int, index: Any
) -> tuple[int, int, Any]:
    try:
        return (task_id, BATCH, fetcher.fetch(index))
    except DatasetExhausted:
        return (task_id, EXHAUSTED, None)
    except Exception as err:
        where = "while reading the IterableDataset" if setup.iterable else ""
        batch_index = None if setup.iterable else index
        failure = WorkerFailure.capture(
            err, setup.worker_id, where=where.strip(), batch_index=batch_index
        )
        return (task_id, FAILED, failure)


def _meta(
    setup: WorkerSetup,
    fetcher: MapFetcher | IterableFetcher | None,
    get_state: Callable[[], Any] | None,
    status: int,
    busy: float,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"busy": busy}
    if status == BATCH and isinstance(fetcher, IterableFetcher) and fetcher.ended:
        meta["ended"] = True  # this was the replica's last batch
    if get_state is not None and status != FAILED:
        try:
            meta["worker_state"] = get_state()
        except Exception as err:  # reported with the next batch instead of killing the worker
            meta["worker_state_error"] = WorkerFailure.capture(
                err, setup.worker_id, where="in the IterableDataset's state_dict()"
            )
    return meta


def worker_loop(setup: WorkerSetup, host: WorkerHost) -> None:
    """Serve tasks until told to stop or the main process is gone.

    Failures of ``worker_init_fn``, of ``iter(dataset)`` and of each fetch are sent back as
    :class:`~stoker.data._errors.WorkerFailure` records answering the task; the loop goes on.
    A failure to start is sticky: every task of that epoch is answered with it.

    Args:
        setup: what to fetch and how.
        host: the transport and the per-worker state installer.
    """
    info = host.install(setup)
    prepare = getattr(host, "prepare_collate", None)
    collate_fn = setup.collate_fn if prepare is None else prepare(setup.collate_fn)
    with_meta = bool(getattr(host, "carries_meta", False))
    get_state = _state_getter(setup, info.dataset) if with_meta else None
    fetcher, failure = _start(setup, info.dataset, collate_fn, first=True)
    clock = time.perf_counter
    while True:
        message = host.receive()
        if type(message) is tuple:
            started = clock()
            task_id, index = message
            if failure is not None or fetcher is None:
                answer: tuple[int, int, Any] = (task_id, FAILED, failure)
            else:
                answer = _answer(fetcher, setup, task_id, index)
            meta = (
                _meta(setup, fetcher, get_state, answer[1], clock() - started)
                if with_meta
                else None
            )
            try:
                host.send((*answer, meta) if with_meta else answer)  # type: ignore[arg-type]
            except OSError:
                return
            except Exception as err:  # the batch could not be pickled for the main process
                unsent = WorkerFailure.capture(
                    err, setup.worker_id, where="while sending the batch to the main process"
                )
                try:
                    host.send(
                        (task_id, FAILED, unsent, meta) if with_meta else (task_id, FAILED, unsent)  # type: ignore[arg-type]
                    )
                except OSError:
                    return
            del answer
        elif message == RESET:
            fetcher, failure = _start(setup, info.dataset, collate_fn, first=False)
            try:
                host.send((-1, RESET_DONE, None, None) if with_meta else (-1, RESET_DONE, None))  # type: ignore[arg-type]
            except OSError:
                return
        else:
            return
