"""Which task is where in a worker iterator's window, and the shares of a split first batch.

:class:`TaskBook` is the one record of the tasks sent to workers and not yet answered for good;
:class:`SplitBatch` holds the shares of an epoch's first batch until all are in. Neither talks
to a worker: :class:`~stoker.data._iter_workers.WorkerIter` sends and receives, and asks these.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from typing import Any

__all__ = ["SplitBatch", "TaskBook"]


class TaskBook:
    """The tasks out at the workers: which worker holds each, with its indices.

    The window invariant: a task is in the book from the moment it is sent until its batch is
    delivered, or its worker reports the replica exhausted instead; a worker's load is the
    number of tasks it holds; and the window counts *batches*: the tasks, less the shares of a
    split first batch beyond its first (share ids -1, -2, ...), so that a split batch counts
    once. The iterator sends a task only while :attr:`outstanding` is under
    ``prefetch_factor * num_workers``.
    """

    __slots__ = ("_extra_shares", "_load", "_tasks")

    def __init__(self, num_workers: int) -> None:
        """Start empty, for ``num_workers`` workers."""
        self._tasks: dict[int, tuple[int, Any]] = {}
        self._load = [0] * num_workers
        self._extra_shares = 0

    def add(self, task_id: int, worker_id: int, index: Any) -> None:
        """Record task ``task_id`` (indices ``index``) as sent to ``worker_id``.

        Raises:
            ValueError: when ``task_id`` is already out (a task is sent once).
        """
        if task_id in self._tasks:
            raise ValueError(f"task {task_id} is already out, at worker {self._tasks[task_id][0]}")
        self._tasks[task_id] = (worker_id, index)
        self._load[worker_id] += 1
        if task_id < 0:
            self._extra_shares += 1

    def pop(self, task_id: int) -> tuple[int, Any]:
        """Forget task ``task_id``; return its worker and indices (KeyError if not out)."""
        worker_id, index = self._tasks.pop(task_id)
        self._load[worker_id] -= 1
        if task_id < 0:
            self._extra_shares -= 1
        return worker_id, index

    def __contains__(self, task_id: object) -> bool:
        """Tell whether task ``task_id`` is out."""
        return task_id in self._tasks

    def __len__(self) -> int:
        """Return the number of tasks out (each share of a split batch counted)."""
        return len(self._tasks)

    @property
    def outstanding(self) -> int:
        """The batches the window holds: the tasks, a split batch counted once."""
        return len(self._tasks) - self._extra_shares

    def load(self, worker_id: int) -> int:
        """Return the number of tasks ``worker_id`` holds."""
        return self._load[worker_id]

    def holder(self, task_id: int) -> int:
        """Return the worker holding task ``task_id`` (KeyError if not out)."""
        return self._tasks[task_id][0]

    def holds_any(self, worker_id: int) -> bool:
        """Tell whether ``worker_id`` holds a task."""
        return self._load[worker_id] > 0

    def held_by(self, worker_id: int, answered: Container[int] = ()) -> list[tuple[int, Any]]:
        """The ``(batch id, indices)`` of the tasks ``worker_id`` holds, not in ``answered``.

        A share of a split first batch is reported as part of batch 0.
        """
        return [
            (max(task_id, 0), index)
            for task_id, (owner, index) in self._tasks.items()
            if owner == worker_id and task_id not in answered
        ]


Reply = tuple[Any, Any, Any]
"""A share's ``(status, payload, meta)``, as the iterator keeps replies."""


class SplitBatch:
    """The shares of an epoch's first batch, one per worker, until every one is in.

    Share ``k`` has task id ``-k`` (share 0 is task 0, the batch's own id). While shares are
    expected, :attr:`holds_window` says that the rest of the epoch's window waits for the
    batch: the iterator sends it once the batch is collated.
    """

    __slots__ = ("_replies", "holds_window")

    def __init__(self) -> None:
        """Expect no share."""
        self._replies: dict[int, Reply | None] = {}
        self.holds_window = False

    @staticmethod
    def shares(
        index: list[Any], first_worker: int, num_workers: int
    ) -> Iterator[tuple[int, int, list[Any]]]:
        """Yield ``(task id, worker id, indices)`` for each share of ``index``.

        Up to ``num_workers`` contiguous slices in order, share 0 to ``first_worker``, the next
        ones to the workers after it, round the ring.
        """
        parts = min(num_workers, len(index))
        whole = len(index)
        for part in range(parts):
            piece = index[part * whole // parts : (part + 1) * whole // parts]
            yield -part, (first_worker + part) % num_workers, piece

    def expect(self, task_ids: list[int]) -> None:
        """Wait for the shares ``task_ids`` (0, -1, ...); the window is held meanwhile."""
        self._replies = dict.fromkeys(task_ids)
        self.holds_window = bool(task_ids)

    def __contains__(self, task_id: object) -> bool:
        """Tell whether ``task_id`` is a share still expected or kept."""
        return task_id in self._replies

    def join(self, task_id: int, reply: Reply) -> list[Reply] | None:
        """Keep one share's reply; with every share in, return them in order and forget them."""
        self._replies[task_id] = reply
        replies = [self._replies[-part] for part in range(len(self._replies))]
        if any(kept is None for kept in replies):
            return None
        self._replies = {}
        return [kept for kept in replies if kept is not None]

    def release_window(self) -> bool:
        """Stop holding the window; say whether it was held."""
        held, self.holds_window = self.holds_window, False
        return held
