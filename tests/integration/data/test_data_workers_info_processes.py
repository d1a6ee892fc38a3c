"""A worker's identity in worker processes: torch's get_worker_info() in fork, spawn, forkserver.

Process workers of each start method answer torch's get_worker_info() as stoker's does; and in
a fresh interpreter whose main process never imported torch, a worker thread's sample that
imports torch first gets its answer at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from data_torch_info_helpers import AsksTorch
from data_workers_helpers import START_METHODS, SUPPORT, kind_kwargs

from stoker.data import DataLoader

torch = pytest.importorskip("torch")
torch_data = pytest.importorskip("torch.utils.data")

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


HELPER = str(Path(SUPPORT) / "data_torch_info_helpers.py")


@pytest.mark.parametrize("kind", START_METHODS)
def test_torch_get_worker_info_answers_in_every_worker(kind: str) -> None:
    """In each worker, torch's get_worker_info() is a torch WorkerInfo equal to stoker's answer.

    Same id, num_workers and seed as stoker's get_worker_info(), the worker's dataset; every
    sample once; in the main process torch answers None before and after. Spawn and forkserver
    workers start without torch: the sample that imports it then asks, and gets the answer,
    and finds torch seeded with the worker's seed as torch's workers are.
    """
    assert torch_data.get_worker_info() is None
    loader = DataLoader(
        AsksTorch(12), batch_size=2, num_workers=2, collate_fn=list, **kind_kwargs(kind)
    )
    rows = [row for batch in loader for row in batch]
    assert sorted(row[0] for row in rows) == list(range(12))
    assert [row[1] for row in rows] == [_expected(row[2]) for row in rows]
    assert {row[2][0] for row in rows} == {0, 1}
    # spawn and forkserver workers start without torch: a sample imports it, then asks
    started_without_torch = kind in ("spawn", "forkserver")
    assert any(not row[3] for row in rows) == started_without_torch
    if kind != "thread":  # a process worker's torch is seeded with its seed, however late it came
        assert [row[4] for row in rows] == [row[2][2] for row in rows]
    assert torch_data.get_worker_info() is None


def _expected(worker: tuple[int, int, int]) -> dict[str, Any]:
    """Torch's answer (summarised) in the worker whose stoker answer is ``worker``."""
    worker_id, num_workers, seed = worker
    return {
        "id": worker_id,
        "num_workers": num_workers,
        "seed": seed,
        "dataset": "AsksTorch",
        "is_torch_worker_info": True,
    }


def test_torch_imported_first_by_a_worker_thread_answers_at_once() -> None:
    """Torch first imported by a worker thread's sample, which then asks it, answers at once.

    In a fresh interpreter whose main process had not imported torch: no sample gets None.
    (Spawn and forkserver workers start without torch: the test above covers them.)
    """
    done = subprocess.run(
        [sys.executable, HELPER], capture_output=True, text=True, timeout=90, check=True
    )
    rows = json.loads(done.stdout)["rows"]
    assert sorted(row[0] for row in rows) == list(range(8))
    assert any(not row[3] for row in rows), "torch was imported before any sample"
    assert [row[1] for row in rows] == [_expected(row[2]) for row in rows]
    assert {row[2][0] for row in rows} == {0, 1}
