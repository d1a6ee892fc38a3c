"""The one worker loop: tasks in, replies out, the same for thread and process workers.

:func:`worker_loop` runs in every worker, whatever runs it. It talks to the main process only
through a :class:`WorkerHost`, which decides how messages travel, how the worker's identity and
seeds are installed, and whether batches are collated into the transport's own memory; the
process host is :class:`~stoker.data._workers.process.ProcessHost`, the thread host
:class:`~stoker.data._workers.threads.ThreadHost`. The messages are those of
:mod:`stoker.data._workers.protocol`: every :class:`~stoker.data._workers.protocol.Task` is
answered exactly once, and so is every :class:`~stoker.data._workers.protocol.Reset`.

For an IterableDataset whose replica defines a ``state_dict()`` callable without arguments, the
loop calls it right after each batch (and after reporting the replica exhausted) and sends the
result in ``Meta.worker_state``; a failing call travels as ``Meta.state_error`` instead of
ending the worker. A replica resumed from a checkpoint gets its saved state through
``WorkerSetup.resume_state`` (see docs/design/resume.md).

A ``WorkerSetup.epoch_setup`` prepares the worker's dataset for each epoch (the torch door's
datapipes: their shuffle seed, shared by every worker, and this worker's shard) before
``worker_init_fn`` in the first epoch and before ``iter(dataset)`` in every one, with the first
epoch's ``WorkerSetup.shared_seed`` and each later epoch's ``Reset.shared_seed``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from stoker._checks import callable_without_arguments
from stoker.data._errors import WorkerFailure
from stoker.data._fetch import DatasetExhausted, Fetcher, IterableFetcher, make_fetcher
from stoker.data._workers.info import WorkerInfo
from stoker.data._workers.protocol import (
    BATCH,
    EXHAUSTED,
    FAILED,
    NO_STATE,
    NO_TASK,
    RESET_DONE,
    Command,
    Meta,
    Reply,
    Reset,
    Status,
    Task,
    WorkerSetup,
)

__all__ = ["WorkerHost", "worker_loop"]


class WorkerHost(Protocol):
    """How a worker receives tasks, sends replies and installs its identity and seeds."""

    worker_method: str

    def install(self, setup: WorkerSetup) -> WorkerInfo:
        """Seed the worker's generators, make ``get_worker_info()`` answer, return the info.

        torch's ``get_worker_info()`` answers too, now or once torch is imported.
        """

    def prepare_collate(self, collate_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Return the collate function to use (a transport may collate into its own memory)."""

    def receive(self) -> Task | Reset | Command:
        """Block until the next message; return ``STOP`` when the main process is gone."""

    def send(self, reply: Reply) -> None:
        """Send one reply; raise OSError when the main process cannot be reached."""


def _start(
    setup: WorkerSetup,
    dataset: Any,
    collate_fn: Callable[[Any], Any],
    *,
    first: bool,
    shared_seed: int | None,
) -> tuple[Fetcher | None, WorkerFailure | None]:
    """Prepare the dataset for the epoch, then create the fetcher.

    In between, run ``worker_init_fn`` and restore a saved state (first epoch only).

    Failures are captured, not raised: they answer every task of the epoch.
    """
    where = "while preparing the dataset for the epoch"
    try:
        if setup.epoch_setup is not None:
            dataset = setup.epoch_setup.prepare(
                dataset, shared_seed, setup.worker_id, setup.num_workers
            )
        where = "in worker_init_fn"
        if first and setup.init_fn is not None:
            setup.init_fn(setup.worker_id)
        if first and setup.resume_state is not None:
            where = "in the IterableDataset's load_state_dict()"
            dataset.load_state_dict(setup.resume_state)
        where = "while calling iter(dataset)" if setup.iterable else "while starting"
        fetcher = make_fetcher(
            dataset,
            iterable=setup.iterable,
            auto_collation=setup.auto_collation,
            collate_fn=collate_fn,
            drop_last=setup.drop_last,
        )
        return fetcher, None
    except Exception as err:
        return None, WorkerFailure.capture(err, setup.worker_id, where=where)


def _state_getter(setup: WorkerSetup, dataset: Any) -> Callable[[], Any] | None:
    """Return the IterableDataset replica's ``state_dict`` method, or None.

    None when it has none that can be called without arguments (litdata's needs three: it is
    never called).
    """
    if not setup.iterable:
        return None
    getter = getattr(dataset, "state_dict", None)
    return getter if callable(getter) and callable_without_arguments(getter) else None


def _answer(fetcher: Fetcher, setup: WorkerSetup, index: Any, *, share: bool) -> tuple[Status, Any]:
    try:
        return BATCH, fetcher.gather(index) if share else fetcher.fetch(index)
    except DatasetExhausted:
        return EXHAUSTED, None
    except Exception as err:
        where = "while reading the IterableDataset" if setup.iterable else ""
        batch_index = None if setup.iterable else index
        failure = WorkerFailure.capture(
            err, setup.worker_id, where=where.strip(), batch_index=batch_index
        )
        return FAILED, failure


def _iterable_meta(
    setup: WorkerSetup,
    fetcher: Fetcher | None,
    get_state: Callable[[], Any] | None,
    status: Status,
    busy: float,
) -> Meta:
    """The meta of an IterableDataset's reply: the end of the replica and its state."""
    ended = status is BATCH and isinstance(fetcher, IterableFetcher) and fetcher.ended
    if get_state is None or status is FAILED:
        return Meta(busy, ended)
    try:
        return Meta(busy, ended, get_state())
    except Exception as err:  # reported with the next batch instead of killing the worker
        failure = WorkerFailure.capture(
            err, setup.worker_id, where="in the IterableDataset's state_dict()"
        )
        return Meta(busy, ended, NO_STATE, failure)


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
    collate_fn = host.prepare_collate(setup.collate_fn)
    iterable = setup.iterable
    get_state = _state_getter(setup, info.dataset)
    fetcher, failure = _start(
        setup, info.dataset, collate_fn, first=True, shared_seed=setup.shared_seed
    )
    clock = time.perf_counter
    while True:
        message = host.receive()
        if type(message) is Task:
            started = clock()
            task_id = message.task_id
            if failure is not None or fetcher is None:
                status: Status = FAILED
                payload: Any = failure
            else:
                status, payload = _answer(fetcher, setup, message.index, share=message.whole > 0)
            busy = clock() - started
            meta = (
                _iterable_meta(setup, fetcher, get_state, status, busy) if iterable else Meta(busy)
            )
            try:
                host.send(Reply(task_id, status, payload, meta))
            except OSError:
                return
            except Exception as err:  # the batch could not be pickled for the main process
                unsent = WorkerFailure.capture(
                    err, setup.worker_id, where="while sending the batch to the main process"
                )
                try:
                    host.send(Reply(task_id, FAILED, unsent, meta))
                except OSError:
                    return
            del payload
        elif type(message) is Reset:
            fetcher, failure = _start(
                setup, info.dataset, collate_fn, first=False, shared_seed=message.shared_seed
            )
            try:
                host.send(Reply(NO_TASK, RESET_DONE, None, Meta()))
            except OSError:
                return
        else:
            return
