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

import pytest
from data_torch_info_helpers import check_torch_get_worker_info_answers, expected_torch_answer
from data_workers_helpers import START_METHODS, SUPPORT

torch = pytest.importorskip("torch")
torch_data = pytest.importorskip("torch.utils.data")

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


HELPER = str(Path(SUPPORT) / "data_torch_info_helpers.py")


@pytest.mark.parametrize("kind", START_METHODS)
def test_torch_get_worker_info_answers_in_every_worker(kind: str) -> None:
    """In each worker, torch's get_worker_info() is a torch WorkerInfo equal to stoker's answer."""
    check_torch_get_worker_info_answers(kind)


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
    assert [row[1] for row in rows] == [expected_torch_answer(row[2]) for row in rows]
    assert {row[2][0] for row in rows} == {0, 1}
