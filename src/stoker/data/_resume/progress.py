"""One loader epoch as the user sees it: the batches delivered and where each worker stands.

Every loader iterator counts, in an :class:`EpochProgress`, the batches it hands to the user;
the resume tracker (:mod:`stoker.data._resume.tracker`) creates one per epoch and saves from it,
and the worker iterator records an IterableDataset's per-worker states in it as batches are
delivered.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpochProgress"]


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
        worker_states: an IterableDataset's state per worker id, as of that worker's last
            batch handed to the user (or its end, once all its batches were handed over).
        last_worker: the worker whose batch was handed to the user last.
        exhausted: workers whose replica ended and whose batches were all handed over.
        states_failed: a worker's ``state_dict()`` failed, so ``worker_states`` is incomplete.
        resume: the per-worker resume point loaded from a state (``"worker_states"`` mode):
            ``{"workers": [state or None, ...], "next_worker": id, "exhausted": [ids]}``.
        resumed: batches of this epoch delivered before this iteration (from a loaded state).
        out_of_order: batches may be delivered out of the order the stream gave them; then
            ``mark`` and ``ahead`` say which were.
        mark: with ``out_of_order``, the stream's items ``[0, mark)`` of this iteration were
            all delivered.
        ahead: with ``out_of_order``, the items above ``mark`` delivered.
    """

    index: int
    yielded: int = 0
    started: bool = False
    finished: bool = False
    snapshot: Any = None
    skip: int = 0
    key: tuple[int, int] | None = None
    stream: Iterator[Any] | None = None
    worker_states: dict[int, Any] = field(default_factory=dict)
    last_worker: int | None = None
    exhausted: set[int] = field(default_factory=set)
    states_failed: bool = False
    resume: dict[str, Any] | None = None
    resumed: int = 0
    out_of_order: bool = False
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

    def items_delivered(self) -> tuple[int, list[int]]:
        """Return ``(n, ahead)``: this iteration's items ``[0, n)`` and ``ahead`` delivered."""
        if self.out_of_order:
            return self.mark, sorted(self.ahead)
        return self.yielded - self.resumed, []

    def resume_from(self, saved: dict[str, Any]) -> None:
        """Take a saved per-worker resume point as this epoch's starting position."""
        workers = list(saved["workers"])
        self.resume = saved
        self.worker_states = {w: state for w, state in enumerate(workers) if state is not None}
        self.exhausted = set(saved["exhausted"])
        self.last_worker = (int(saved["next_worker"]) - 1) % len(workers)
