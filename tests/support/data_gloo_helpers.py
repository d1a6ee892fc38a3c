"""One rank of the sharding tests: run as ``python data_gloo_helpers.py MODE RANK WORLD PORT OUT``.

``MODE`` is ``torch`` (join a gloo process group on 127.0.0.1:PORT; DistributedSampler takes
rank and world size from it) or ``env`` (no torch: RANK and WORLD_SIZE come from the
environment). The rank writes, as JSON to ``OUT``: its DistributedSampler indices per epoch
(through a DataLoader, set_epoch each epoch) and the samples its 2 workers read from a sharded
IterableDataset, and whether torch was imported.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

import numpy as np
from data_resume_helpers import Augmented, Stream

from stoker.data import DataLoader, DistributedSampler

N = 29
STREAM = 37
EPOCHS = 3


def _epochs(sampler: DistributedSampler) -> list[list[int]]:
    loader = DataLoader(Augmented(N), batch_size=4, sampler=sampler, num_workers=1, timeout=30)
    out = []
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        out.append([int(i) for batch in loader for i in np.asarray(batch)[:, 0]])
    return out


def _stream(stream: Stream) -> list[int]:
    loader = DataLoader(stream, batch_size=3, num_workers=2, timeout=30)
    return [int(x) for batch in loader for x in batch]


def join_gloo(port: int, rank: int, world: int, seconds: float) -> Any:
    """Join a gloo process group on 127.0.0.1:``port``; return ``torch.distributed``."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=seconds),
    )
    return dist


def main(mode: str, rank: int, world: int, port: int, out: str) -> None:
    """Run one rank and write its observations to ``out``."""
    result: dict[str, Any] = {}
    if mode == "torch":
        dist = join_gloo(port, rank, world, seconds=30)
        sampler = DistributedSampler(Augmented(N), seed=5)
        result["epochs"] = _epochs(sampler)
        # the dataset captures rank and world size in the main process for its workers
        stream = Stream(STREAM, dist.get_rank(), dist.get_world_size())
        result["stream"] = [
            int(x) for b in DataLoader(stream, batch_size=3, num_workers=2) for x in b
        ]
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, result["epochs"][0])
        result["gathered_epoch0"] = gathered
        dist.destroy_process_group()
    else:
        sampler = DistributedSampler(Augmented(N), seed=5)
        result["epochs"] = _epochs(sampler)
        stream = Stream(STREAM)  # workers read RANK/WORLD_SIZE from the environment
        result["stream"] = [
            int(x) for b in DataLoader(stream, batch_size=3, num_workers=2) for x in b
        ]
    result["rank"] = sampler.rank
    result["world"] = sampler.num_replicas
    result["torch_imported"] = "torch" in sys.modules
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
