"""A merged ShardedIterableDataset state loaded on another world by ranks with a worker process.

Two ranks (with no workers or two thread workers) save, their states are merged, and three
ranks of one process worker each resume the rest: every sample comes once.
"""

from __future__ import annotations

import pytest
from data_elastic_helpers import Shards, check_exactly_once, take

from stoker.data import DataLoader, merge_states


def _flat(samples: list[list[int]]) -> list[int]:
    return [x for rank in samples for x in rank]


@pytest.mark.parametrize("workers", [0, 2])
def test_sharded_iterable_resumes_on_another_world_and_worker_count(workers: int) -> None:
    """ShardedIterableDataset: 2 ranks (0 or 2 thread workers) -> 3 ranks with 1 worker."""
    lengths = [4, 2, 5, 3, 1, 6, 2]
    universe = [s * 100 + j for s, n in enumerate(lengths) for j in range(n)]
    first, states = [], []
    for rank in range(2):
        loader = DataLoader(
            Shards(lengths, rank, 2), batch_size=2, num_workers=workers, worker_type="thread"
        )
        got, saved = take(loader, 2)
        first.append(got)
        states.append(saved)
    merged = merge_states(states)
    second = []
    for rank in range(3):
        loader = DataLoader(Shards(lengths, rank, 3), batch_size=2, num_workers=1)
        loader.load_state_dict(merged)
        second.append(take(loader, None)[0])
    check_exactly_once([_flat(first), _flat(second)], universe, extras=0)
