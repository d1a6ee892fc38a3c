"""Elastic resume scenarios: loaders of one rank, the exactly-once check, and a gloo rank process.

Run as a script, ``python data_elastic_helpers.py SCENARIO RANK PORTS OUT``, it is one rank of a
scenario (:data:`SCENARIOS`): it joins a gloo group of the first phase's world on 127.0.0.1,
takes some batches of epoch 0, saves its loader state, gathers every rank's state through the
group, merges them, and for each later phase joins a new group of that phase's world (the ranks
beyond it wait), loads the merged state, takes (or finishes) batches and saves again. Rank 0
writes every phase's deliveries, by rank, and the epoch after the last phase (resumed and
fresh) as JSON to ``OUT``.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from data_gloo_helpers import join_gloo

from stoker.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    ShardedIterableDataset,
    merge_states,
)


class Indexed(Dataset[int]):
    """Sample i is i; multiples of 5 come ``delay`` s late (so batches arrive out of order)."""

    def __init__(self, n: int, delay: float = 0.0) -> None:
        self.n = n
        self.delay = delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if self.delay and index % 5 == 0:
            time.sleep(self.delay)
        return index


class Shards(ShardedIterableDataset[int]):
    """Shard s holds ``s * 100 + j`` for j below ``lengths[s]``."""

    def __init__(self, lengths: list[int], rank: int | None = None, world: int | None = None):
        super().__init__(list(range(len(lengths))), rank, world)
        self.lengths = lengths

    def read_shard(self, shard: Any, start: int) -> Iterator[int]:
        """Yield the shard's samples from ``start``."""
        for j in range(start, self.lengths[shard]):
            yield shard * 100 + j


def rank_loader(spec: dict[str, Any], world: int | None, rank: int | None) -> DataLoader:
    """The loader of one rank for a scenario ``spec`` (ranks from the group when None)."""
    if spec.get("shards"):
        return DataLoader(
            Shards(spec["shards"], rank, world),
            batch_size=spec["batch_size"],
            num_workers=spec["workers"],
            timeout=30 if spec["workers"] else 0,
        )
    in_order = spec.get("in_order", True)
    dataset = Indexed(spec["length"], delay=spec.get("delay", 0.0 if in_order else 0.02))
    sampler = DistributedSampler(
        dataset,
        num_replicas=world,
        rank=rank,
        seed=spec.get("seed", 7),
        shuffle=spec.get("shuffle", True),
        drop_last=spec.get("drop_last", False),
    )
    workers = spec["workers"]
    return DataLoader(
        dataset,
        batch_size=spec["batch_size"],
        sampler=sampler,
        num_workers=workers,
        in_order=in_order,
        drop_last=spec.get("batch_drop_last", False),
        timeout=30 if workers else 0,
        worker_type=spec.get("worker_type", "process"),
    )


def set_epoch(loader: DataLoader, epoch: int) -> None:
    """Call the sampler's set_epoch, as a training loop does (iterable datasets have none)."""
    if isinstance(loader.sampler, DistributedSampler):
        loader.sampler.set_epoch(epoch)


def take(loader: DataLoader, count: int | None, epoch: int = 0) -> tuple[list[int], dict[str, Any]]:
    """Take ``count`` batches of ``epoch`` (None: to its end); return the samples and the state."""
    set_epoch(loader, epoch)
    samples: list[int] = []
    samples_per_batch: list[int] = []
    iterator = iter(loader)
    while count is None or len(samples_per_batch) < count:
        batch = next(iterator, None)
        if batch is None:
            break
        samples_per_batch.append(len(np.asarray(batch).reshape(-1)))
        samples.extend(int(x) for x in np.asarray(batch).reshape(-1))
    state = json.loads(json.dumps(loader.state_dict()))
    del iterator
    return samples, state


def check_exactly_once(
    phases: list[list[int]], universe: list[int], extras: int, dropped: int = 0
) -> None:
    """Every sample of ``universe`` was delivered once, but ``extras`` repeats and ``dropped``.

    ``phases`` lists each phase's deliveries (all ranks). Nothing outside ``universe`` is
    delivered; with ``extras`` 0 nothing is repeated; exactly ``dropped`` samples are missing.
    """
    delivered = collections.Counter(x for phase in phases for x in phase)
    assert set(delivered) <= set(universe), "only samples of the epoch"
    missing = [x for x in universe if x not in delivered]
    assert len(missing) == dropped, f"missing {missing}, expected {dropped} dropped"
    repeats = sum(count - 1 for count in delivered.values())
    assert repeats == extras, f"{repeats} repeats, expected {extras} (padding)"


def check_once_but_padding(
    phases: list[list[int]], length: int, worlds: list[int], drop_last: bool, batch_cut: int = 0
) -> None:
    """Every sample of ``range(length)`` delivered once over ``phases``, but padding or cuts.

    Each world that splits the epoch (the first, and each one resuming a merged state) pads
    its part by repeating fewer than one row of its ranks, or with ``drop_last`` cuts fewer;
    a loader with ``drop_last`` also drops fewer than ``batch_cut`` samples at the end of each
    rank's part in each phase; nothing else may repeat or be missing.
    """
    delivered = collections.Counter(x for phase in phases for x in phase)
    assert set(delivered) <= set(range(length)), "only samples of the epoch"
    missing = [x for x in range(length) if x not in delivered]
    repeats = sum(count - 1 for count in delivered.values())
    rows = sum(world - 1 for world in worlds)
    tails = sum(world * max(0, batch_cut - 1) for world in worlds)
    if drop_last:
        assert repeats == 0, f"{repeats} repeats with drop_last: {delivered}"
        assert len(missing) <= rows + tails, f"missing {missing}: more than cut by {worlds}"
    else:
        assert len(missing) <= tails, f"missing {missing}"
        assert repeats <= rows, f"{repeats} repeats: more than {rows} padded by {worlds}"


# Each scenario: the loader spec and its phases: (world, batches per rank or None to finish;
# a list gives each rank its own count).
SCENARIOS: dict[str, dict[str, Any]] = {
    "shuffled": {
        "spec": {"length": 29, "batch_size": 2, "workers": 2, "later_workers": 1},
        "phases": [(4, [2, 3, 2, 1]), (2, None), (3, None), (1, None)],
        "branches": True,  # each later phase resumes the first phase's merged state
    },
    "unordered-drop-last": {
        "spec": {"length": 31, "batch_size": 2, "workers": 2, "in_order": False, "drop_last": True},
        "phases": [(4, 2), (3, 1), (2, None)],
        "branches": False,
    },
    "chain": {
        "spec": {"length": 23, "batch_size": 3, "workers": 2, "later_workers": 0},
        "phases": [(4, 1), (2, [2, 1]), (3, None)],
        "branches": False,
    },
    "sharded": {
        "spec": {
            "shards": [5, 3, 7, 1, 4, 6, 2, 5, 3, 4, 6, 2],
            "batch_size": 2,
            "workers": 2,
            "later_workers": 1,
        },
        "phases": [(4, 2), (3, None)],
        "branches": False,
    },
}


def _gather(dist: Any, value: Any, world: int) -> list[Any]:
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, value)
    return gathered


def _count(phase_take: Any, rank: int) -> int | None:
    return phase_take[rank] if isinstance(phase_take, list) else phase_take


def _publish(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` at once (a rename), for ranks outside the group."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value), encoding="utf-8")
    os.replace(partial, path)


def _wait_for(path: Path) -> Any:
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} was not written within 60 s")
        time.sleep(0.02)
    return json.loads(path.read_text(encoding="utf-8"))


def main(name: str, rank: int, ports: list[int], out: str) -> None:
    """Run one rank of scenario ``name`` through all its phases."""
    scenario = SCENARIOS[name]
    spec, phases = scenario["spec"], scenario["phases"]
    records = []
    for number, (world, count) in enumerate(phases):
        if rank >= world:
            continue
        dist = join_gloo(ports[number], rank, world, seconds=60)
        if number:  # a later phase may run with another number of workers
            spec = dict(spec, workers=scenario["spec"].get("later_workers", spec["workers"]))
        loader = rank_loader(spec, None, None)  # rank and world size from the process group
        if number:
            source = 0 if scenario["branches"] else number - 1
            loader.load_state_dict(_wait_for(Path(f"{out}.merged{source}")))
        samples, state = take(loader, _count(count, rank))
        record: dict[str, Any] = {"world": world, "samples": _gather(dist, samples, world)}
        if count is None:  # the epoch is done: the next one must be a fresh run's
            resumed, _ = take(loader, None, epoch=1)
            fresh, _ = take(rank_loader(spec, world, rank), None, epoch=1)
            record["next"] = _gather(dist, [resumed, fresh], world)
        else:  # the states travel through the group; each rank could merge them
            merged = merge_states(_gather(dist, state, world))
            if rank == 0:
                _publish(Path(f"{out}.merged{number}"), merged)
        records.append(record)
        dist.destroy_process_group()
    if rank == 0:
        _publish(Path(out), records)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")], sys.argv[4])
