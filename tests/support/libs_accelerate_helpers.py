"""accelerate's loaders over torch's DataLoader and over stoker's: the runs the tests compare.

A *run* builds a loader of a *door* (``"torch"``: torch's DataLoader with accelerate as it is,
the reference; ``"stoker.torch.data"``: the door's DataLoader with accelerate under
``patch_accelerate()``), prepares it with an ``Accelerator(cpu=True)`` and records the sample ids
of every batch of :data:`EPOCHS` epochs, drawing from torch's global generator after preparing
and after each epoch as model initialisation and dropout would. A *case* names the dataset and
accelerate's path: ``map`` (a shuffled map-style dataset: ``BatchSamplerShard`` over several
processes), ``iterable`` (an IterableDataset each process reads whole: ``IterableDatasetShard``)
and ``dispatch`` (an IterableDataset read by process 0 only, whose batches accelerate splits
and broadcasts: ``DataLoaderDispatcher``).

Run as ``python libs_accelerate_helpers.py OUT_DIR`` in each of two processes with the
environment a launcher sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``), it makes every run of :data:`RANK_RUNS` and writes
``OUT_DIR/rank{R}.json``: ``{"door/case/setting": run}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import torch
from libs_loaders import make_loader

N = 24
"""Samples in each dataset; sample i is (a float32 tensor filled with i, the int i)."""
BATCH = 3
EPOCHS = 2
CASES = {"map": None, "iterable": False, "dispatch": None}
"""Each case's ``dispatch_batches`` (None: accelerate's default for the dataset)."""


class Ids(torch.utils.data.Dataset[Any]):
    """Sample i: (a float32 tensor of 2 values filled with i, the int i)."""

    def __len__(self) -> int:
        return N

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.full((2,), float(index)), index


class Stream(torch.utils.data.IterableDataset[Any]):
    """The samples of :class:`Ids` in order, split over the loader's workers by torch's API."""

    def __iter__(self) -> Iterator[tuple[torch.Tensor, int]]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for index in range(worker, N, workers):
            yield torch.full((2,), float(index)), index


def patched(door: str) -> contextlib.AbstractContextManager[Any]:
    """Accelerate as the door needs it: patched for stoker's, as it is for torch's."""
    if door == "torch":
        return contextlib.nullcontext()
    from stoker.torch.data import patch_accelerate

    return patch_accelerate()


def accelerator(dispatch: bool | None = None, **config: Any) -> Any:
    """An ``Accelerator(cpu=True)`` with this dataloader configuration."""
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration

    return Accelerator(
        cpu=True, dataloader_config=DataLoaderConfiguration(dispatch_batches=dispatch, **config)
    )


def build(door: str, case: str, setting: str) -> Any:
    """The case's loader of ``door`` with the workers of ``setting`` (seeded: torch's seed 0)."""
    torch.manual_seed(0)
    if case == "map":
        return make_loader(door, setting, Ids(), batch_size=BATCH, shuffle=True)
    return make_loader(door, setting, Stream(), batch_size=BATCH)


def ids(batches: Any) -> list[list[int]]:
    """The sample ids of each batch, in order."""
    return [[int(i) for i in batch[1]] for batch in batches]


def epochs(prepared: Any, count: int = EPOCHS) -> list[list[list[int]]]:
    """``count`` epochs of ``prepared``, drawing from torch's global generator around each."""
    out = []
    for _ in range(count):
        torch.rand(1)  # a model's initialisation or dropout between epochs
        out.append(ids(prepared))
    return out


def engine(prepared: Any) -> dict[str, Any]:
    """What ran behind an accelerate loader: its base loader's class and its counters."""
    base = prepared.base_dataloader
    cls = type(base)
    stats = base.stats() if hasattr(base, "stats") else None
    return {
        "base": f"{cls.__module__}.{cls.__qualname__}",
        "worker_type": getattr(base, "worker_type", None),
        "served": None if stats is None else stats["batches_served"],
    }


def run(door: str, case: str, setting: str) -> dict[str, Any]:
    """Prepare the case's loader with accelerate and iterate it; what it gave and what ran."""
    with patched(door):
        prepared = accelerator(CASES[case]).prepare(build(door, case, setting))
        result = {"epochs": epochs(prepared), "wrapper": type(prepared).__qualname__}
        result.update(engine(prepared))
        if door != "torch" and case == "dispatch":
            result["state_error"] = _state_error(prepared)
    return result


def _state_error(prepared: Any) -> str | None:
    """The error a dispatched loader's ``state_dict()`` raises (None when it gives a state)."""
    try:
        prepared.state_dict()
    except RuntimeError as err:
        return str(err)
    return None


RANK_RUNS = [("torch", case, "2-process") for case in CASES] + [
    ("stoker.torch.data", case, setting) for case in CASES for setting in ("2-process", "2-thread")
]
"""The ``(door, case, setting)`` runs each of the two processes makes."""


def main(out_dir: str) -> None:
    """Every run of :data:`RANK_RUNS` in this process (see the module docstring)."""
    results = {"/".join(key): run(*key) for key in RANK_RUNS}
    rank = int(os.environ["RANK"])
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w", encoding="utf-8") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main(sys.argv[1])
