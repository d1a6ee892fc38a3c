"""The messages between the main process and its workers: setup, tasks, commands and replies.

The same messages travel whatever carries them (a pipe between processes, a queue between
threads), so the worker loop and the main process's bookkeeping never look at the transport.

From the main process to a worker, in this order:

* one :class:`WorkerSetup` (inherited with fork, pickled once for all workers otherwise);
* :class:`Task` ``(task_id, index, released)`` for each batch: ``index`` is what the index
  sampler yielded, ``released`` the ids of shared-memory slabs the main process no longer uses
  (empty except with process workers);
* :class:`Reset` ``(shared_seed)`` to start a new epoch on persistent workers (:data:`RESET`
  when the epoch has no shared seed), and :data:`STOP`, a member of the :class:`Command` enum.

From a worker, exactly one :class:`Reply` ``(task_id, status, payload, meta)`` per task, and one
per :class:`Reset`; ``status`` is a :class:`Status`:

* :attr:`Status.BATCH`: ``payload`` is the batch;
* :attr:`Status.FAILED`: ``payload`` is a :class:`~stoker.data._errors.WorkerFailure`;
* :attr:`Status.EXHAUSTED`: the worker's IterableDataset replica has ended (``payload`` None);
* :attr:`Status.RESET_DONE`: the answer to a :class:`Reset` (``task_id`` is :data:`NO_TASK`);
* :attr:`Status.ENDED`: left by a worker *thread* whose loop returned, so that the main
  process notices the end as it notices a dead process.

``meta`` (:class:`Meta`) carries the worker's busy time, whether an iterable replica's batch was
its last, the replica's ``state_dict()`` taken right after the batch (or the failure of that
call), and the ids of slabs the worker retired.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from stoker.data._errors import WorkerFailure

__all__ = [
    "BATCH",
    "ENDED",
    "EXHAUSTED",
    "FAILED",
    "NO_STATE",
    "NO_TASK",
    "RESET",
    "RESET_DONE",
    "STOP",
    "Command",
    "EpochSetup",
    "Meta",
    "NoState",
    "Reply",
    "Reset",
    "Status",
    "Task",
    "WorkerSetup",
]


class Status(enum.IntEnum):
    """What a :class:`Reply` answers with."""

    BATCH = 0
    FAILED = 1
    EXHAUSTED = 2
    RESET_DONE = 3
    ENDED = 4

    def __reduce_ex__(self, protocol: object) -> str:  # type: ignore[override]  # a global name
        """Pickle as the module-level name of the member (cheaper than calling the enum)."""
        return self.name


BATCH = Status.BATCH
FAILED = Status.FAILED
EXHAUSTED = Status.EXHAUSTED
RESET_DONE = Status.RESET_DONE
ENDED = Status.ENDED


class Command(enum.Enum):
    """A message to a worker that is not a task."""

    STOP = "stop"

    def __reduce_ex__(self, protocol: object) -> str:  # type: ignore[override]  # a global name
        """Pickle as the module-level name of the member."""
        return self.name


class Reset(NamedTuple):
    """Start a new epoch with the same worker (persistent workers); answered by RESET_DONE.

    ``shared_seed`` is the new epoch's seed shared by every worker, handed to
    :meth:`EpochSetup.prepare` (None when the loader has no seeded epoch setup).
    """

    shared_seed: int | None = None


RESET = Reset()
"""A :class:`Reset` without a shared seed."""

STOP = Command.STOP
"""End the worker loop (never answered). A process worker also stops when its pipe closes."""


class NoState:
    """The type of :data:`NO_STATE`, a sentinel that pickles as itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_STATE"

    def __reduce__(self) -> str:
        return "NO_STATE"


NO_STATE = NoState()
"""``Meta.worker_state`` when no state was taken (None is a state a dataset may return)."""

NO_TASK = -1
"""The ``task_id`` of replies that answer no task (RESET_DONE, ENDED)."""


class EpochSetup(Protocol):
    """How every copy of a dataset is made ready for an epoch (the torch door's datapipes).

    It is picklable and travels in :class:`WorkerSetup`. When :attr:`seeded`, the main process
    draws one *shared seed* per epoch from the loader's generator, the same for every copy.
    """

    @property
    def seeded(self) -> bool:
        """Whether each epoch draws a seed shared by every copy of the dataset."""

    def prepare(self, dataset: Any, shared_seed: int | None, copy_id: int, copies: int) -> Any:
        """Make ``dataset`` ready for the epoch; return the dataset to iterate.

        ``dataset`` is copy ``copy_id`` of ``copies``: a worker, or the only one without
        workers.
        """


class WorkerSetup(NamedTuple):
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
        epoch_setup: prepares the dataset for each epoch, before ``worker_init_fn`` in the
            first (see :class:`EpochSetup`); None leaves it as it is.
        shared_seed: the first epoch's shared seed for ``epoch_setup`` (later epochs' come
            with their :class:`Reset`).
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
    epoch_setup: EpochSetup | None = None
    shared_seed: int | None = None


class Task(NamedTuple):
    """One batch to load: the task's id, the index sampler's item, and slabs freed meanwhile.

    ``whole`` is 0 for a batch (fetch and collate). A positive ``whole`` makes the task a
    *share* of one batch of ``whole`` samples split over the workers: the worker gathers the
    samples of ``index`` (a slice of that batch's indices) and sends them uncollated; the main
    process collates the shares together.
    """

    task_id: int
    index: Any
    released: tuple[int, ...] = ()
    whole: int = 0


class Meta(NamedTuple):
    """What a worker reports with each reply besides the payload.

    Attributes:
        busy: seconds the worker spent on the task.
        ended: this batch was the iterable replica's last (known when it came out short).
        worker_state: the replica's ``state_dict()`` right after the batch, or
            :data:`NO_STATE` (the dataset is not iterable or has no ``state_dict``).
        state_error: the failure of that ``state_dict()`` call, if it failed.
        retired: ids of slabs the worker dropped; the main process unmaps them.
    """

    busy: float = 0.0
    ended: bool = False
    worker_state: Any = NO_STATE
    state_error: WorkerFailure | None = None
    retired: tuple[int, ...] = ()


class Reply(NamedTuple):
    """A worker's answer to one task or command (see the module docstring).

    A reply pickles flat, as one call of :func:`_rebuild_reply` with plain values: one global
    to look up per reply instead of four (the two classes, the status, the sentinel), which
    the main process would otherwise pay for every batch.
    """

    task_id: int
    status: Status
    payload: Any
    meta: Meta

    def __reduce__(self) -> tuple[Any, ...]:
        busy, ended, state, error, retired = self.meta
        taken = state is not NO_STATE
        values = (self.task_id, self.status.value, self.payload, busy, ended)
        return (_rebuild_reply, (*values, state if taken else None, taken, error, retired))


_STATUSES = tuple(Status)  # by value: the values are 0, 1, 2, ... in order


def _rebuild_reply(  # noqa: PLR0917 - the flat pickled form of a Reply
    task_id: int,
    status: int,
    payload: Any,
    busy: float,
    ended: bool,
    state: Any,
    taken: bool,
    error: WorkerFailure | None,
    retired: tuple[int, ...],
) -> Reply:
    """Rebuild a :class:`Reply` from its pickled form (see :meth:`Reply.__reduce__`)."""
    meta = Meta(busy, ended, state if taken else NO_STATE, error, retired)
    return Reply(task_id, _STATUSES[status], payload, meta)
