"""One loader epoch as the user sees it: the batches delivered and where each worker stands.

Every loader iterator counts, in an :class:`EpochProgress`, the batches it hands to the user;
the resume tracker (:mod:`stoker.data._resume.tracker`) creates one per epoch and its resume
modes (:mod:`stoker.data._resume.mode`) save from it. Two concerns beside the counters have
their own records: where an IterableDataset's worker replicas stand (:class:`ReplicaStates`,
filled by the worker iterator as batches are delivered), and which batches of an iteration out
of order were delivered (:class:`DeliveryMarks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["DeliveryMarks", "EpochProgress", "ReplicaStates", "SavePoint"]


@dataclass
class ReplicaStates:
    """Where an IterableDataset's worker replicas stand, as of the batches handed to the user.

    Attributes:
        states: each worker's replica state, as of that worker's last batch handed to the
            user (or its end, once all its batches were handed over).
        last_worker: the worker whose batch was handed to the user last (any dataset: the
            round-robin of a resumed epoch starts after it).
        exhausted: workers whose replica ended and whose batches were all handed over.
        failed: a worker's ``state_dict()`` failed, so ``states`` is incomplete.
        resume: the per-worker resume point loaded from a state (``"worker_states"`` mode):
            ``{"workers": [state or None, ...], "next_worker": id, "exhausted": [ids]}``.
    """

    states: dict[int, Any] = field(default_factory=dict)
    last_worker: int | None = None
    exhausted: set[int] = field(default_factory=set)
    failed: bool = False
    resume: dict[str, Any] | None = None

    def resume_from(self, saved: dict[str, Any]) -> None:
        """Take a saved per-worker resume point as this epoch's starting position."""
        workers = list(saved["workers"])
        self.resume = saved
        self.states = {w: state for w, state in enumerate(workers) if state is not None}
        self.exhausted = set(saved["exhausted"])
        self.last_worker = (int(saved["next_worker"]) - 1) % len(workers)

    def complete(self, workers: int) -> list[Any] | None:
        """Every worker's state, in worker order, or None when one that reported is missing."""
        saved = [self.states.get(w) for w in range(workers)]
        if self.failed or any(s is None for w, s in enumerate(saved) if w in self.states):
            return None
        return saved


@dataclass
class DeliveryMarks:
    """Which items of an iteration out of order were delivered.

    Attributes:
        mark: the stream's items ``[0, mark)`` of this iteration were all delivered.
        ahead: the items above ``mark`` delivered.
    """

    mark: int = 0
    ahead: set[int] = field(default_factory=set)

    def deliver(self, item: int) -> None:
        """Record that the stream's item ``item`` (0 for this iteration's first) was delivered."""
        if item != self.mark:
            self.ahead.add(item)
            return
        mark, ahead = item + 1, self.ahead
        while ahead and mark in ahead:
            ahead.remove(mark)
            mark += 1
        self.mark = mark


@dataclass
class EpochProgress:
    """One loader epoch as the user sees it.

    Attributes:
        index: the loader's epoch number (0 for the first ``iter(loader)``).
        yielded: batches of this epoch handed to the user (skipped ones included).
        started: whether the index sampler has begun the epoch (its first item was taken).
        finished: whether the iterator reported the end of the epoch.
        snapshot: a custom sampler's ``state_dict()`` taken as the epoch opened (not for
            stoker's samplers, which describe the epoch when saving).
        skip: batches an iterable-dataset iterator still has to load and drop.
        key: ``(sample seed, epoch)`` for :func:`~stoker.data.sample_rng`.
        stream: the index stream of this epoch.
        resumed: batches of this epoch delivered before this iteration (from a loaded state).
        replicas: where the worker replicas stand (see :class:`ReplicaStates`).
        marks: set when batches may be delivered out of the order the stream gave them: which
            were (see :class:`DeliveryMarks`); None in order.
    """

    index: int
    yielded: int = 0
    started: bool = False
    finished: bool = False
    snapshot: Any = None
    skip: int = 0
    key: tuple[int, int] | None = None
    stream: Iterator[Any] | None = None
    resumed: int = 0
    replicas: ReplicaStates = field(default_factory=ReplicaStates)
    marks: DeliveryMarks | None = None

    def items_delivered(self) -> tuple[int, list[int]]:
        """Return ``(n, ahead)``: this iteration's items ``[0, n)`` and ``ahead`` delivered."""
        if self.marks is not None:
            return self.marks.mark, sorted(self.marks.ahead)
        return self.yielded - self.resumed, []


class SavePoint(NamedTuple):
    """Where a save finds the epoch: what a resume mode's ``save`` writes from.

    Attributes:
        progress: the epoch's progress (None before the loader's first epoch).
        begun: the epoch has begun (an item drawn or a batch counted) and is not over.
        finished: the epoch is over: the state describes the next one.
    """

    progress: EpochProgress | None
    begun: bool
    finished: bool
