"""Worker start-up with spawn and forkserver: one pickle for all workers, or one per worker.

``python benchmarks/worker_start_bench.py [--mib 64] [--workers 2] [--repeats 3]`` times
``iter(loader)`` plus the first batch (the workers' start-up) for a dataset holding one array
of ``--mib`` MiB:

* ``numpy``: a NumPy array; stoker pickles the setup once and every worker reads that pickle;
* ``numpy + Lock``: the same array and a ``multiprocessing`` Lock of the loader's context, which
  pickles only while a process starts, so each worker gets its own pickle through its
  ``Process`` arguments (the start-up cost of the per-worker path);
* ``tensor``: a torch tensor (shared through a file descriptor each worker receives once: one
  small pickle per worker, the storage itself is not copied), with stoker and with torch's
  DataLoader.

Each row is the median of the repeats, each loader built fresh in this process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from typing import Any

import numpy as np


class Holder:
    """A map-style dataset over one big array (and, optionally, a Lock)."""

    def __init__(self, data: Any, lock: Any = None) -> None:
        """Hold ``data`` and ``lock``."""
        self.data = data
        self.lock = lock

    def __len__(self) -> int:
        """Number of samples: always 64."""
        return 64

    def __getitem__(self, index: int) -> int:
        """Sample ``index``: the index itself."""
        return index


def _time_first_batch(make: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        loader = make()
        started = time.perf_counter()
        iterator = iter(loader)
        next(iterator)
        times.append(time.perf_counter() - started)
        del iterator
    return statistics.median(times)


def main() -> None:
    """Print one table row per dataset kind and start method."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch
    import torch.utils.data as torch_data

    import stoker.data as stoker_data

    array = np.zeros(args.mib << 20, dtype=np.uint8)
    print(f"| dataset ({args.mib} MiB) | start method | loader | first batch, s |")
    print("|---|---|---|---|")
    for method in ("spawn", "forkserver"):
        context = multiprocessing.get_context(method)
        lock = context.Lock()
        cases = [
            ("numpy", "stoker (one pickle)", stoker_data.DataLoader, Holder(array)),
            ("numpy + Lock", "stoker (a pickle per worker)", stoker_data.DataLoader,
             Holder(array, lock)),
            ("tensor", "stoker (a pickle per worker)", stoker_data.DataLoader,
             Holder(torch.from_numpy(array.copy()))),
            ("tensor", "torch", torch_data.DataLoader, Holder(torch.from_numpy(array.copy()))),
        ]  # fmt: skip
        for kind, name, loader_class, dataset in cases:

            def make(cls: Any = loader_class, data: Any = dataset, ctx: Any = context) -> Any:
                return cls(data, batch_size=8, num_workers=args.workers,
                           multiprocessing_context=ctx)  # fmt: skip

            seconds = _time_first_batch(make, args.repeats)
            print(f"| {kind} | {method} | {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
