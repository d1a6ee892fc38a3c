"""Datasets and loader recipes for the resume and sharding tests; also a subprocess entry point.

Run as a script: ``python data_resume_helpers.py RECIPE NUM_WORKERS WORKER_TYPE PERSISTENT
STATE_IN STATE_OUT TAKE EPOCHS``: build the recipe's loader, load ``STATE_IN`` (unless "-"),
take ``TAKE`` batches (``-1``: run ``EPOCHS`` whole epochs), save the state to ``STATE_OUT``
(unless "-") and print the batches taken as JSON.
"""

from __future__ import annotations

import inspect
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from stoker.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    Sampler,
    WeightedRandomSampler,
    get_shard_info,
    get_worker_info,
    sample_rng,
)

N = 29

HAS_WORKER_TYPE = "worker_type" in inspect.signature(DataLoader).parameters
WORKER_TYPES = ["process", "thread"] if HAS_WORKER_TYPE else ["process"]


class Augmented(Dataset[Any]):
    """Sample i: (i, a random draw from sample_rng(i)), so augmentation shows in every batch."""

    def __init__(self, n: int = N, delay: Callable[[int], float] | None = None) -> None:
        self.n = n
        self.delay = delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> np.ndarray[Any, Any]:
        if self.delay is not None:
            time.sleep(self.delay(index))
        noise = sample_rng(index).integers(0, 1 << 30)
        return np.array([index, noise], dtype=np.int64)


def slow_multiples_of_five(index: int) -> float:
    """A delay that makes batches holding a multiple of 5 arrive late (reordering them)."""
    return 0.03 if index % 5 == 0 else 0.0


class ReversedBatches(Sampler[list[int]]):
    """A custom batch sampler without state: fixed batches of 4, reversed order."""

    def __iter__(self) -> Iterator[list[int]]:
        order = list(range(N - 1, -1, -1))
        for start in range(0, N, 4):
            yield order[start : start + 4]

    def __len__(self) -> int:
        return (N + 3) // 4


class Stream(IterableDataset[Any]):
    """Yields 0..n-1, sharded by (rank, worker) with get_shard_info."""

    def __init__(self, n: int, rank: int | None = None, world_size: int | None = None) -> None:
        self.n = n
        self.rank = rank
        self.world_size = world_size

    def __iter__(self) -> Iterator[int]:
        shard = get_shard_info(self.rank, self.world_size)
        return itertools.islice(iter(range(self.n)), shard.index, None, shard.count)


class CountingShards(IterableDataset[Any]):
    """Worker w yields ``w * 100 + j`` for j below ``lengths[w]``, with its position as state.

    The shards have different lengths, so one worker runs out before the other. The position
    goes back to 0 when a shard ends (so the next epoch starts afresh): a finished worker's
    final state would start it again, which is why a resume must skip exhausted workers.
    """

    def __init__(self, lengths: tuple[int, ...] = (14, 5), log: list[int] | None = None) -> None:
        self.lengths = lengths
        self.position = 0
        self.log = log  # thread workers share this list: it shows every sample produced

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        worker = 0 if info is None else info.id
        while self.position < self.lengths[worker]:
            self.position += 1
            value = worker * 100 + self.position - 1
            if self.log is not None:
                self.log.append(value)
            yield value
        self.position = 0

    def state_dict(self) -> dict[str, int]:
        """The position in this worker's shard."""
        return {"position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Continue from a saved position."""
        self.position = state["position"]


def _torch_generator() -> Any:
    import torch

    return torch.Generator().manual_seed(12)


RECIPES: dict[str, Callable[[dict[str, Any]], DataLoader]] = {
    "shuffle": lambda kw: DataLoader(Augmented(), batch_size=4, shuffle=True, generator=3, **kw),
    "torch-shuffle": lambda kw: DataLoader(
        Augmented(), batch_size=4, shuffle=True, generator=_torch_generator(), **kw
    ),
    "weighted": lambda kw: DataLoader(
        Augmented(),
        batch_size=3,
        sampler=WeightedRandomSampler([1.0 + i % 3 for i in range(N)], 25, generator=6),
        generator=1,
        **kw,
    ),
    "distributed": lambda kw: DataLoader(
        Augmented(),
        batch_size=2,
        sampler=DistributedSampler(Augmented(), num_replicas=2, rank=1, seed=8),
        generator=2,
        **kw,
    ),
    "custom-batch-sampler": lambda kw: DataLoader(
        Augmented(), batch_sampler=ReversedBatches(), generator=4, **kw
    ),
    "iterable": lambda kw: DataLoader(Stream(40), batch_size=3, generator=5, **kw),
    "iterable-state": lambda kw: DataLoader(CountingShards(), batch_size=3, generator=5, **kw),
}


def loader_kwargs(num_workers: int, worker_type: str, persistent: bool) -> dict[str, Any]:
    """The DataLoader keyword arguments for one worker configuration."""
    kwargs: dict[str, Any] = {"num_workers": num_workers}
    if num_workers:
        kwargs["persistent_workers"] = persistent
        kwargs["timeout"] = 30
        if HAS_WORKER_TYPE:
            kwargs["worker_type"] = worker_type
    return kwargs


def take(loader: DataLoader, count: int, epochs: int) -> list[Any]:
    """Take ``count`` batches across epochs (``-1``: ``epochs`` whole epochs) as lists."""
    out: list[Any] = []
    if count < 0:
        for _ in range(epochs):
            out.extend(np.asarray(batch).tolist() for batch in loader)
        return out
    iterator = iter(loader)
    while len(out) < count:
        try:
            out.append(np.asarray(next(iterator)).tolist())
        except StopIteration:
            iterator = iter(loader)
    return out


def main(argv: list[str]) -> None:
    """The subprocess entry point (see the module docstring)."""
    recipe, workers, worker_type, persistent, state_in, state_out, count, epochs = argv
    loader = RECIPES[recipe](loader_kwargs(int(workers), worker_type, persistent == "1"))
    if state_in != "-":
        with open(state_in, encoding="utf-8") as handle:
            loader.load_state_dict(json.load(handle))
    batches = take(loader, int(count), int(epochs))
    if state_out != "-":
        with open(state_out, "w", encoding="utf-8") as handle:
            json.dump(loader.state_dict(), handle)
    loader.close()
    sys.stdout.write(json.dumps(batches))


if __name__ == "__main__":
    main(sys.argv[1:])


def slow_after_four(index: int) -> float:
    """A delay that keeps the workers busy once the first two batches (of 2) are loaded."""
    return 0.3 if index >= 4 else 0.0
