"""Datasets that ask torch's get_worker_info(), importable by spawn and forkserver workers.

This module imports no torch at the top: a worker that unpickles these datasets has torch only
if something else imported it, which is what the tests of a late torch import need.
:func:`check_torch_get_worker_info_answers` is a test body run with thread workers by the unit
tests and with process workers of each start method by the integration tests.
"""

from __future__ import annotations

import sys
from typing import Any

from stoker.data import Dataset, get_worker_info


def torch_answer() -> Any:
    """Import torch (a no-op where it is imported) and return its ``get_worker_info()``."""
    import torch.utils.data

    return torch.utils.data.get_worker_info()


def describe_answer(answer: Any) -> Any:
    """A picklable summary of torch's answer: None, or its fields and whether it is torch's type."""
    if answer is None:
        return None
    import torch.utils.data

    return {
        "id": answer.id,
        "num_workers": answer.num_workers,
        "seed": answer.seed,
        "dataset": type(answer.dataset).__name__,
        "is_torch_worker_info": isinstance(answer, torch.utils.data._utils.worker.WorkerInfo),
    }


class AsksTorch(Dataset[Any]):
    """Sample i: (i, torch's answer, stoker's (id, num_workers, seed), had torch, torch's seed).

    Each sample imports torch right before asking it, as datasets that import torch lazily do:
    in a worker that started without torch, the first sample is the one that imports it.
    """

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[int, Any, Any, bool, int]:
        had_torch = "torch" in sys.modules
        answer = describe_answer(torch_answer())
        ours = get_worker_info()
        mine = None if ours is None else (ours.id, ours.num_workers, ours.seed)
        import torch

        return index, answer, mine, had_torch, torch.initial_seed()


def expected_torch_answer(worker: tuple[int, int, int]) -> dict[str, Any]:
    """Torch's answer (summarised) in the worker whose stoker answer is ``worker``."""
    worker_id, num_workers, seed = worker
    return {
        "id": worker_id,
        "num_workers": num_workers,
        "seed": seed,
        "dataset": "AsksTorch",
        "is_torch_worker_info": True,
    }


def check_torch_get_worker_info_answers(kind: str) -> None:
    """In each worker, torch's get_worker_info() is a torch WorkerInfo equal to stoker's answer.

    Same id, num_workers and seed as stoker's get_worker_info(), the worker's dataset; every
    sample once; in the main process torch answers None before and after. Spawn and forkserver
    workers start without torch: the sample that imports it then asks, and gets the answer,
    and finds torch seeded with the worker's seed as torch's workers are. ``kind`` is a worker
    kind of ``data_workers_helpers.kind_kwargs``.
    """
    import torch.utils.data as torch_data
    from data_workers_helpers import kind_kwargs

    from stoker.data import DataLoader

    assert torch_data.get_worker_info() is None
    loader = DataLoader(
        AsksTorch(12), batch_size=2, num_workers=2, collate_fn=list, **kind_kwargs(kind)
    )
    rows = [row for batch in loader for row in batch]
    assert sorted(row[0] for row in rows) == list(range(12))
    assert [row[1] for row in rows] == [expected_torch_answer(row[2]) for row in rows]
    assert {row[2][0] for row in rows} == {0, 1}
    # spawn and forkserver workers start without torch: a sample imports it, then asks
    started_without_torch = kind in ("spawn", "forkserver")
    assert any(not row[3] for row in rows) == started_without_torch
    if kind != "thread":  # a process worker's torch is seeded with its seed, however late it came
        assert [row[4] for row in rows] == [row[2][2] for row in rows]
    assert torch_data.get_worker_info() is None


def main() -> None:
    """Entry point for a fresh interpreter whose main process imports no torch itself.

    Reads AsksTorch(8) with two thread workers; writes the rows and torch's presence as JSON.
    """
    import json

    from stoker.data import DataLoader

    loader = DataLoader(
        AsksTorch(8), batch_size=1, num_workers=2, collate_fn=list, worker_type="thread"
    )
    rows = [row for batch in loader for row in batch]
    sys.stdout.write(json.dumps({"rows": rows, "torch_in_main": "torch" in sys.modules}))


if __name__ == "__main__":
    main()
