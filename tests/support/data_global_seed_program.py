"""A seeded program run by the global-seed tests in a fresh interpreter each time.

``python data_global_seed_program.py numpy|torch SEED WORKERS`` seeds the global generator the
way a NumPy program (``np.random.seed``) or a torch program (``torch.manual_seed``) does, then
draws with ``generator=None`` everywhere: a shuffled loader (its batches and the workers'
seeds), a SubsetRandomSampler, a WeightedRandomSampler and random_split. It prints what it saw
as JSON, and whether torch was imported.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from stoker.data import (
    DataLoader,
    Dataset,
    SubsetRandomSampler,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


class Seeds(Dataset[Any]):
    """Sample ``i`` is ``(i, the seed of the worker that loaded it)``."""

    def __len__(self) -> int:
        return 12

    def __getitem__(self, index: int) -> tuple[int, int]:
        info = get_worker_info()
        return index, -1 if info is None else info.seed


def main(kind: str, seed: int, workers: int) -> None:
    """Seed the global generator of ``kind`` and print every draw made with generator=None."""
    if kind == "torch":
        import torch

        torch.manual_seed(seed)
    else:
        np.random.seed(seed)
    loader = DataLoader(Seeds(), batch_size=4, shuffle=True, num_workers=workers)
    batches = [[batch[0].tolist(), batch[1].tolist()] for batch in loader]
    seen = {
        "batches": batches,
        "subset": list(SubsetRandomSampler(list(range(10, 20)))),
        "weighted": list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 6)),
        "split": [list(part.indices) for part in random_split(range(8), [0.5, 0.5])],
        "torch_imported": "torch" in sys.modules,
    }
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
