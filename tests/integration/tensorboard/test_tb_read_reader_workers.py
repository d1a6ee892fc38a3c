"""Reader over log directories read by forked worker processes, as a read here reads them.

Runs read by two workers give the points, positions and warnings a read in this process gives;
an event file or run removed after the listing, or a file removed while it is read, is a
warning while workers read too.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_events import check_removed_after_listing, check_removed_while_read

from stoker.tensorboard import Reader, SummaryWriter

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_runs_read_by_worker_processes_equal_runs_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six runs read by two forked workers give what a read in this process gives.

    Six runs read by two forked workers give the same points, positions and warnings (a
    damaged record in one run, raised again here) as runs read in this process, and both
    readers go on reading what is appended afterwards alike.
    """
    from stoker.tensorboard._read import parallel
    from stoker.tensorboard._read.run import RunData

    rng = np.random.default_rng(2)
    for index in range(6):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            for step in range(400):
                writer.add_scalar("loss", rng.normal(), step)
                writer.add_scalar("lr", 1 / (step + 1), step)
            writer.add_histogram("w", rng.normal(size=50), 0)
            writer.add_text("note", f"run {index}", 0)
    damaged = sorted((tmp_path / "run3").iterdir())[0]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    original = RunData.load

    def load(self: RunData) -> int:
        self.loaded_by = os.getpid()  # type: ignore[attr-defined]
        return original(self)

    monkeypatch.setattr(RunData, "load", load)
    # Threads other tests left behind would make the reader refuse to fork (tested below).
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)

    def read(workers: int) -> tuple[Reader, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reader = Reader(tmp_path, workers=workers)
        return reader, [str(item.message) for item in caught]

    here, here_warnings = read(1)
    there, there_warnings = read(2)
    assert there_warnings == here_warnings
    assert len(here_warnings) == 1
    assert "corrupt record" in here_warnings[0]
    pids = {run.loaded_by for run in there._runs.values()}  # type: ignore[attr-defined]
    assert pids  # which worker took which runs varies
    assert os.getpid() not in pids

    def points(reader: Reader) -> list[Any]:
        out: list[Any] = [reader.positions()]
        for run in reader.runs:
            for tag in ("loss", "lr"):
                out.append([column.tolist() for column in reader.scalars(tag, run)])
            out.append([(h.step, h.bucket.tolist()) for h in reader.histograms("w", run)])
            out.append([t.text for t in reader.text("note", run)])
        return out

    assert points(there) == points(here)
    for index in (0, 5):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            writer.add_scalar("loss", 7.0, 1000)
    assert here.reload() == there.reload() > 0
    assert points(there) == points(here)


@pytest.mark.parametrize("workers", [2])
@pytest.mark.parametrize("what", ["file", "run"])
def test_a_file_or_run_removed_after_listing_is_a_warning_and_the_rest_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, what: str
) -> None:
    """An event file or run removed between listing and reading is one warning per file."""
    check_removed_after_listing(tmp_path, monkeypatch, workers, what)


@pytest.mark.parametrize("workers", [2])
def test_a_file_removed_while_it_is_read_keeps_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A file removed after its first piece was read keeps that piece's points, with a warning."""
    check_removed_while_read(tmp_path, monkeypatch, workers)
